//! What happens to a failed replica (docs/semantics.md §6.1): re-created, fatal to the job, or
//! ignored; and the job's restart budget, `backoffLimit` (§6.2).
//!
//! How restarts are counted across calls is explained in the [module documentation of
//! `reconcile`](super).

use trainctl_api::{ReplicaType, RestartPolicy, TrainingJob};

use super::observed::{Observed, ObservedReplica, PodPhase, ReplicaSlot};
use super::replicas::ReplicaView;

/// Whether an exit code is worth a retry under `ExitCode`: 128 + signal (137 = killed,
/// 143 = SIGTERM) is retryable; below 128 the program itself failed, and retrying will not help.
#[must_use]
pub fn is_retryable_exit_code(code: i32) -> bool {
    code >= 128
}

/// What becomes of one failed replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Delete and re-create it.
    Restart,
    /// It fails the job.
    FailJob,
    /// It stays failed and the job goes on (TF workers under `enableDynamicWorker`).
    Ignore,
}

/// The verdict on a failed pod of `replica_type` under `policy`.
///
/// A failed pod without an exit code (evicted, its node lost) was stopped from outside, like a
/// signal, so `ExitCode` retries it.
pub(crate) fn verdict(
    job: &TrainingJob,
    replica_type: &ReplicaType,
    policy: RestartPolicy,
    pod: &ObservedReplica,
) -> Verdict {
    let restart = match policy {
        RestartPolicy::Always | RestartPolicy::OnFailure => true,
        RestartPolicy::ExitCode => pod.exit_code.is_none_or(is_retryable_exit_code),
        RestartPolicy::Never => false,
    };
    if restart {
        Verdict::Restart
    } else if dynamic_workers(job) && *replica_type == ReplicaType::Worker {
        Verdict::Ignore
    } else {
        Verdict::FailJob
    }
}

fn dynamic_workers(job: &TrainingJob) -> bool {
    matches!(job, TrainingJob::TF(tf) if tf.spec.enable_dynamic_worker == Some(true))
}

/// A failed pod in a slot of the job.
pub(crate) struct FailedReplica<'a> {
    /// Its slot.
    pub(crate) slot: ReplicaSlot,
    /// The pod.
    pub(crate) pod: &'a ObservedReplica,
}

/// The failed replicas of a job, sorted by verdict, and the restarts made so far.
pub(crate) struct Assessment<'a> {
    /// Failed replicas to re-create, in slot order.
    pub(crate) restarts: Vec<FailedReplica<'a>>,
    /// Failed replicas that fail the job, in slot order.
    pub(crate) fatal: Vec<FailedReplica<'a>>,
    /// Every restart made so far (see the module documentation).
    pub(crate) restarts_made: u64,
}

impl<'a> Assessment<'a> {
    /// Judges every failed pod (not being deleted) in the job's slots.
    pub(crate) fn new(job: &TrainingJob, view: &ReplicaView<'a>, observed: &Observed) -> Self {
        let mut assessment = Assessment {
            restarts: Vec::new(),
            fatal: Vec::new(),
            restarts_made: u64::from(observed.retired_restarts) + observed.live_restarts(),
        };
        for type_view in &view.types {
            for (index, pod) in type_view.observed() {
                if pod.phase != PodPhase::Failed || pod.deleting {
                    continue;
                }
                let failed = FailedReplica {
                    slot: type_view.slot(index),
                    pod,
                };
                match verdict(job, type_view.replica_type, type_view.policy, pod) {
                    Verdict::Restart => assessment.restarts.push(failed),
                    Verdict::FailJob => assessment.fatal.push(failed),
                    Verdict::Ignore => {}
                }
            }
        }
        assessment
    }

    /// Whether the job is past its `backoffLimit`: more restarts made than allowed, or the
    /// restarts due now would be more.
    pub(crate) fn exceeds(&self, backoff_limit: Option<i32>) -> bool {
        let Some(limit) = backoff_limit else {
            return false;
        };
        let limit = u64::from(limit.max(0).unsigned_abs());
        let wanted = self.restarts.len() as u64;
        self.restarts_made > limit || (wanted > 0 && self.restarts_made + wanted > limit)
    }

    /// The first replica type (in canonical order) among `replicas`, and how many of them are
    /// of that type: what condition messages report.
    pub(crate) fn headline<'r>(
        replicas: &'r [FailedReplica<'_>],
    ) -> Option<(&'r ReplicaType, usize)> {
        let first = &replicas.first()?.slot.replica_type;
        let count = replicas
            .iter()
            .filter(|failed| failed.slot.replica_type == *first)
            .count();
        Some((first, count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_from_128_are_retryable() {
        for code in [128, 130, 137, 139, 143] {
            assert!(is_retryable_exit_code(code), "{code}");
        }
        for code in [0, 1, 2, 126, 127, -1] {
            assert!(!is_retryable_exit_code(code), "{code}");
        }
    }
}
