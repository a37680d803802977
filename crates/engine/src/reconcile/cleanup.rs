//! What is deleted when a job finishes (docs/semantics.md §6.4, `cleanPodPolicy`).
//!
//! `Running` deletes pods still pending or running, `All` deletes every pod, `None` keeps them
//! all. **\[fix\]** A job failed by its backoff limit or deadline stops what still runs whatever
//! the policy, and keeps finished pods unless the policy is `All`. A service goes with its pod:
//! it is kept exactly while its slot keeps a pod (`All`: never; `None`: always, unless the job
//! was stopped).

use trainctl_api::{CleanPodPolicy, ConditionStatus, JobConditionType, JobStatus, TrainingJob};

use super::messages::Wording;
use super::observed::{Observed, ObservedReplica, ReplicaSlot};
use super::plan::DeleteReason;

/// How a finished job ended, as far as cleanup cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Succeeded, or failed because replicas failed: the policy decides.
    ByReplicas,
    /// Failed by `backoffLimit` or `activeDeadlineSeconds`: running pods are stopped.
    Stopped,
}

impl Ending {
    /// How the finished job with `status` ended: a Failed condition carrying the backoff or
    /// deadline message means it was stopped.
    pub(crate) fn of(status: &JobStatus, words: &Wording<'_>) -> Ending {
        let stopped = status.conditions.iter().any(|c| {
            c.type_ == JobConditionType::Failed
                && c.status == ConditionStatus::True
                && (c.message == words.backoff_limit_reached()
                    || c.message == words.deadline_exceeded())
        });
        if stopped {
            Ending::Stopped
        } else {
            Ending::ByReplicas
        }
    }
}

/// The job's `cleanPodPolicy` (`None` when unset).
pub(crate) fn policy(job: &TrainingJob) -> CleanPodPolicy {
    job.run_policy()
        .clean_pod_policy
        .unwrap_or(CleanPodPolicy::None)
}

/// Whether cleanup has anything to do at all (a finished job with policy `None` costs nothing).
pub(crate) fn needed(policy: CleanPodPolicy, ending: Ending) -> bool {
    policy != CleanPodPolicy::None || ending == Ending::Stopped
}

/// Why `pod` goes when a job that ended so finishes, or `None` when it stays.
pub(crate) fn pod_fate(
    policy: CleanPodPolicy,
    ending: Ending,
    pod: &ObservedReplica,
) -> Option<DeleteReason> {
    if pod.deleting {
        return None;
    }
    match (pod.is_active(), policy) {
        (_, CleanPodPolicy::All) | (true, CleanPodPolicy::Running) => Some(DeleteReason::Cleanup),
        (true, CleanPodPolicy::None) if ending == Ending::Stopped => Some(DeleteReason::Failure),
        _ => None,
    }
}

/// The pods to delete, with why, in slot order.
pub(crate) fn pods(
    policy: CleanPodPolicy,
    ending: Ending,
    observed: &Observed,
) -> Vec<(&ReplicaSlot, &ObservedReplica, DeleteReason)> {
    if !needed(policy, ending) {
        return Vec::new();
    }
    observed
        .pods
        .iter()
        .filter_map(|(slot, pod)| pod_fate(policy, ending, pod).map(|why| (slot, pod, why)))
        .collect()
}

/// The services to delete, with why, in slot order: those whose slot keeps no pod.
pub(crate) fn services(
    policy: CleanPodPolicy,
    ending: Ending,
    observed: &Observed,
) -> Vec<(&ReplicaSlot, DeleteReason)> {
    if !needed(policy, ending) {
        return Vec::new();
    }
    observed
        .services
        .iter()
        .filter_map(|slot| match observed.pods.get(slot) {
            Some(pod) if !pod.deleting => pod_fate(policy, ending, pod).map(|why| (slot, why)),
            _ => Some((slot, DeleteReason::Cleanup)),
        })
        .collect()
}
