//! Observation: a job's Pods and Services, as the operator's watches cached them
//! ([`children`](super::children)), translated into the engine's [`Observed`]. Pure; no client
//! in scope.
//!
//! A pod or service counts for the job when the job controls it (a controller owner reference
//! with the job's uid), its labels name a replica slot, and its name is that slot's name. Anything
//! else carrying the job's labels (an orphan of an older job of the same name) is not the job's.

use k8s_openapi::api::core::v1::ContainerState;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use trainctl_api::TrainingJob;
use trainctl_engine::{Observed, ObservedReplica, PodPhase, ReplicaSlot};

use super::cached_meta::ChildLabels;
use super::cached_pod::{CachedContainerStatus, CachedPod, CachedPodStatus};
use super::cached_service::CachedService;

/// Container waiting reasons that are the normal way to start, not a reason to wait.
const STARTING_REASONS: [&str; 2] = ["ContainerCreating", "PodInitializing"];

/// What was observed of `job`: its pods and services, and the restart ledger kept on the job.
#[must_use]
pub fn observe<'a>(
    job: &TrainingJob,
    pods: impl IntoIterator<Item = &'a CachedPod>,
    services: impl IntoIterator<Item = &'a CachedService>,
    retired_restarts: u32,
) -> Observed {
    let mut observed = Observed {
        retired_restarts,
        ..Observed::default()
    };
    for pod in pods {
        if let Some(slot) = slot_of(job, &pod.metadata, &pod.labels) {
            let replica = observe_pod(job, pod);
            // Two pods cannot share a name; keep the first should a list repeat one.
            observed.pods.entry(slot).or_insert(replica);
        }
    }
    observed.services = services
        .into_iter()
        .filter_map(|service| slot_of(job, &service.metadata, &service.labels))
        .collect();
    observed
}

/// The job's slot that an object stands for, or `None` when it is not the job's.
fn slot_of(job: &TrainingJob, metadata: &ObjectMeta, labels: &ChildLabels) -> Option<ReplicaSlot> {
    if !controlled_by(job, metadata) {
        return None;
    }
    let slot = labels.slot.clone()?;
    (metadata.name.as_deref() == Some(slot.name(job.name()).as_str())).then_some(slot)
}

/// Whether the job is the object's controller. A job without a uid (never stored) controls
/// whatever carries its labels.
fn controlled_by(job: &TrainingJob, metadata: &ObjectMeta) -> bool {
    let Some(uid) = job.metadata().uid.as_deref() else {
        return true;
    };
    metadata
        .owner_references
        .iter()
        .flatten()
        .any(|owner| owner.controller == Some(true) && owner.uid == uid)
}

/// What one pod says about its replica.
fn observe_pod(job: &TrainingJob, pod: &CachedPod) -> ObservedReplica {
    let status = &pod.status;
    let containers = status.container_statuses.as_deref().unwrap_or_default();
    let framework = job
        .kind()
        .framework_container_name(pod.spec.containers.iter().map(|c| c.name.as_str()))
        .and_then(|name| containers.iter().find(|container| container.name == name));
    let state = framework.and_then(|container| container.state.as_ref());
    let terminated = state.and_then(|state| state.terminated.as_ref());
    let running = state.and_then(|state| state.running.as_ref());
    let why = why_pending(status, containers);
    ObservedReplica {
        phase: phase(status),
        exit_code: terminated.map(|terminated| terminated.exit_code),
        reason: why.as_ref().map(|why| why.reason.clone()),
        message: why.and_then(|why| why.message),
        restart_count: containers
            .iter()
            .map(|container| container.restart_count)
            .fold(0, i32::saturating_add),
        deleting: pod.metadata.deletion_timestamp.is_some(),
        started_at: running
            .and_then(|running| running.started_at.as_ref())
            .or_else(|| terminated.and_then(|terminated| terminated.started_at.as_ref()))
            .map(|time| time.0),
        finished_at: terminated
            .and_then(|terminated| terminated.finished_at.as_ref())
            .map(|time| time.0),
    }
}

/// The pod phase; a pod with no phase yet, or whose node stopped reporting (`Unknown`), is
/// pending: not running, and not finished either.
fn phase(status: &CachedPodStatus) -> PodPhase {
    match status.phase.as_deref() {
        Some("Running") => PodPhase::Running,
        Some("Succeeded") => PodPhase::Succeeded,
        Some("Failed") => PodPhase::Failed,
        _ => PodPhase::Pending,
    }
}

/// A reason Kubernetes gives for a pod's state, and what it said with it.
struct Why {
    reason: String,
    message: Option<String>,
}

impl Why {
    fn new(reason: Option<&String>, message: Option<&String>) -> Option<Why> {
        Some(Why {
            reason: reason?.clone(),
            message: message.filter(|message| !message.is_empty()).cloned(),
        })
    }
}

/// Why the pod is where it is, when Kubernetes says something worth showing: the pod's own
/// reason (`Evicted`), a container that cannot start (`ImagePullBackOff`) or was killed
/// (`OOMKilled`), or the scheduler's (`Unschedulable`, with its why:
/// `persistentvolumeclaim "tfevent-volume" not found`).
fn why_pending(status: &CachedPodStatus, containers: &[CachedContainerStatus]) -> Option<Why> {
    let container_why = |state: &ContainerState| {
        let waiting = state
            .waiting
            .as_ref()
            .filter(|waiting| {
                waiting
                    .reason
                    .as_deref()
                    .is_some_and(|reason| !STARTING_REASONS.contains(&reason))
            })
            .and_then(|waiting| Why::new(waiting.reason.as_ref(), waiting.message.as_ref()));
        waiting.or_else(|| {
            state
                .terminated
                .as_ref()
                .filter(|terminated| {
                    terminated
                        .reason
                        .as_deref()
                        .is_some_and(|reason| reason != "Error" && reason != "Completed")
                })
                .and_then(|terminated| {
                    Why::new(terminated.reason.as_ref(), terminated.message.as_ref())
                })
        })
    };
    let unschedulable = || {
        status
            .unscheduled
            .as_ref()
            .and_then(|condition| Why::new(condition.reason.as_ref(), condition.message.as_ref()))
    };
    Why::new(status.reason.as_ref(), status.message.as_ref())
        .or_else(|| {
            containers
                .iter()
                .filter_map(|container| container.state.as_ref())
                .find_map(container_why)
        })
        .or_else(unschedulable)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{TF_JOB, cached, cached_service, job, owned_pod, owned_service};
    use jiff::Timestamp;
    use serde_json::json;
    use trainctl_api::ReplicaType;

    fn pod_with_status(job: &TrainingJob, name: &str, status: serde_json::Value) -> CachedPod {
        let mut pod = owned_pod(job, name);
        pod.status = Some(serde_json::from_value(status).expect("a pod status"));
        cached(&pod)
    }

    #[test]
    fn pods_are_keyed_by_their_slot_labels() {
        let job = job(TF_JOB);
        let pods = [
            pod_with_status(&job, "mnist-chief-0", json!({"phase": "Running"})),
            pod_with_status(&job, "mnist-worker-1", json!({"phase": "Pending"})),
        ];
        let observed = observe(&job, &pods, [], 0);
        let slots: Vec<_> = observed.pods.keys().map(ToString::to_string).collect();
        assert_eq!(slots, ["chief-0", "worker-1"]);
        assert_eq!(
            observed.pods[&ReplicaSlot::new(ReplicaType::Chief, 0)].phase,
            PodPhase::Running
        );
    }

    #[test]
    fn exit_code_restarts_and_times_come_from_the_framework_container() {
        let job = job(TF_JOB);
        let pod = pod_with_status(
            &job,
            "mnist-worker-0",
            json!({
                "phase": "Failed",
                "containerStatuses": [
                    {"name": "sidecar", "image": "s", "imageID": "", "ready": false,
                     "restartCount": 1,
                     "state": {"terminated": {"exitCode": 0}}},
                    {"name": "tensorflow", "image": "tf", "imageID": "", "ready": false,
                     "restartCount": 2,
                     "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                       "startedAt": "2025-01-01T00:00:00Z",
                       "finishedAt": "2025-01-01T00:05:00Z"}}}
                ]
            }),
        );
        let observed = observe(&job, [&pod], [], 4);
        let replica = &observed.pods[&ReplicaSlot::new(ReplicaType::Worker, 0)];
        assert_eq!(replica.phase, PodPhase::Failed);
        assert_eq!(replica.exit_code, Some(137));
        assert_eq!(replica.restart_count, 3);
        assert_eq!(replica.reason.as_deref(), Some("OOMKilled"));
        assert_eq!(
            replica.started_at,
            Some("2025-01-01T00:00:00Z".parse::<Timestamp>().unwrap())
        );
        assert_eq!(
            replica.finished_at,
            Some("2025-01-01T00:05:00Z".parse::<Timestamp>().unwrap())
        );
        assert_eq!(observed.retired_restarts, 4);
    }

    #[test]
    fn a_pod_with_a_deletion_timestamp_is_deleting() {
        let job = job(TF_JOB);
        let mut pod = pod_with_status(&job, "mnist-worker-0", json!({"phase": "Running"}));
        pod.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::UNIX_EPOCH),
        );
        let observed = observe(&job, [&pod], [], 0);
        assert!(observed.pods[&ReplicaSlot::new(ReplicaType::Worker, 0)].deleting);
    }

    #[test]
    fn pending_reasons_skip_the_normal_way_to_start() {
        let job = job(TF_JOB);
        let creating = pod_with_status(
            &job,
            "mnist-worker-0",
            json!({"phase": "Pending", "containerStatuses": [
                {"name": "tensorflow", "image": "tf", "imageID": "", "ready": false,
                 "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}]}),
        );
        let pulling = pod_with_status(
            &job,
            "mnist-worker-1",
            json!({"phase": "Pending", "containerStatuses": [
                {"name": "tensorflow", "image": "tf", "imageID": "", "ready": false,
                 "restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}),
        );
        let unschedulable = pod_with_status(
            &job,
            "mnist-chief-0",
            json!({"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "persistentvolumeclaim \"tfevent-volume\" not found"}]}),
        );
        let observed = observe(&job, &[creating, pulling, unschedulable], [], 0);
        let why = |type_, index| {
            let pod = &observed.pods[&ReplicaSlot::new(type_, index)];
            (pod.reason.clone(), pod.message.clone())
        };
        assert_eq!(why(ReplicaType::Worker, 0), (None, None));
        assert_eq!(
            why(ReplicaType::Worker, 1),
            (Some("ImagePullBackOff".to_owned()), None)
        );
        // The scheduler's why, which the user needs, is kept with its reason.
        assert_eq!(
            why(ReplicaType::Chief, 0),
            (
                Some("Unschedulable".to_owned()),
                Some("persistentvolumeclaim \"tfevent-volume\" not found".to_owned())
            )
        );
    }

    #[test]
    fn objects_the_job_does_not_control_are_ignored() {
        let job = job(TF_JOB);
        let mut orphan = cached(&owned_pod(&job, "mnist-worker-0"));
        orphan.metadata.owner_references.as_mut().unwrap()[0].uid = "older-job".to_owned();
        let mut renamed = cached(&owned_pod(&job, "mnist-worker-1"));
        renamed.metadata.name = Some("someone-else".to_owned());
        let observed = observe(&job, &[orphan, renamed], [], 0);
        assert!(observed.pods.is_empty());
    }

    #[test]
    fn services_are_the_slots_they_serve() {
        let job = job(TF_JOB);
        let services = [
            cached_service(&owned_service(&job, "mnist-chief-0")),
            cached_service(&owned_service(&job, "mnist-worker-1")),
        ];
        let observed = observe(&job, [], &services, 0);
        let slots: Vec<_> = observed.services.iter().map(ToString::to_string).collect();
        assert_eq!(slots, ["chief-0", "worker-1"]);
    }
}
