//! A Pod as the children's cache holds it ([`children`](super::children)): only what
//! [`observe`](super::observe) reads, deserialized straight from the API server's JSON.
//!
//! Slimming a whole [`Pod`](k8s_openapi::api::core::v1::Pod) after it was decoded left about
//! 10 KiB per cached pod: its Rust types are wide (a `PodSpec` is 1.5 KiB and each `Container`
//! 2.3 KiB before any field is set) and the decoding of the rest of the object left the heap
//! fragmented. Decoded into these types, the rest of the object is skipped, never built; with
//! the conditions reduced to the one read and the labels to the slot they name
//! ([`cached_meta`](super::cached_meta)), a cached pod takes about 1.8 KiB in the cache, its key
//! included.

use k8s_openapi::api::core::v1::{ContainerState, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Deserializer};

use super::cached_meta::{ChildLabels, read_as, slim_meta};

/// A Pod as cached: its metadata and, once [slimmed](CachedPod::slim), its labels' facts, its
/// containers' names and the parts of its status that are read.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct CachedPod {
    /// The pod's metadata.
    pub metadata: ObjectMeta,
    /// What its labels say, taken out of the metadata by [`CachedPod::slim`].
    #[serde(skip)]
    pub labels: ChildLabels,
    /// The containers' names, in the pod's order (an MPIJob's framework container is its first).
    #[serde(default)]
    pub spec: CachedPodSpec,
    /// What the status says of the pod's phase, its conditions and its containers.
    #[serde(default)]
    pub status: CachedPodStatus,
}

impl CachedPod {
    /// Keeps only what is read of the metadata ([`slim_meta`]), the labels taken out.
    pub fn slim(&mut self) {
        self.labels = slim_meta(&mut self.metadata);
    }
}

/// The part of a pod's spec that is read.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct CachedPodSpec {
    /// The containers, by name.
    #[serde(default)]
    pub containers: Vec<ContainerName>,
}

/// A container, by name.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ContainerName {
    /// The container's name.
    pub name: String,
}

/// The part of a pod's status that is read.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedPodStatus {
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Unknown`; none yet for a new pod.
    pub phase: Option<String>,
    /// The pod's own reason (`Evicted`).
    pub reason: Option<String>,
    /// What Kubernetes said with that reason.
    pub message: Option<String>,
    /// The pod's `PodScheduled` condition while it is `False`, which carries the scheduler's why;
    /// the other conditions are not kept (four of them for a running pod, about 600 bytes).
    #[serde(rename = "conditions", default, deserialize_with = "not_scheduled")]
    pub unscheduled: Option<CachedCondition>,
    /// The containers' statuses.
    pub container_statuses: Option<Vec<CachedContainerStatus>>,
}

/// A pod condition, without its times.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct CachedCondition {
    /// The condition's type (`PodScheduled`).
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Why, in one word (`Unschedulable`).
    pub reason: Option<String>,
    /// Why, in words.
    pub message: Option<String>,
}

/// A container's status: its name, restarts and state.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedContainerStatus {
    /// The container's name.
    pub name: String,
    /// How many times the kubelet restarted it in place.
    #[serde(default)]
    pub restart_count: i32,
    /// Waiting, running or terminated, with the reason and the times.
    pub state: Option<ContainerState>,
}

/// The `PodScheduled=False` condition among a pod's `conditions`, if it has one.
fn not_scheduled<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<CachedCondition>, D::Error> {
    let conditions = Option::<Vec<CachedCondition>>::deserialize(deserializer)?;
    Ok(conditions
        .into_iter()
        .flatten()
        .find(|condition| condition.type_ == "PodScheduled" && condition.status == "False"))
}

read_as!(CachedPod, Pod);

#[cfg(test)]
mod tests {
    use super::*;
    use kube::Resource as _;
    use serde_json::json;

    #[test]
    fn a_cached_pod_is_read_as_a_pod_and_keeps_what_observe_reads() {
        assert_eq!(
            CachedPod::url_path(&(), Some("ml")),
            "/api/v1/namespaces/ml/pods"
        );
        assert_eq!(CachedPod::api_version(&()), "v1");
        let pod: CachedPod = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "mnist-worker-0", "namespace": "ml", "uid": "u",
                "labels": {"training.kubeflow.org/replica-type": "worker"}},
            "spec": {"containers": [{"name": "tensorflow", "image": "tf",
                "env": [{"name": "TF_CONFIG", "value": "{}"}]}], "nodeName": "n"},
            "status": {"phase": "Pending", "reason": "Evicted", "message": "low on memory",
                "podIP": "10.0.0.1", "qosClass": "BestEffort",
                "conditions": [
                    {"type": "Initialized", "status": "True"},
                    {"type": "PodScheduled", "status": "False",
                    "reason": "Unschedulable", "message": "no node",
                    "lastTransitionTime": "2025-01-01T00:00:00Z"}],
                "containerStatuses": [{"name": "tensorflow", "image": "tf", "imageID": "sha",
                    "ready": false, "restartCount": 2,
                    "state": {"terminated": {"exitCode": 3, "reason": "Error"}}}]}
        }))
        .expect("a pod");
        assert_eq!(pod.metadata.name.as_deref(), Some("mnist-worker-0"));
        assert_eq!(
            pod.spec.containers,
            [ContainerName {
                name: "tensorflow".to_owned()
            }]
        );
        assert_eq!(pod.status.phase.as_deref(), Some("Pending"));
        assert_eq!(pod.status.reason.as_deref(), Some("Evicted"));
        assert_eq!(
            pod.status.unscheduled,
            Some(CachedCondition {
                type_: "PodScheduled".to_owned(),
                status: "False".to_owned(),
                reason: Some("Unschedulable".to_owned()),
                message: Some("no node".to_owned()),
            })
        );
        let container = &pod.status.container_statuses.as_ref().expect("statuses")[0];
        assert_eq!(container.restart_count, 2);
        let terminated = container
            .state
            .as_ref()
            .and_then(|state| state.terminated.as_ref());
        assert_eq!(terminated.map(|terminated| terminated.exit_code), Some(3));
    }

    #[test]
    fn a_new_pod_without_spec_or_status_is_read() {
        let pod: CachedPod =
            serde_json::from_value(json!({"metadata": {"name": "p"}})).expect("a pod");
        assert_eq!(pod.status, CachedPodStatus::default());
        assert!(pod.spec.containers.is_empty());
    }

    #[test]
    fn a_scheduled_pod_keeps_no_condition() {
        let pod: CachedPod = serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "status": {"phase": "Running", "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}]}
        }))
        .expect("a pod");
        assert_eq!(pod.status.unscheduled, None);
        let pod: CachedPod = serde_json::from_value(json!({
            "metadata": {"name": "p"}, "status": {"conditions": null}
        }))
        .expect("a pod");
        assert_eq!(pod.status.unscheduled, None);
    }
}
