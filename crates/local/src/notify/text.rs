//! Durations in a notification's words, as the flags that set them are written.

use std::time::Duration;

/// `30s`, `1s 500ms`: to the millisecond (what is left of a deadline is not a whole number of
/// them, and no one reads nanoseconds).
pub(super) fn duration_text(duration: Duration) -> String {
    let millis = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    let rounded = jiff::SignedDuration::from_millis(i64::try_from(millis).unwrap_or(i64::MAX));
    if rounded.is_zero() {
        "0s".to_owned()
    } else {
        format!("{rounded:#}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_flags_are_written() {
        assert_eq!(duration_text(Duration::from_secs(30)), "30s");
        assert_eq!(duration_text(Duration::from_millis(1500)), "1s 500ms");
        // What was left of a deadline: never in microseconds and nanoseconds.
        assert_eq!(duration_text(Duration::new(6, 936_333_418)), "6s 936ms");
        assert_eq!(duration_text(Duration::from_nanos(999)), "0s");
    }
}
