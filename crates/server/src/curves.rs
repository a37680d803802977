//! A job's scalar curves, as the dashboard's Curves page draws them: read with
//! [`trainctl_events`] from the places [`trainctl_local::claims::event_roots`] names, kept
//! between refreshes so that a followed curve reads only what was appended, and downsampled
//! here (never more than a chart can show goes to the browser).
//!
//! The curves come from the first of those places that has a scalar, as the CLI's progress
//! does: the job's own `TRAINCTL_TENSORBOARD_DIR`, else `<claim>/<job name>`.

use std::path::PathBuf;

use trainctl_events::{Places, downsample};
use trainctl_local::runner::TENSORBOARD_DIR_ENV;
use trainctl_server_api::{ScalarsView, SeriesView};

/// The event files of one job, read so far.
#[derive(Debug, Default)]
pub struct Curves {
    places: Places,
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
