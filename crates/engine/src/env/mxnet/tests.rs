//! Tests of the MXNet environment: `MX_CONFIG` byte for byte, the `DMLC_*` variables of each
//! role, and where they land in the pods built for a job.

use std::collections::BTreeMap;

use super::*;
use crate::objects::{BuildOptions, build_pod};
use crate::test_jobs::{container_env, env_pairs, load_job, pairs};

/// A training job: its Server declares its own port, the others get the default (9091).
const TRAIN: &str = r"
apiVersion: kubeflow.org/v1
kind: MXJob
metadata: {name: mx, namespace: ns}
spec:
  jobMode: MXTrain
  mxReplicaSpecs:
    Scheduler:
      template: {spec: {containers: [{name: mxnet, image: m}]}}
    Server:
      replicas: 2
      template:
        spec:
          containers:
          - {name: mxnet, image: m, ports: [{name: mxjob-port, containerPort: 9500}]}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: mxnet, image: m}]}}
";

/// A tuning job, as upstream's auto-tuning example: the tuner servers register under a key.
const TUNE: &str = r"
apiVersion: kubeflow.org/v1
kind: MXJob
metadata: {name: tvm, namespace: ns}
spec:
  jobMode: MXTune
  mxReplicaSpecs:
    TunerTracker:
      template: {spec: {containers: [{name: mxnet, image: t}]}}
    TunerServer:
      template:
        metadata: {annotations: {tuner-server-key: gpu-<1080ti>&co}}
        spec: {containers: [{name: mxnet, image: t}]}
    Tuner:
      template: {spec: {containers: [{name: mxnet, image: t}]}}
";

const TRAIN_CLUSTER: &str = r#"{"cluster":{"scheduler":[{"url":"mx-scheduler-0","port":9091}],"server":[{"url":"mx-server-0","port":9500},{"url":"mx-server-1","port":9500}],"worker":[{"url":"mx-worker-0","port":9091},{"url":"mx-worker-1","port":9091}]},"labels":{"scheduler":"","server":"","worker":""},"task":"#;

fn env(yaml: &str, replica_type: &ReplicaType, index: i32) -> Vec<(String, String)> {
    let job = load_job(yaml);
    let cluster = ClusterConfig::new(&job, &Addressing::default());
    env_pairs(&cluster.env_vars(replica_type, index))
}

#[test]
fn mx_config_lists_every_type_by_service_name_sorted_with_labels_and_task() {
    let job = load_job(TRAIN);
    let cluster = ClusterConfig::new(&job, &Addressing::default());
    assert_eq!(
        cluster.mx_config(&ReplicaType::Worker, 1),
        format!(r#"{TRAIN_CLUSTER}{{"type":"worker","index":1}}}}"#)
    );
    assert_eq!(
        cluster.mx_config(&ReplicaType::Scheduler, 0),
        format!(r#"{TRAIN_CLUSTER}{{"type":"scheduler","index":0}}}}"#)
    );
}

#[test]
fn a_worker_gets_mx_config_the_scheduler_and_its_worker_id() {
    let config = format!(r#"{TRAIN_CLUSTER}{{"type":"worker","index":1}}}}"#);
    assert_eq!(
        env(TRAIN, &ReplicaType::Worker, 1),
        pairs(&[
            ("MX_CONFIG", &config),
            ("DMLC_PS_ROOT_PORT", "9091"),
            ("DMLC_PS_ROOT_URI", "mx-scheduler-0"),
            ("DMLC_NUM_SERVER", "2"),
            ("DMLC_NUM_WORKER", "2"),
            ("DMLC_ROLE", "worker"),
            ("DMLC_USE_KUBERNETES", "1"),
            ("DMLC_WORKER_ID", "1"),
        ])
    );
}

#[test]
fn the_scheduler_and_servers_get_their_role_and_no_worker_id() {
    for (replica_type, index, role) in [
        (ReplicaType::Scheduler, 0, "scheduler"),
        (ReplicaType::Server, 1, "server"),
    ] {
        let config = format!(r#"{TRAIN_CLUSTER}{{"type":"{role}","index":{index}}}}}"#);
        assert_eq!(
            env(TRAIN, &replica_type, index),
            pairs(&[
                ("MX_CONFIG", &config),
                ("DMLC_PS_ROOT_PORT", "9091"),
                ("DMLC_PS_ROOT_URI", "mx-scheduler-0"),
                ("DMLC_NUM_SERVER", "2"),
                ("DMLC_NUM_WORKER", "2"),
                ("DMLC_ROLE", role),
                ("DMLC_USE_KUBERNETES", "1"),
            ]),
            "{replica_type}"
        );
    }
}

#[test]
fn a_tuning_job_has_no_scheduler_address_and_its_labels_are_escaped_as_go_does() {
    let config = r#"{"cluster":{"tuner":[{"url":"tvm-tuner-0","port":9091}],"tunerserver":[{"url":"tvm-tunerserver-0","port":9091}],"tunertracker":[{"url":"tvm-tunertracker-0","port":9091}]},"labels":{"tuner":"","tunerserver":"gpu-\u003c1080ti\u003e\u0026co","tunertracker":""},"task":{"type":"tunerserver","index":0}}"#;
    assert_eq!(
        env(TUNE, &ReplicaType::TunerServer, 0),
        pairs(&[
            ("MX_CONFIG", config),
            ("DMLC_PS_ROOT_PORT", "0"),
            ("DMLC_PS_ROOT_URI", ""),
            ("DMLC_NUM_SERVER", "0"),
            ("DMLC_NUM_WORKER", "0"),
            ("DMLC_ROLE", "tunerserver"),
            ("DMLC_USE_KUBERNETES", "1"),
        ])
    );
    let parsed: serde_json::Value = serde_json::from_str(config).expect("MX_CONFIG is JSON");
    assert_eq!(parsed["labels"]["tunerserver"], "gpu-<1080ti>&co");
}

#[test]
fn a_type_with_no_replicas_is_an_empty_list() {
    let job = load_job(&TRAIN.replace(
        "replicas: 2\n      template: {spec",
        "replicas: 0\n      template: {spec",
    ));
    let cluster = ClusterConfig::new(&job, &Addressing::default());
    let config: serde_json::Value =
        serde_json::from_str(&cluster.mx_config(&ReplicaType::Server, 0)).expect("JSON");
    assert_eq!(config["cluster"]["worker"], serde_json::json!([]));
    let vars = env_pairs(&cluster.env_vars(&ReplicaType::Server, 0));
    assert_eq!(vars[4], ("DMLC_NUM_WORKER".into(), "0".into()));
}

#[test]
fn on_this_machine_every_replica_is_loopback_with_its_own_port_and_advertises_it() {
    let job = load_job(TRAIN);
    let ports: BTreeMap<(ReplicaType, i32), u16> = [
        ((ReplicaType::Scheduler, 0), 41_000),
        ((ReplicaType::Server, 0), 41_001),
        ((ReplicaType::Server, 1), 41_002),
        ((ReplicaType::Worker, 0), 41_003),
        ((ReplicaType::Worker, 1), 41_004),
    ]
    .into();
    let cluster = ClusterConfig::new(&job, &Addressing::Loopback { ports });
    let config = r#"{"cluster":{"scheduler":[{"url":"127.0.0.1","port":41000}],"server":[{"url":"127.0.0.1","port":41001},{"url":"127.0.0.1","port":41002}],"worker":[{"url":"127.0.0.1","port":41003},{"url":"127.0.0.1","port":41004}]},"labels":{"scheduler":"","server":"","worker":""},"task":{"type":"worker","index":0}}"#;
    assert_eq!(
        env_pairs(&cluster.env_vars(&ReplicaType::Worker, 0)),
        pairs(&[
            ("MX_CONFIG", config),
            ("DMLC_PS_ROOT_PORT", "41000"),
            ("DMLC_PS_ROOT_URI", "127.0.0.1"),
            ("DMLC_NUM_SERVER", "2"),
            ("DMLC_NUM_WORKER", "2"),
            ("DMLC_ROLE", "worker"),
            ("DMLC_USE_KUBERNETES", "1"),
            ("DMLC_WORKER_ID", "0"),
            ("DMLC_NODE_HOST", "127.0.0.1"),
        ])
    );
    let scheduler = env_pairs(&cluster.env_vars(&ReplicaType::Scheduler, 0));
    assert_eq!(
        scheduler.last(),
        Some(&("DMLC_NODE_HOST".into(), "127.0.0.1".into()))
    );
}

#[test]
fn mxnet_env_goes_to_every_container_but_init_containers_and_replaces_the_users() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: MXJob
metadata: {name: mx}
spec:
  jobMode: MXTrain
  mxReplicaSpecs:
    Worker:
      template:
        spec:
          initContainers: [{name: fetch, image: f}]
          containers:
          - {name: mxnet, image: m, env: [{name: DMLC_ROLE, value: server}, {name: KEEP, value: k}]}
          - {name: side, image: s}
",
    );
    let pod =
        build_pod(&job, &ReplicaType::Worker, 0, &BuildOptions::default()).expect("Worker exists");
    let main = container_env(&pod, "mxnet");
    assert_eq!(main[0], ("KEEP".into(), "k".into()));
    assert_eq!(
        main.iter()
            .filter(|(name, _)| name == "DMLC_ROLE")
            .collect::<Vec<_>>(),
        [&("DMLC_ROLE".to_owned(), "worker".to_owned())]
    );
    assert_eq!(container_env(&pod, "side"), main[1..]);
    let init = &pod.spec.as_ref().expect("pod spec").init_containers;
    assert!(
        init.iter()
            .flatten()
            .all(|container| container.env.is_none()),
        "init containers get no MXNet env"
    );
}
