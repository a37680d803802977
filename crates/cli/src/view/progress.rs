//! A job's training progress in words: the latest step and the last value of its main scalar
//! (read by `commands::progress` from its TensorBoard event files).

use jiff::Timestamp;
use trainctl_events::Progress;

use super::jobs::age;

/// `step 120 loss=0.2310`, as `get -o wide` shows it.
#[must_use]
pub fn short(progress: &Progress) -> String {
    format!(
        "step {} {}={}",
        progress.step,
        progress.tag,
        value(progress.value)
    )
}

/// `step 120, loss 0.2310 (run train, 12s ago)`, as `describe` shows it.
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
        "step {}, {} {} ({run}written {written})",
        progress.step,
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
    fn get_shows_the_step_and_the_main_scalar() {
        assert_eq!(
            short(&progress("train", 0.175_3, 0.0)),
            "step 7 epoch_loss=0.1753"
        );
        assert_eq!(
            short(&progress("", 2.5e-5, 0.0)),
            "step 7 epoch_loss=2.500e-5"
        );
        assert_eq!(short(&progress("", 0.0, 0.0)), "step 7 epoch_loss=0.0000");
    }

    #[test]
    fn describe_says_the_run_and_how_long_ago() {
        let now = Timestamp::from_second(1_000_000).expect("a time");
        assert_eq!(
            long(&progress("train", 0.175_3, 999_988.0), now),
            "step 7, epoch_loss 0.1753 (run train, written 12s ago)"
        );
        assert_eq!(
            long(&progress("", 1.0, 999_700.0), now),
            "step 7, epoch_loss 1.0000 (written 5m ago)"
        );
    }
}
