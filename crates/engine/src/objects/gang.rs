//! The gang: how many of a job's pods must be schedulable together, whichever scheduler places
//! them (a PodGroup's `minMember`, a Workload's gang `minCount`).

use trainctl_api::TrainingJob;

/// Pods that must be schedulable together: `schedulingPolicy.minAvailable`, else every replica.
#[must_use]
pub fn min_member(job: &TrainingJob) -> i32 {
    job.run_policy()
        .scheduling_policy
        .as_ref()
        .and_then(|policy| policy.min_available)
        .unwrap_or_else(|| job.total_replicas())
}
