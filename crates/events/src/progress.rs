//! A job's progress in one line: the main scalar and its latest point.

use std::collections::BTreeSet;

use crate::Runs;

/// The tags taken for the main scalar, in order of preference, before any tag ending in `loss`:
/// what scripts usually call it, then what Keras' `TensorBoard` callback calls it.
const MAIN_TAGS: [&str; 2] = ["loss", "epoch_loss"];

/// The latest point of the main scalar, for `get -o wide` and `describe`.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// The run the point is from.
    pub run: String,
    /// The main scalar's tag.
    pub tag: String,
    /// The point's step: the highest step of the tag.
    pub step: i64,
    /// The value at that step.
    pub value: f64,
    /// When it was written, in seconds since the Unix epoch.
    pub wall_time: f64,
}

impl Runs {
    /// The tag that best tells how training goes: `loss`, else `epoch_loss`, else the first tag by
    /// name that ends in `loss`, else the first tag by name; `None` without any series.
    #[must_use]
    pub fn main_tag(&self) -> Option<&str> {
        let tags: BTreeSet<&str> = self.series().map(|series| series.tag).collect();
        MAIN_TAGS
            .into_iter()
            .find(|tag| tags.contains(tag))
            .or_else(|| tags.iter().copied().find(|tag| tag.ends_with("loss")))
            .or_else(|| tags.first().copied())
    }

    /// The point of the [main tag](Runs::main_tag) with the highest step: in the first training
    /// run (by name) that has the tag, else in the root run if it has it, else across all runs.
    /// A training run is Keras' `train`, alone or under a directory (`worker-0/train`). Of
    /// points at the same step, the one read last.
    #[must_use]
    pub fn latest(&self) -> Option<Progress> {
        let tag = self.main_tag()?;
        let with_tag: Vec<_> = self
            .series()
            .filter(|series| series.tag == tag && !series.points.is_empty())
            .collect();
        let preferred = with_tag
            .iter()
            .find(|series| is_training_run(series.run))
            .or_else(|| with_tag.iter().find(|series| series.run.is_empty()));
        let candidates = preferred.map_or(&with_tag[..], std::slice::from_ref);
        let (run, point) = candidates
            .iter()
            .flat_map(|series| series.points.iter().map(move |point| (series.run, point)))
            .max_by_key(|(_, point)| point.step)?;
        Some(Progress {
            run: run.to_owned(),
            tag: tag.to_owned(),
            step: point.step,
            value: point.value,
            wall_time: point.wall_time,
        })
    }
}

/// Whether `run` is where Keras' `TensorBoard` callback writes the training curves.
fn is_training_run(run: &str) -> bool {
    run == "train" || run.ends_with("/train")
}
