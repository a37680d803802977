//! The watches that wake reconciles, each recovering from its errors on its own.
//!
//! kube-runtime's `Controller` puts one back-off over all its trigger watches together (the
//! jobs', the pods', the services'): any watch's error lengthens the delay of every one, and the
//! delay only falls back after two minutes without errors. A restarted API server gives each
//! watch a few errors at once (connections refused, `403` while its RBAC loads, `410 Expired`),
//! and on a real control plane the operator then heard of no change for 20 s to over 2 minutes
//! (`e2e/tests/faults.rs`). Here each watch backs off alone, briefly ([`WatchBackoff`]), and its
//! errors are logged and kept from the controller, whose shared back-off never fires.

use std::time::Duration;

use futures_util::{Stream, StreamExt as _, future};
use kube::runtime::utils::Backoff;
use kube::runtime::{WatchStreamExt as _, watcher};
use trainctl_api::JobKind;

/// The wait after a watch's first error.
const FIRST_DELAY: Duration = Duration::from_millis(250);

/// The longest wait between two tries of a failing watch.
const MAX_DELAY: Duration = Duration::from_secs(4);

/// A watch's back-off: 250 ms, doubling to 4 s, back to 250 ms once the watch yields again.
#[derive(Debug, Clone)]
pub struct WatchBackoff {
    next: Duration,
}

impl Default for WatchBackoff {
    fn default() -> Self {
        WatchBackoff { next: FIRST_DELAY }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let delay = self.next;
        self.next = (delay * 2).min(MAX_DELAY);
        Some(delay)
    }
}

impl Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.next = FIRST_DELAY;
    }
}

/// `stream` (a watch of `what`, for `kind`'s controller) with a back-off of its own, and its
/// errors logged rather than passed on.
pub fn on_its_own<T, S>(
    kind: JobKind,
    what: &'static str,
    stream: S,
) -> impl Stream<Item = Result<T, watcher::Error>> + Send + use<T, S>
where
    S: Stream<Item = Result<T, watcher::Error>> + Send,
    T: Send,
{
    stream
        .backoff(WatchBackoff::default())
        .filter_map(move |item| {
            future::ready(match item {
                Ok(object) => Some(Ok(object)),
                Err(error) => {
                    tracing::warn!(%kind, watch = what, %error, "watch failed; retrying");
                    None
                }
            })
        })
}

#[cfg(test)]
mod tests {
    use futures_util::stream;

    use super::*;

    #[test]
    fn the_back_off_doubles_to_its_cap_and_starts_over_once_reset() {
        let mut backoff = WatchBackoff::default();
        let delays: Vec<u64> = backoff
            .by_ref()
            .take(7)
            .map(|delay| u64::try_from(delay.as_millis()).expect("small"))
            .collect();
        assert_eq!(delays, [250, 500, 1000, 2000, 4000, 4000, 4000]);
        backoff.reset();
        assert_eq!(backoff.next(), Some(FIRST_DELAY));
    }

    /// The errors stay here: the controller, whose one back-off covers every watch, sees only
    /// the objects.
    #[tokio::test(start_paused = true)]
    async fn errors_are_kept_from_the_controller_and_the_watch_goes_on() {
        let error = || watcher::Error::NoResourceVersion;
        let items = vec![
            Ok(1),
            Err(error()),
            Err(error()),
            Ok(2),
            Err(error()),
            Ok(3),
        ];
        let started = tokio::time::Instant::now();
        let passed: Vec<i32> = on_its_own(JobKind::TFJob, "pods", stream::iter(items))
            .map(|item| item.expect("no error passes"))
            .collect()
            .await;
        assert_eq!(passed, [1, 2, 3]);
        // Two errors in a row wait 250 + 500 ms; the one after a success starts at 250 ms again.
        assert_eq!(started.elapsed(), Duration::from_secs(1));
    }
}
