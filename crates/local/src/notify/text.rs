//! Durations in a notification's words, as the flags that set them are written.

use std::time::Duration;

/// `30s`, `1s 500ms`.
pub(super) fn duration_text(duration: Duration) -> String {
    jiff::SignedDuration::try_from(duration).map_or_else(
        |_| format!("{duration:?}"),
        |duration| format!("{duration:#}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_flags_are_written() {
        assert_eq!(duration_text(Duration::from_secs(30)), "30s");
        assert_eq!(duration_text(Duration::from_millis(1500)), "1s 500ms");
    }
}
