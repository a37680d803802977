//! Tests of the PodGroup: its body under each gang scheduler, and how it marks the pods.

use super::*;
use crate::objects::{BuildOptions, build_objects, build_pod};
use crate::test_jobs::load_job;
use serde_json::json;

const JOB: &str = r"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: pt
  namespace: ns
  uid: '1234'
  annotations: {team: vision}
spec:
  runPolicy:
    schedulingPolicy: {queue: gpu, priorityClass: high, scheduleTimeoutSeconds: 120}
  pytorchReplicaSpecs:
    Master:
      template:
        spec:
          containers:
          - {name: pytorch, image: t, resources: {requests: {cpu: 500m, memory: 1Gi}, limits: {nvidia.com/gpu: 1}}}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: pytorch, image: t, resources: {limits: {cpu: 2, memory: 512Mi, nvidia.com/gpu: 1}}}
";

fn owner() -> serde_json::Value {
    json!([{
        "apiVersion": "kubeflow.org/v1",
        "blockOwnerDeletion": true,
        "controller": true,
            "kind": "PyTorchJob",
        "name": "pt",
        "uid": "1234"
    }])
}

fn gang(name: &str) -> BuildOptions {
    BuildOptions {
        gang_scheduler: Some(name.to_owned()),
        ..BuildOptions::default()
    }
}

#[test]
fn volcano_pod_group_body() {
    let job = load_job(JOB);
    let group = build_objects(&job, &gang("volcano"))
        .pod_group
        .expect("gang scheduling is on");
    assert_eq!(
        serde_json::to_value(&group).expect("serializable"),
        json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {
                "annotations": {"team": "vision"},
                "name": "pt",
                "namespace": "ns",
                "ownerReferences": owner()
            },
            "spec": {
                "minMember": 3,
                    "queue": "gpu",
                "priorityClassName": "high",
                "minResources": {"cpu": "4500m", "memory": "2Gi", "nvidia.com/gpu": "3"}
            }
        })
    );
}

#[test]
fn scheduler_plugins_pod_group_body() {
    let job = load_job(JOB);
    let group = build_objects(&job, &gang("scheduler-plugins-scheduler"))
        .pod_group
        .expect("gang scheduling is on");
    assert_eq!(
        serde_json::to_value(&group).expect("serializable"),
        json!({
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {
                "annotations": {"team": "vision"},
                "name": "pt",
                "namespace": "ns",
                "ownerReferences": owner()
            },
            "spec": {
                "minMember": 3,
                    "minResources": {"cpu": "4500m", "memory": "2Gi", "nvidia.com/gpu": "3"},
                "scheduleTimeoutSeconds": 120
            }
        })
    );
}

#[test]
fn no_pod_group_without_gang_scheduler() {
    let job = load_job(JOB);
    assert_eq!(
        build_objects(&job, &BuildOptions::default()).pod_group,
        None
    );
    assert_eq!(build_objects(&job, &gang("")).pod_group, None);
}

#[test]
fn min_member_is_min_available_and_min_resources_count_that_many_pods() {
    let job = load_job(&JOB.replace("{queue: gpu,", "{minAvailable: 2, queue: gpu,"));
    assert_eq!(min_member(&job), 2);
    let resources = min_resources(&job, 2);
    assert_eq!(resources.get("cpu"), Some(&Quantity("2500m".into())));
    assert_eq!(resources.get("nvidia.com/gpu"), Some(&Quantity("2".into())));
}

#[test]
fn min_resources_from_scheduling_policy_win() {
    let job = load_job(&JOB.replace("{queue: gpu,", "{minResources: {cpu: 10}, queue: gpu,"));
    assert_eq!(
        min_resources(&job, 3),
        BTreeMap::from([("cpu".to_owned(), Quantity("10".into()))])
    );
}

#[test]
fn volcano_queue_defaults_to_default() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: JAXJob
metadata: {name: jx}
spec:
  jaxReplicaSpecs:
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: jax, image: j}]}}
",
    );
    let group = build_pod_group(&job, &GangScheduler::Volcano);
    assert_eq!(
        serde_json::to_value(&group).expect("serializable")["spec"],
        json!({"minMember": 2, "queue": "default"})
    );
}

#[test]
fn volcano_pods_get_scheduler_name_and_group_annotations() {
    let job = load_job(JOB);
    let pod = build_pod(&job, &ReplicaType::Worker, 1, &gang("volcano")).expect("Worker exists");
    assert_eq!(
        pod.spec.as_ref().and_then(|s| s.scheduler_name.as_deref()),
        Some("volcano")
    );
    let annotations = pod.metadata.annotations.unwrap_or_default();
    assert_eq!(
        annotations
            .get("scheduling.k8s.io/group-name")
            .map(String::as_str),
        Some("pt")
    );
    assert_eq!(
        annotations.get("volcano.sh/task-spec").map(String::as_str),
        Some("worker")
    );
}

#[test]
fn scheduler_plugins_pods_get_scheduler_name_and_group_label() {
    let job = load_job(JOB);
    let pod =
        build_pod(&job, &ReplicaType::Master, 0, &gang("coscheduler")).expect("Master exists");
    assert_eq!(
        pod.spec.as_ref().and_then(|s| s.scheduler_name.as_deref()),
        Some("coscheduler")
    );
    let labels = pod.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels
            .get("scheduling.x-k8s.io/pod-group")
            .map(String::as_str),
        Some("pt")
    );
    assert_eq!(pod.metadata.annotations, None);
}

#[test]
fn template_scheduler_name_is_kept_under_gang_scheduling() {
    let job = load_job(&JOB.replace(
        "      replicas: 2\n      template:\n        spec:\n",
        "      replicas: 2\n      template:\n        spec:\n          schedulerName: mine\n",
    ));
    let pod = build_pod(&job, &ReplicaType::Worker, 0, &gang("volcano")).expect("Worker exists");
    assert_eq!(
        pod.spec.as_ref().and_then(|s| s.scheduler_name.as_deref()),
        Some("mine")
    );
}
