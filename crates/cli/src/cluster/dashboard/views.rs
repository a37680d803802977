//! The cluster's objects in the shapes the dashboard's API answers (`trainctl_server_api`):
//! each job in one line ([`summaries`]) and one job with its pods and events ([`job_view`]),
//! with the words of `trainctl --kube get` and `describe`. What a cluster does not say (a
//! replica's pid, which GPUs a node gave, a queue) is left empty.

use std::collections::HashMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use trainctl_api::resources::ReplicaNeeds;
use trainctl_api::{JobKind, JobStatus};
use trainctl_server_api::{EventView, JobSummary, JobView, ReplicaView};

use crate::cluster::pods::{controller_uid, framework_port, main_status, pods_reason, slot_of};
use crate::cluster::{ClusterJob, restarts_by_job};
use crate::view::description::EventRow;

/// Each job's summary, in the order of `jobs` (oldest first, as the cluster's list sorts
/// them); `pods` are the training pods of their namespaces.
pub fn summaries(jobs: &[ClusterJob], pods: &[Pod]) -> Vec<JobSummary> {
    let restarts = restarts_by_job(jobs, pods);
    let mut owned: HashMap<&str, Vec<&Pod>> = HashMap::new();
    for pod in pods {
        if let Some(uid) = controller_uid(pod) {
            owned.entry(uid).or_default().push(pod);
        }
    }
    jobs.iter()
        .map(|job| {
            let pods = owned.get(job.uid()).map_or(&[][..], Vec::as_slice);
            summary(job, pods, restarts.get(job.uid()).copied().unwrap_or(0))
        })
        .collect()
}

/// A job in one line: ready replicas are its running pods that are ready, the GPUs those its
/// running pods ask for.
fn summary(job: &ClusterJob, pods: &[&Pod], restarts: i64) -> JobSummary {
    let status = job.job.status();
    let running: Vec<&Pod> = pods
        .iter()
        .copied()
        .filter(|pod| phase(pod) == Some("Running"))
        .collect();
    JobSummary {
        namespace: job.namespace().to_owned(),
        name: job.name().to_owned(),
        kind: job.kind.as_str(),
        plural: job.kind.plural(),
        uid: job.uid().to_owned(),
        state: job.state(),
        waiting: waiting(status),
        failure: failure(status),
        reason: pods_reason(job, pods.iter().copied()).map(str::to_owned),
        queue_position: None,
        replicas_ready: running.iter().filter(|pod| is_ready(pod)).count(),
        replicas_total: job
            .job
            .replica_specs()
            .values()
            .map(|spec| i64::from(spec.replicas_or_default()))
            .sum(),
        restarts,
        created: job.created().unwrap_or_default(),
        started: status
            .and_then(|status| status.start_time.as_ref())
            .map(|time| time.0),
        finished_at: finished_at(status),
        gpus: running.iter().map(|pod| requested_gpus(pod) as usize).sum(),
    }
}

/// Why a failed job failed: its `Failed` condition's message.
fn failure(status: Option<&trainctl_api::JobStatus>) -> Option<String> {
    status
        .and_then(trainctl_api::JobStatus::failure_message)
        .map(str::to_owned)
}

/// One job: the object as stored, its pods (as [`Cluster::pods_of`](crate::cluster::Cluster::pods_of)
/// lists them) as replicas, and its events (oldest first).
pub fn job_view(job: &ClusterJob, pods: &[Pod], events: Vec<EventRow>) -> JobView {
    JobView {
        namespace: job.namespace().to_owned(),
        name: job.name().to_owned(),
        kind: job.kind.as_str(),
        uid: job.uid().to_owned(),
        state: job.state(),
        waiting: waiting(job.job.status()),
        failure: failure(job.job.status()),
        reason: pods_reason(job, pods).map(str::to_owned),
        created: job.created().unwrap_or_default(),
        finished: job.finished(),
        job: serde_json::to_value(job.shown()).unwrap_or(serde_json::Value::Null),
        replicas: pods
            .iter()
            .filter_map(|pod| replica_view(job.kind, pod))
            .collect(),
        events: events
            .into_iter()
            .map(|event| EventView {
                time: event.time,
                first_timestamp: event.first_time,
                count: event.count,
                type_: event.type_,
                reason: event.reason,
                message: event.message,
            })
            .collect(),
    }
}

/// A pod as a replica: named by its replica-type and replica-index labels, its state the
/// pod's phase, its exit code, restarts and times those of the framework container (the exit
/// code of its current run, else of its last), its port the framework's. `None` for a pod
/// without those labels.
fn replica_view(kind: JobKind, pod: &Pod) -> Option<ReplicaView> {
    let slot = slot_of(pod)?;
    let main = main_status(kind, pod);
    let now = main.and_then(|main| main.state.as_ref());
    let running = now.and_then(|state| state.running.as_ref());
    let ended = now.and_then(|state| state.terminated.as_ref());
    let last_ended = ended.or_else(|| {
        main.and_then(|main| main.last_state.as_ref())
            .and_then(|state| state.terminated.as_ref())
    });
    Some(ReplicaView {
        name: slot.to_string(),
        type_: slot.replica_type.as_str().to_owned(),
        index: slot.index,
        state: match phase(pod) {
            Some("Running") => "Running",
            Some("Succeeded") => "Succeeded",
            Some("Failed") => "Failed",
            _ => "Pending",
        },
        pid: None,
        port: pod
            .spec
            .as_ref()
            .and_then(|spec| framework_port(kind, pod, &spec.containers)),
        gpus: Vec::new(),
        restarts: main.map_or(0, |main| main.restart_count),
        exit_code: last_ended.map(|ended| ended.exit_code),
        // The kubelet's word when it is not the plain one (`OOMKilled`, not `Error`).
        reason: last_ended
            .and_then(|ended| ended.reason.clone())
            .filter(|reason| reason != "Error" && reason != "Completed"),
        started: running
            .and_then(|running| running.started_at.as_ref())
            .or_else(|| ended.and_then(|ended| ended.started_at.as_ref()))
            .map(|time| time.0),
        finished: ended
            .and_then(|ended| ended.finished_at.as_ref())
            .map(|time| time.0),
    })
}

/// Why a pending job waits (its gang's PodGroup), as the `Created` condition says.
fn waiting(status: Option<&JobStatus>) -> Option<String> {
    status
        .and_then(JobStatus::waiting_reason)
        .map(str::to_owned)
}

/// When a finished job finished: `status.completionTime`, else its last condition's change.
fn finished_at(status: Option<&JobStatus>) -> Option<Timestamp> {
    let status = status.filter(|status| status.is_finished())?;
    status.finish_time().map(|time| time.0)
}

fn phase(pod: &Pod) -> Option<&str> {
    pod.status.as_ref()?.phase.as_deref()
}

/// Whether the pod's `Ready` condition holds.
fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|condition| condition.type_ == "Ready" && condition.status == "True")
        })
}

/// The GPUs the pod asks for (`nvidia.com/gpu`), as the scheduler counts them.
fn requested_gpus(pod: &Pod) -> u32 {
    let (Some(slot), Some(spec)) = (slot_of(pod), pod.spec.as_ref()) else {
        return 0;
    };
    ReplicaNeeds::of_pod(slot.replica_type, slot.index, spec).map_or(0, |needs| needs.gpus)
}

#[cfg(test)]
mod tests;
