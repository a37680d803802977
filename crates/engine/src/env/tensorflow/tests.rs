//! Tests of the TensorFlow environment: its variables, and where they land in the pods built
//! for a job.

use super::*;
use crate::objects::{BuildOptions, build_pod};
use crate::test_jobs::{container_env, containers, load_job};

const FULL_JOB: &str = r"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: j, namespace: ns}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
    PS:
      replicas: 2
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
    Chief:
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
    Evaluator:
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
";

fn dynamic(yaml: &str) -> String {
    yaml.replace(
        "spec:\n  tfReplicaSpecs:",
        "spec:\n  enableDynamicWorker: true\n  tfReplicaSpecs:",
    )
}

fn config(job: &TrainingJob, replica_type: &ReplicaType, index: i32) -> String {
    tf_config(job, replica_type, index, &Addressing::default()).expect("job is distributed")
}

#[test]
fn tf_config_lists_every_replica_type_sorted() {
    let job = load_job(FULL_JOB);
    assert_eq!(
        config(&job, &ReplicaType::Worker, 1),
        r#"{"cluster":{"chief":["j-chief-0.ns.svc:2222"],"evaluator":["j-evaluator-0.ns.svc:2222"],"ps":["j-ps-0.ns.svc:2222","j-ps-1.ns.svc:2222"],"worker":["j-worker-0.ns.svc:2222","j-worker-1.ns.svc:2222"]},"task":{"type":"worker","index":1},"environment":"cloud"}"#
    );
}

#[test]
fn tf_config_task_is_lowercase_type_and_index() {
    let job = load_job(FULL_JOB);
    assert_eq!(
        config(&job, &ReplicaType::PS, 1),
        r#"{"cluster":{"chief":["j-chief-0.ns.svc:2222"],"evaluator":["j-evaluator-0.ns.svc:2222"],"ps":["j-ps-0.ns.svc:2222","j-ps-1.ns.svc:2222"],"worker":["j-worker-0.ns.svc:2222","j-worker-1.ns.svc:2222"]},"task":{"type":"ps","index":1},"environment":"cloud"}"#
    );
    assert_eq!(
        config(&job, &ReplicaType::Chief, 0),
        r#"{"cluster":{"chief":["j-chief-0.ns.svc:2222"],"evaluator":["j-evaluator-0.ns.svc:2222"],"ps":["j-ps-0.ns.svc:2222","j-ps-1.ns.svc:2222"],"worker":["j-worker-0.ns.svc:2222","j-worker-1.ns.svc:2222"]},"task":{"type":"chief","index":0},"environment":"cloud"}"#
    );
    assert_eq!(
        config(&job, &ReplicaType::Evaluator, 0),
        r#"{"cluster":{"chief":["j-chief-0.ns.svc:2222"],"evaluator":["j-evaluator-0.ns.svc:2222"],"ps":["j-ps-0.ns.svc:2222","j-ps-1.ns.svc:2222"],"worker":["j-worker-0.ns.svc:2222","j-worker-1.ns.svc:2222"]},"task":{"type":"evaluator","index":0},"environment":"cloud"}"#
    );
}

#[test]
fn tf_config_lists_master_like_any_type() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: j, namespace: ns}
spec:
  tfReplicaSpecs:
    Master:
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
    Worker:
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
",
    );
    assert_eq!(
        config(&job, &ReplicaType::Master, 0),
        r#"{"cluster":{"master":["j-master-0.ns.svc:2222"],"worker":["j-worker-0.ns.svc:2222"]},"task":{"type":"master","index":0},"environment":"cloud"}"#
    );
}

#[test]
fn tf_config_uses_each_types_tfjob_port() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: j}
spec:
  tfReplicaSpecs:
    PS:
      template:
        spec:
          containers:
          - {name: tensorflow, image: tf, ports: [{name: tfjob-port, containerPort: 3000}]}
    Worker:
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
",
    );
    assert_eq!(
        config(&job, &ReplicaType::Worker, 0),
        r#"{"cluster":{"ps":["j-ps-0.default.svc:3000"],"worker":["j-worker-0.default.svc:2222"]},"task":{"type":"worker","index":0},"environment":"cloud"}"#
    );
}

#[test]
fn tf_config_with_cluster_domain() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: j, namespace: ns}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
",
    );
    let addressing = Addressing::Cluster {
        cluster_domain: Some("cluster.local".into()),
    };
    assert_eq!(
        tf_config(&job, &ReplicaType::Worker, 0, &addressing).as_deref(),
        Some(
            r#"{"cluster":{"worker":["j-worker-0.ns.svc.cluster.local:2222","j-worker-1.ns.svc.cluster.local:2222"]},"task":{"type":"worker","index":0},"environment":"cloud"}"#
        )
    );
}

#[test]
fn tf_config_with_loopback_addresses() {
    let job = load_job(FULL_JOB);
    let ports = [
        ((ReplicaType::Chief, 0), 40_000),
        ((ReplicaType::Evaluator, 0), 40_001),
        ((ReplicaType::PS, 0), 40_002),
        ((ReplicaType::PS, 1), 40_003),
        ((ReplicaType::Worker, 0), 40_004),
        ((ReplicaType::Worker, 1), 40_005),
    ];
    let addressing = Addressing::Loopback {
        ports: ports.into_iter().collect(),
    };
    assert_eq!(
        tf_config(&job, &ReplicaType::PS, 0, &addressing).as_deref(),
        Some(
            r#"{"cluster":{"chief":["127.0.0.1:40000"],"evaluator":["127.0.0.1:40001"],"ps":["127.0.0.1:40002","127.0.0.1:40003"],"worker":["127.0.0.1:40004","127.0.0.1:40005"]},"task":{"type":"ps","index":0},"environment":"cloud"}"#
        )
    );
}

#[test]
fn tf_config_replica_type_with_zero_replicas_is_an_empty_list() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: j, namespace: ns}
spec:
  tfReplicaSpecs:
    PS:
      replicas: 0
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
",
    );
    assert!(config(&job, &ReplicaType::Worker, 0).starts_with(r#"{"cluster":{"ps":[],"worker":["#));
}

#[test]
fn tf_config_not_injected_for_single_replica() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: j}
spec:
  tfReplicaSpecs:
    Worker:
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
",
    );
    assert!(!is_distributed(job.replica_specs()));
    let pod =
        build_pod(&job, &ReplicaType::Worker, 0, &BuildOptions::default()).expect("Worker exists");
    assert_eq!(containers(&pod)[0].env, None);
}

#[test]
fn tf_config_only_in_first_container_named_tensorflow() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: j}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: sidecar, image: s}
          - {name: tensorflow, image: tf, env: [{name: USER_VAR, value: x}]}
",
    );
    let pod =
        build_pod(&job, &ReplicaType::Worker, 0, &BuildOptions::default()).expect("Worker exists");
    assert_eq!(containers(&pod)[0].env, None);
    let env = container_env(&pod, "tensorflow");
    assert_eq!(env.len(), 2);
    assert_eq!(
        env[0],
        ("USER_VAR".to_owned(), "x".to_owned()),
        "user env comes first"
    );
    assert_eq!(env[1].0, "TF_CONFIG");
    assert_eq!(env[1].1, config(&job, &ReplicaType::Worker, 0));
}

/// The `allreduce-tfjob` seed: the chief declares its own `TF_CONFIG` from a `fieldRef`.
/// Upstream appended its own after it and the kubelet took the last; the pod carries ours
/// once, at the end, and the user's other variables keep their order.
#[test]
fn tf_config_replaces_a_templates_own() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: allreduce, namespace: ns}
spec:
  tfReplicaSpecs:
    Chief:
      template:
        spec:
          containers:
          - name: tensorflow
            image: tf
            env:
            - name: BEFORE
              value: b
            - name: TF_CONFIG
              valueFrom: {fieldRef: {fieldPath: 'metadata.annotations[''kubeflow.org/tf-job-config'']'}}
            - {name: AFTER, value: a}
    Worker:
      replicas: 4
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
",
    );
    let pod =
        build_pod(&job, &ReplicaType::Chief, 0, &BuildOptions::default()).expect("Chief exists");
    let env = containers(&pod)[0].env.clone().unwrap_or_default();
    let names: Vec<&str> = env.iter().map(|var| var.name.as_str()).collect();
    assert_eq!(names, ["BEFORE", "AFTER", "TF_CONFIG"]);
    assert_eq!(env[2].value_from, None);
    assert_eq!(
        env[2].value.as_deref(),
        Some(config(&job, &ReplicaType::Chief, 0).as_str())
    );
}

const DYNAMIC_NO_PS: &str = r"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: j, namespace: ns}
spec:
  tfReplicaSpecs:
    Chief:
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
";

#[test]
fn sparse_tf_config_worker_sees_itself_and_every_ps() {
    let job = load_job(&dynamic(FULL_JOB));
    assert_eq!(
        config(&job, &ReplicaType::Worker, 1),
        r#"{"cluster":{"worker":{"1":"j-worker-1.ns.svc:2222"},"ps":["j-ps-0.ns.svc:2222","j-ps-1.ns.svc:2222"]},"task":{"type":"worker","index":1}}"#
    );
}

#[test]
fn sparse_tf_config_ps_sees_only_itself() {
    let job = load_job(&dynamic(FULL_JOB));
    assert_eq!(
        config(&job, &ReplicaType::PS, 1),
        r#"{"cluster":{"worker":{},"ps":["j-ps-1.ns.svc:2222"]},"task":{"type":"ps","index":1}}"#
    );
}

#[test]
fn sparse_tf_config_other_types_see_nothing() {
    let job = load_job(&dynamic(FULL_JOB));
    assert_eq!(
        config(&job, &ReplicaType::Chief, 0),
        r#"{"cluster":{"worker":{},"ps":[]},"task":{"type":"chief","index":0}}"#
    );
    assert_eq!(
        config(&job, &ReplicaType::Evaluator, 0),
        r#"{"cluster":{"worker":{},"ps":[]},"task":{"type":"evaluator","index":0}}"#
    );
}

#[test]
fn sparse_tf_config_worker_without_ps_gets_ps_null_as_upstream_writes_it() {
    let job = load_job(&dynamic(DYNAMIC_NO_PS));
    assert_eq!(
        config(&job, &ReplicaType::Worker, 0),
        r#"{"cluster":{"worker":{"0":"j-worker-0.ns.svc:2222"},"ps":null},"task":{"type":"worker","index":0}}"#
    );
    // The other types start from an empty list, as upstream's do.
    assert_eq!(
        config(&job, &ReplicaType::Chief, 0),
        r#"{"cluster":{"worker":{},"ps":[]},"task":{"type":"chief","index":0}}"#
    );
}

#[test]
fn sparse_tf_config_worker_with_zero_ps_replicas_gets_an_empty_ps_list() {
    // Upstream's cluster map has a `ps` key with an empty, non-nil list here.
    let yaml = DYNAMIC_NO_PS.to_owned()
        + "    PS:\n      replicas: 0\n      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n";
    let job = load_job(&dynamic(&yaml));
    assert_eq!(
        config(&job, &ReplicaType::Worker, 1),
        r#"{"cluster":{"worker":{"1":"j-worker-1.ns.svc:2222"},"ps":[]},"task":{"type":"worker","index":1}}"#
    );
}

#[test]
fn sparse_tf_config_with_loopback_addresses() {
    let job = load_job(&dynamic(FULL_JOB));
    let addressing = Addressing::Loopback {
        ports: [
            ((ReplicaType::Worker, 0), 40_100),
            ((ReplicaType::PS, 0), 40_200),
        ]
        .into_iter()
        .collect(),
    };
    assert_eq!(
        tf_config(&job, &ReplicaType::Worker, 0, &addressing).as_deref(),
        Some(
            r#"{"cluster":{"worker":{"0":"127.0.0.1:40100"},"ps":["127.0.0.1:40200","127.0.0.1:2222"]},"task":{"type":"worker","index":0}}"#
        )
    );
}
