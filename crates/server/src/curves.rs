//! A job's scalar curves, as the dashboard's Curves page draws them: read with
//! [`trainctl_events`] from the places [`trainctl_local::claims::event_roots`] names, kept
//! between refreshes so that a followed curve reads only what was appended, and downsampled
//! here (never more than a chart can show goes to the browser).
//!
//! The curves come from the first of those places that has a scalar, as the CLI's progress
//! does: the job's own `TRAINCTL_TENSORBOARD_DIR`, else `<claim>/<job name>`.

use std::path::PathBuf;

use serde::Serialize;
use trainctl_events::{Places, downsample};
use trainctl_local::runner::TENSORBOARD_DIR_ENV;

/// The most points a series may be asked for, and how many when not asked.
pub const MAX_POINTS: usize = 20_000;
/// How many points a series has when the request does not say.
pub const DEFAULT_POINTS: usize = 2_000;

/// The event files of one job, read so far.
#[derive(Debug, Default)]
pub struct Curves {
    places: Places,
}

/// What the API answers of a job's curves.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScalarsView {
    /// Where event files were looked for, in order.
    pub roots: Vec<PathBuf>,
    /// Each series of the first place that has any, by run then tag.
    pub series: Vec<SeriesView>,
    /// What could not be read, each with its place.
    pub problems: Vec<String>,
    /// The environment variable that names the job's own directory for event files.
    pub env: &'static str,
}

/// One series: a run's tag.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesView {
    /// The run (its directory under the root: Keras writes `train` and `validation`).
    pub run: String,
    /// The tag (`epoch_loss`).
    pub tag: String,
    /// How many points the files hold.
    pub total: usize,
    /// `[step, wall time in seconds since the epoch, value]`, at most as many as asked for.
    pub points: Vec<[f64; 3]>,
}

impl Curves {
    /// Reads what was appended under each of `roots` since the last read (a root not seen
    /// before from its start), then the curves, each series downsampled to at most `points`.
    pub fn read(&mut self, roots: Vec<PathBuf>, points: usize) -> ScalarsView {
        self.places.refresh(roots);
        self.view(points)
    }

    /// The curves, each series downsampled to at most `points` points.
    fn view(&self, points: usize) -> ScalarsView {
        let series = self
            .places
            .first_with_series()
            .map(|runs| {
                runs.series()
                    .map(|series| SeriesView {
                        run: series.run.to_owned(),
                        tag: series.tag.to_owned(),
                        total: series.points.len(),
                        points: downsample(series.points, points)
                            .iter()
                            .map(|point| {
                                #[allow(clippy::cast_precision_loss)]
                                let step = point.step as f64;
                                [step, point.wall_time, point.value]
                            })
                            .collect(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let problems = self
            .places
            .roots()
            .flat_map(|runs| {
                runs.problems()
                    .map(move |problem| format!("{}: {problem}", runs.root().display()))
            })
            .collect();
        ScalarsView {
            roots: self
                .places
                .roots()
                .map(|runs| runs.root().to_owned())
                .collect(),
            series,
            problems,
            env: TENSORBOARD_DIR_ENV,
        }
    }
}
