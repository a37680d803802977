//! The job's clocks (docs/semantics.md §6): `activeDeadlineSeconds` from `startTime`,
//! `ttlSecondsAfterFinished` from `completionTime`, and the restart back-off from a failed pod's
//! end. The engine never sleeps: a clock that has not run out becomes
//! [`Plan::requeue_after`](super::Plan::requeue_after).

use jiff::{SignedDuration, Timestamp};
use trainctl_api::{JobStatus, TrainingJob};

use super::observed::{ObservedReplica, RestartBackoff};

/// `t + seconds`, or `None` when that is beyond the representable time (never due).
fn after(t: Timestamp, seconds: i64) -> Option<Timestamp> {
    t.checked_add(SignedDuration::from_secs(seconds)).ok()
}

/// When the job's `activeDeadlineSeconds` runs out, if it has one and has started.
pub(crate) fn deadline(job: &TrainingJob, status: &JobStatus) -> Option<Timestamp> {
    let seconds = job.run_policy().active_deadline_seconds?;
    let start = status.start_time.as_ref()?.0;
    after(start, seconds)
}

/// When a finished job is to be deleted, if it has a `ttlSecondsAfterFinished`.
pub(crate) fn ttl_expiry(job: &TrainingJob, status: &JobStatus) -> Option<Timestamp> {
    let seconds = job.run_policy().ttl_seconds_after_finished?;
    let completed = status.completion_time.as_ref()?.0;
    after(completed, i64::from(seconds.max(0)))
}

/// When a failed pod may be re-created, after `restarts_made` restarts of the job; `None`: at
/// once (its end is not known).
pub(crate) fn restart_due(
    pod: &ObservedReplica,
    backoff: &RestartBackoff,
    restarts_made: u64,
) -> Option<Timestamp> {
    let finished = pod.finished_at?;
    let delay = backoff.delay(u32::try_from(restarts_made).unwrap_or(u32::MAX));
    finished.checked_add(delay).ok()
}

/// The time left from `now` until `at` (zero when `at` has passed).
pub(crate) fn until(now: Timestamp, at: Timestamp) -> SignedDuration {
    at.duration_since(now).max(SignedDuration::ZERO)
}

/// The earlier of two optional wake-ups.
pub(crate) fn earliest(
    a: Option<SignedDuration>,
    b: Option<SignedDuration>,
) -> Option<SignedDuration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
