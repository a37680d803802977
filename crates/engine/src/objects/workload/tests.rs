//! Tests of the Workload and the pods' scheduling group under Kubernetes' own gang scheduling.

use serde_json::json;
use trainctl_api::ReplicaType;

use crate::objects::podgroup::GangScheduler;
use crate::objects::{BuildOptions, build_objects, build_pod};
use crate::test_jobs::load_job;

const JOB: &str = r"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: a
  namespace: team
  uid: '42'
  annotations: {team: vision}
spec:
  runPolicy:
    schedulingPolicy: {minAvailable: 3, queue: ignored, priorityClass: ignored}
  pytorchReplicaSpecs:
    Master:
      template: {spec: {containers: [{name: pytorch, image: t}]}}
    Worker:
      replicas: 3
      template: {spec: {schedulerName: mine, containers: [{name: pytorch, image: t}]}}
";

fn kubernetes() -> BuildOptions {
    BuildOptions {
        gang_scheduler: Some("kubernetes".to_owned()),
        ..BuildOptions::default()
    }
}

fn owner() -> serde_json::Value {
    json!([{
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "a", "uid": "42",
        "controller": true, "blockOwnerDeletion": true,
    }])
}

#[test]
fn kubernetes_is_its_own_gang_scheduler_and_other_names_stay_scheduler_plugins() {
    assert_eq!(
        GangScheduler::from_name("kubernetes"),
        Some(GangScheduler::Kubernetes)
    );
    assert_eq!(
        GangScheduler::from_name("default-scheduler"),
        Some(GangScheduler::SchedulerPlugins(
            "default-scheduler".to_owned()
        ))
    );
}

#[test]
fn the_workload_names_the_job_and_holds_one_gang_template() {
    let objects = build_objects(&load_job(JOB), &kubernetes());
    assert_eq!(
        serde_json::to_value(objects.workload.expect("a Workload")).expect("serializable"),
        json!({
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "Workload",
            "metadata": {"name": "a", "namespace": "team", "ownerReferences": owner()},
            "spec": {
                "controllerRef": {"apiGroup": "kubeflow.org", "kind": "PyTorchJob", "name": "a"},
                "podGroupTemplates": [
                    {"name": "replicas", "schedulingPolicy": {"gang": {"minCount": 3}}}
                ]
            }
        })
    );
}

#[test]
fn the_pod_group_is_made_from_the_template_with_its_policy_copied() {
    let objects = build_objects(&load_job(JOB), &kubernetes());
    assert_eq!(
        serde_json::to_value(objects.pod_group.expect("a PodGroup")).expect("serializable"),
        json!({
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {
                "name": "a", "namespace": "team", "annotations": {"team": "vision"},
                "ownerReferences": owner()
            },
            "spec": {
                "podGroupTemplateRef": {
                    "workload": {"workloadName": "a", "podGroupTemplateName": "replicas"}
                },
                "schedulingPolicy": {"gang": {"minCount": 3}}
            }
        })
    );
}

#[test]
fn min_count_is_every_replica_without_min_available_and_basic_for_min_available_0() {
    let every = load_job(&JOB.replace("minAvailable: 3, ", ""));
    assert_eq!(
        serde_json::to_value(super::scheduling_policy(&every)).expect("serializable"),
        json!({"gang": {"minCount": 4}})
    );
    let none = load_job(&JOB.replace("minAvailable: 3", "minAvailable: 0"));
    assert_eq!(
        serde_json::to_value(super::scheduling_policy(&none)).expect("serializable"),
        json!({"basic": {}})
    );
}

#[test]
fn pods_name_the_group_and_keep_their_scheduler() {
    let job = load_job(JOB);
    let master = build_pod(&job, &ReplicaType::Master, 0, &kubernetes()).expect("a Master");
    let spec = serde_json::to_value(master.spec).expect("serializable");
    assert_eq!(spec["schedulingGroup"], json!({"podGroupName": "a"}));
    assert_eq!(spec.get("schedulerName"), None, "the default scheduler");
    let worker = build_pod(&job, &ReplicaType::Worker, 2, &kubernetes()).expect("a Worker");
    let spec = worker.spec.expect("a spec");
    assert_eq!(spec.scheduler_name.as_deref(), Some("mine"));
    assert_eq!(
        spec.scheduling_group.and_then(|group| group.pod_group_name),
        Some("a".to_owned())
    );
    assert_eq!(
        master
            .metadata
            .labels
            .map(|l| l.contains_key("scheduling.x-k8s.io/pod-group")),
        Some(false)
    );
}

#[test]
fn other_gang_schedulers_get_no_workload() {
    for name in ["volcano", "coscheduler"] {
        let options = BuildOptions {
            gang_scheduler: Some(name.to_owned()),
            ..BuildOptions::default()
        };
        assert_eq!(build_objects(&load_job(JOB), &options).workload, None);
    }
}
