//! A job's training progress in words: how far it got and the last value of its main scalar
//! (read by `backend::local::progress` from its TensorBoard event files).
//!
//! Keras' `TensorBoard` callback writes its `epoch_*` scalars at the epoch's index, from 0: the
//! last of 15 epochs is step 14. Those say the epochs done (`epoch 15`); other tags say the
//! step as the program wrote it (`step 1200`), which is the count of steps done for the usual
//! writers (`optimizer.iterations`, a loop's counter after the step).

use jiff::Timestamp;
use trainctl_events::Progress;

use super::jobs::age;

/// Keras' prefix of the scalars it writes once an epoch, at the epoch's index.
const EPOCH_TAG_PREFIX: &str = "epoch_";

/// How far the job got: `epoch 15` (epochs done) for Keras' epoch scalars, else `step 120`.
fn position(progress: &Progress) -> String {
    if progress.tag.starts_with(EPOCH_TAG_PREFIX) {
        format!("epoch {}", progress.step.saturating_add(1))
    } else {
        format!("step {}", progress.step)
    }
}

/// `step 120 loss=0.2310` or `epoch 15 epoch_loss=0.0512`, as `get -o wide` shows it.
#[must_use]
pub fn short(progress: &Progress) -> String {
    format!(
        "{} {}={}",
        position(progress),
        progress.tag,
        value(progress.value)
    )
}

/// `step 120, loss 0.2310 (run train, written 12s ago)`, as `describe` shows it.
#[must_use]
pub fn long(progress: &Progress, now: Timestamp) -> String {
    let run = if progress.run.is_empty() {
        String::new()
    } else {
        format!("run {}, ", progress.run)
    };
    let written = Timestamp::from_millisecond((progress.wall_time * 1_000.0) as i64)
        .map(|at| age(now.duration_since(at)))
        .map_or_else(
            |_| "at an unknown time".to_owned(),
            |age| format!("{age} ago"),
        );
    format!(
        "{}, {} {} ({run}written {written})",
        position(progress),
        progress.tag,
        value(progress.value)
    )
}

/// A scalar's value in four significant decimals, or as it is when very large or small.
fn value(value: f64) -> String {
    if value != 0.0 && !(1e-3..1e6).contains(&value.abs()) {
        format!("{value:.3e}")
    } else {
        format!("{value:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(run: &str, value: f64, wall_time: f64) -> Progress {
        Progress {
            run: run.to_owned(),
            tag: "epoch_loss".to_owned(),
            step: 7,
            value,
            wall_time,
        }
    }

    #[test]
    fn get_shows_the_epochs_done_and_the_main_scalar() {
        // Keras wrote the 8th epoch at step 7.
        assert_eq!(
            short(&progress("train", 0.175_3, 0.0)),
            "epoch 8 epoch_loss=0.1753"
        );
        assert_eq!(
            short(&progress("", 2.5e-5, 0.0)),
            "epoch 8 epoch_loss=2.500e-5"
        );
        assert_eq!(short(&progress("", 0.0, 0.0)), "epoch 8 epoch_loss=0.0000");
    }

    #[test]
    fn keras_last_of_fifteen_epochs_is_epoch_fifteen() {
        let last = Progress {
            step: 14,
            ..progress("train", 0.051_2, 0.0)
        };
        assert_eq!(short(&last), "epoch 15 epoch_loss=0.0512");
    }

    #[test]
    fn other_tags_show_the_step_as_written() {
        let batches = Progress {
            tag: "loss".to_owned(),
            step: 1200,
            ..progress("", 0.31, 0.0)
        };
        assert_eq!(short(&batches), "step 1200 loss=0.3100");
    }

    #[test]
    fn describe_says_the_run_and_how_long_ago() {
        let now = Timestamp::from_second(1_000_000).expect("a time");
        assert_eq!(
            long(&progress("train", 0.175_3, 999_988.0), now),
            "epoch 8, epoch_loss 0.1753 (run train, written 12s ago)"
        );
        assert_eq!(
            long(&progress("", 1.0, 999_700.0), now),
            "epoch 8, epoch_loss 1.0000 (written 5m ago)"
        );
    }
}
