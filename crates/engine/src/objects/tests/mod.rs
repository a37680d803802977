//! Tests of the object builder: names, labels, owner references, restart policies and services
//! here; MPI plumbing and every fixture manifest in the submodules.

mod fixtures;
mod mpi_job;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use trainctl_api::{ReplicaType, TrainingJob};

use super::*;
use crate::addressing::Addressing;
use crate::test_jobs::{containers, env_pairs, load_job};

const TF_JOB: &str = r"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: mnist, namespace: ml, uid: abc-123}
spec:
  tfReplicaSpecs:
    PS:
      template: {spec: {containers: [{name: tensorflow, image: 'tf:2'}]}}
    Worker:
      replicas: 2
      restartPolicy: ExitCode
      template:
        metadata:
          labels: {app: mnist, training.kubeflow.org/replica-index: '9'}
          annotations: {note: kept}
        spec:
          containers:
          - name: tensorflow
            image: 'tf:2'
            ports: [{name: metrics, containerPort: 8080}]
";

const MPI_JOB: &str = r"
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: pi, namespace: ns, uid: u-1}
spec:
  slotsPerWorker: 2
  mpiReplicaSpecs:
    Launcher:
      template:
        spec:
          containers:
          - {name: mpi, image: 'mpi:1', command: [mpirun, python, pi.py]}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: mpi, image: 'mpi:1'}]}}
";

fn to_json<T: serde::Serialize>(object: &T) -> Value {
    serde_json::to_value(object).expect("Kubernetes objects serialize")
}

fn pod(job: &TrainingJob, replica_type: &ReplicaType, index: i32) -> Pod {
    build_pod(job, replica_type, index, &BuildOptions::default())
        .expect("the job has this replica type")
}

fn owner(kind: &str, name: &str, uid: &str) -> Value {
    json!([{
        "apiVersion": "kubeflow.org/v1",
        "blockOwnerDeletion": true,
        "controller": true,
        "kind": kind,
        "name": name,
        "uid": uid
    }])
}

fn loopback_options(job: &TrainingJob) -> BuildOptions {
    let ports = replica_slots(job)
        .into_iter()
        .zip(40_000_u16..)
        .collect::<BTreeMap<_, _>>();
    BuildOptions {
        addressing: Addressing::Loopback { ports },
        ..BuildOptions::default()
    }
}

#[test]
fn pod_carries_name_namespace_labels_annotations_owner_and_env() {
    let job = load_job(TF_JOB);
    assert_eq!(
        to_json(&pod(&job, &ReplicaType::Worker, 1)),
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "annotations": {"note": "kept"},
                "labels": {
                    "app": "mnist",
                    "training.kubeflow.org/job-name": "mnist",
                    "training.kubeflow.org/operator-name": "tfjob-controller",
                    "training.kubeflow.org/replica-index": "1",
                    "training.kubeflow.org/replica-type": "worker"
                },
                "name": "mnist-worker-1",
                "namespace": "ml",
                "ownerReferences": owner("TFJob", "mnist", "abc-123")
            },
            "spec": {
                "containers": [{
                    "env": [{
                        "name": "TF_CONFIG",
                        "value": r#"{"cluster":{"ps":["mnist-ps-0.ml.svc:2222"],"worker":["mnist-worker-0.ml.svc:2222","mnist-worker-1.ml.svc:2222"]},"task":{"type":"worker","index":1},"environment":"cloud"}"#
                    }],
                    "image": "tf:2",
                    "name": "tensorflow",
                    "ports": [
                        {"containerPort": 8080, "name": "metrics"},
                        {"containerPort": 2222, "name": "tfjob-port"}
                    ]
                }],
                "restartPolicy": "Never"
            }
        })
    );
}

#[test]
fn our_labels_win_over_template_labels() {
    let job = load_job(TF_JOB);
    let labels = pod(&job, &ReplicaType::Worker, 0)
        .metadata
        .labels
        .unwrap_or_default();
    assert_eq!(
        labels
            .get("training.kubeflow.org/replica-index")
            .map(String::as_str),
        Some("0")
    );
    assert_eq!(labels.get("app").map(String::as_str), Some("mnist"));
    assert_eq!(
        labels
            .get("training.kubeflow.org/job-role")
            .map(String::as_str),
        Some("master")
    );
}

#[test]
fn owner_reference_uid_is_empty_when_job_has_none() {
    let job = load_job(&TF_JOB.replace(", uid: abc-123", ""));
    assert_eq!(
        to_json(&pod(&job, &ReplicaType::PS, 0))["metadata"]["ownerReferences"],
        owner("TFJob", "mnist", "")
    );
}

#[test]
fn pod_namespace_defaults_to_default() {
    let job = load_job(&TF_JOB.replace(", namespace: ml", ""));
    assert_eq!(
        pod(&job, &ReplicaType::PS, 0).metadata.namespace.as_deref(),
        Some("default")
    );
}

#[test]
fn exit_code_policy_maps_to_pod_restart_never() {
    let job = load_job(TF_JOB);
    let spec = pod(&job, &ReplicaType::Worker, 0)
        .spec
        .expect("pods have a spec");
    assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
}

#[test]
fn pod_restart_policy_is_the_replica_policy() {
    use trainctl_api::RestartPolicy::{Always, ExitCode, Never, OnFailure};
    assert_eq!(pod_restart_policy(Always), "Always");
    assert_eq!(pod_restart_policy(OnFailure), "OnFailure");
    assert_eq!(pod_restart_policy(Never), "Never");
    assert_eq!(pod_restart_policy(ExitCode), "Never");
}

#[test]
fn template_restart_policy_is_overwritten_by_the_replica_policy() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Worker:
      template: {spec: {restartPolicy: Always, containers: [{name: pytorch, image: t}]}}
",
    );
    let spec = pod(&job, &ReplicaType::Worker, 0)
        .spec
        .expect("pods have a spec");
    assert_eq!(spec.restart_policy.as_deref(), Some("OnFailure"));
}

#[test]
fn build_pod_of_a_missing_replica_type_is_none() {
    let job = load_job(TF_JOB);
    assert_eq!(
        build_pod(&job, &ReplicaType::Chief, 0, &BuildOptions::default()),
        None
    );
    assert_eq!(build_service(&job, &ReplicaType::Chief, 0), None);
}

#[test]
fn service_is_headless_with_pod_labels_minus_job_role() {
    let job = load_job(TF_JOB);
    let labels = json!({
        "training.kubeflow.org/job-name": "mnist",
        "training.kubeflow.org/operator-name": "tfjob-controller",
        "training.kubeflow.org/replica-index": "0",
        "training.kubeflow.org/replica-type": "worker"
    });
    assert_eq!(
        to_json(&build_service(&job, &ReplicaType::Worker, 0).expect("TF has services")),
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "labels": labels,
                "name": "mnist-worker-0",
                "namespace": "ml",
                "ownerReferences": owner("TFJob", "mnist", "abc-123")
            },
            "spec": {
                "clusterIP": "None",
                "ports": [{"name": "metrics", "port": 8080}, {"name": "tfjob-port", "port": 2222}],
                "selector": labels
            }
        })
    );
}

#[test]
fn service_ports_sorted_by_name() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: JAXJob
metadata: {name: jx}
spec:
  jaxReplicaSpecs:
    Worker:
      template:
        spec:
          containers:
          - name: jax
            image: j
            ports: [{name: zeta, containerPort: 1}, {name: alpha, containerPort: 2}]
          - name: sidecar
            image: s
            ports: [{name: beta, containerPort: 3}]
",
    );
    let service = build_service(&job, &ReplicaType::Worker, 0).expect("JAX has services");
    let ports: Vec<(Option<String>, i32)> = service
        .spec
        .and_then(|s| s.ports)
        .unwrap_or_default()
        .into_iter()
        .map(|p| (p.name, p.port))
        .collect();
    assert_eq!(
        ports,
        [
            (Some("alpha".to_owned()), 2),
            (Some("jaxjob-port".to_owned()), 6666),
            (Some("zeta".to_owned()), 1)
        ]
    );
}

#[test]
fn every_replica_type_gets_services() {
    let job = load_job(TF_JOB);
    let objects = build_objects(&job, &BuildOptions::default());
    let names: Vec<_> = objects
        .services
        .iter()
        .filter_map(|s| s.metadata.name.clone())
        .collect();
    assert_eq!(names, ["mnist-ps-0", "mnist-worker-0", "mnist-worker-1"]);
}

#[test]
fn objects_come_in_canonical_type_order_and_index_order() {
    let job = load_job(TF_JOB);
    let objects = build_objects(&job, &BuildOptions::default());
    let names: Vec<_> = objects
        .pods
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    assert_eq!(names, ["mnist-ps-0", "mnist-worker-0", "mnist-worker-1"]);
    assert!(objects.config_maps.is_empty());
    assert!(
        objects.service_accounts.is_empty()
            && objects.roles.is_empty()
            && objects.role_bindings.is_empty()
    );
}

#[test]
fn build_objects_is_deterministic() {
    let job = load_job(TF_JOB);
    let options = BuildOptions {
        gang_scheduler: Some("volcano".into()),
        ..BuildOptions::default()
    };
    assert_eq!(build_objects(&job, &options), build_objects(&job, &options));
}
