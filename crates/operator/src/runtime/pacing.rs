//! Pacing: while only a job's children change, the job is reconciled at most once per
//! [`BATCH_PERIOD`].
//!
//! Every change of a job's pods wakes its reconcile, and a reconcile reads all of the job's
//! pods: while a job of 1,000 replicas starts, its pods change thousands of times, and reconciled
//! back to back it took more CPU than anything else in the operator, on a machine it may share
//! with the API server. Kubernetes' own Job controller batches the same way: it syncs a Job at
//! most once a second for its pods' changes (`SyncJobBatchPeriod`), at once for the Job's.
//!
//! The rule: a reconcile starts at once when the job's last reconcile started at least
//! [`BATCH_PERIOD`] ago, or when the job's spec changed since (its `generation`: a new job, a
//! suspend, a resume, a scale). Otherwise it waits for the rest of the period, and the changes
//! that come meanwhile are seen by that one reconcile (kube-runtime runs one reconcile of a job
//! at a time and keeps one more pending). So a lone pod change is acted on at once, and a burst
//! costs one reconcile per period; nothing waits longer than the period.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::gate::Turn;

/// The least time between the starts of two reconciles of a job whose spec did not change.
pub const BATCH_PERIOD: Duration = Duration::from_secs(1);

/// When each job's last reconcile started, and at which generation.
#[derive(Default)]
pub struct Pacing {
    last: Mutex<HashMap<String, Last>>,
}

/// A job's last reconcile.
#[derive(Clone, Copy)]
struct Last {
    started: Instant,
    generation: Option<i64>,
}

impl Pacing {
    /// How long a reconcile of the job `key` at `generation`, due at `now`, waits first.
    #[must_use]
    pub fn delay(&self, key: &str, generation: Option<i64>, now: Instant) -> Duration {
        let last = self.lock().get(key).copied();
        match last {
            Some(last) if last.generation == generation => {
                (last.started + BATCH_PERIOD).saturating_duration_since(now)
            }
            _ => Duration::ZERO,
        }
    }

    /// Which queue of the gate a reconcile of the job `key` at `generation` waits in: a
    /// follow-up where the job's last reconcile was at that generation.
    #[must_use]
    pub fn turn(&self, key: &str, generation: Option<i64>) -> Turn {
        match self.lock().get(key) {
            Some(last) if last.generation == generation => Turn::FollowUp,
            _ => Turn::First,
        }
    }

    /// Notes that a reconcile of the job `key` at `generation` started at `now`.
    pub fn started(&self, key: &str, generation: Option<i64>, now: Instant) {
        self.lock().insert(
            key.to_owned(),
            Last {
                started: now,
                generation,
            },
        );
    }

    /// Forgets a job that is gone.
    pub fn forget(&self, key: &str) {
        self.lock().remove(key);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Last>> {
        // Times only: a map left by a panic is still right enough to pace by.
        self.last.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::{BATCH_PERIOD, Pacing, Turn};

    #[test]
    fn changes_of_the_children_are_batched_and_a_new_spec_is_not() {
        let pacing = Pacing::default();
        let start = Instant::now();
        // A job never reconciled, or quiet for a period: at once.
        assert_eq!(pacing.delay("ml/a", Some(1), start), Duration::ZERO);
        assert_eq!(pacing.turn("ml/a", Some(1)), Turn::First);
        pacing.started("ml/a", Some(1), start);
        assert_eq!(pacing.turn("ml/a", Some(1)), Turn::FollowUp);
        assert_eq!(pacing.turn("ml/a", Some(2)), Turn::First);
        let soon = start + Duration::from_millis(300);
        assert_eq!(
            pacing.delay("ml/a", Some(1), soon),
            Duration::from_millis(700)
        );
        assert_eq!(
            pacing.delay("ml/a", Some(1), start + BATCH_PERIOD),
            Duration::ZERO
        );
        // The spec changed (suspend, scale): at once.
        assert_eq!(pacing.delay("ml/a", Some(2), soon), Duration::ZERO);
        // Other jobs are paced apart.
        assert_eq!(pacing.delay("ml/b", Some(1), soon), Duration::ZERO);
        // A job that is gone is forgotten.
        pacing.forget("ml/a");
        assert_eq!(pacing.delay("ml/a", Some(1), soon), Duration::ZERO);
    }
}
