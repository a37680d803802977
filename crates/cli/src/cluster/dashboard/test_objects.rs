//! The cluster's objects the dashboard's tests read, as the API server sends them: the TFJob
//! `ml/mnist` and its pods.

use k8s_openapi::api::core::v1::Pod;
use kube::api::DynamicObject;
use serde_json::{Value, json};
use trainctl_api::JobKind;
use trainctl_operator::job::RETIRED_RESTARTS_ANNOTATION;

use crate::cluster::ClusterJob;

/// The uid of `ml/mnist`.
pub const JOB_UID: &str = "uid-of-mnist";

/// A replica spec of `replicas` TensorFlow containers, each asking for `gpus` GPUs.
fn replica_spec(replicas: i32, gpus: u32) -> Value {
    json!({
        "replicas": replicas,
        "template": {"spec": {"containers": [{
            "name": "tensorflow",
            "image": "busybox:1.36",
            "ports": [{"name": "tfjob-port", "containerPort": 2222}],
            "resources": {"limits": {"nvidia.com/gpu": gpus.to_string()}},
        }]}},
    })
}

/// The TFJob `ml/mnist` (a chief and two workers, each asking for one GPU) with `status`, as
/// stored: with `managedFields`, and 4 restarts of pods already replaced.
pub fn tfjob_object(status: &Value) -> Value {
    json!({
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {
            "name": "mnist",
            "namespace": "ml",
            "uid": JOB_UID,
            "creationTimestamp": "2026-01-02T03:00:00Z",
            "annotations": {RETIRED_RESTARTS_ANNOTATION: "4"},
            "managedFields": [{"manager": "trainctl-cli", "operation": "Update"}],
        },
        "spec": {"tfReplicaSpecs": {"Chief": replica_spec(1, 1), "Worker": replica_spec(2, 1)}},
        "status": status,
    })
}

/// [`tfjob_object`], read.
pub fn tfjob(status: &Value) -> ClusterJob {
    let object: DynamicObject =
        serde_json::from_value(tfjob_object(status)).expect("a TFJob object");
    ClusterJob::read(JobKind::TFJob, object).expect("the TFJob reads")
}

/// The pod of `replica` (`("worker", 1)`) controlled by `owner`, in `phase`, its `tensorflow`
/// container's status `container` (`state`, `lastState`, `restartCount`), `ready` or not.
pub fn pod_object(
    replica: (&str, i32),
    owner: &str,
    phase: &str,
    container: &Value,
    ready: bool,
) -> Value {
    let (replica_type, index) = replica;
    let mut status = json!({
        "name": "tensorflow",
        "image": "busybox:1.36",
        "imageID": "",
        "ready": ready,
        "restartCount": 0,
    });
    for (key, value) in container.as_object().expect("an object") {
        status[key] = value.clone();
    }
    let name = format!("mnist-{replica_type}-{index}");
    json!({
        "metadata": {
            "name": name,
            "namespace": "ml",
            "uid": format!("uid-of-{name}"),
            "labels": {
                "training.kubeflow.org/job-name": "mnist",
                "training.kubeflow.org/operator-name": "tfjob-controller",
                "training.kubeflow.org/replica-type": replica_type,
                "training.kubeflow.org/replica-index": index.to_string(),
            },
            "ownerReferences": [{
                "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist",
                "uid": owner, "controller": true,
            }],
        },
        "spec": {
            "nodeName": "node-0",
            "containers": [{
                "name": "tensorflow",
                "image": "busybox:1.36",
                "ports": [{"name": "tfjob-port", "containerPort": 2222}],
                "resources": {"limits": {"nvidia.com/gpu": "1"}},
            }],
        },
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
            "containerStatuses": if phase == "Pending" { json!([]) } else { json!([status]) },
        },
    })
}

/// [`pod_object`], read.
pub fn pod(replica: (&str, i32), owner: &str, phase: &str, container: &Value, ready: bool) -> Pod {
    serde_json::from_value(pod_object(replica, owner, phase, container, ready)).expect("a pod")
}

/// A container status that runs since `time`.
pub fn running_since(time: &str) -> Value {
    json!({"state": {"running": {"startedAt": time}}})
}
