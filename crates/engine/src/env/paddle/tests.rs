//! Tests of the PaddlePaddle environment: its variables, and where they land in the pods built
//! for a job.

use super::*;
use crate::objects::{BuildOptions, build_pod};
use crate::test_jobs::{container_env, env_pairs, load_job, pairs};

const COLLECTIVE: &str = r"
apiVersion: kubeflow.org/v1
kind: PaddleJob
metadata: {name: pd, namespace: ns}
spec:
  paddleReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: paddle, image: p, ports: [{name: master, containerPort: 37777}]}
";

const PS_MODE: &str = r"
apiVersion: kubeflow.org/v1
kind: PaddleJob
metadata: {name: pd, namespace: ns}
spec:
  paddleReplicaSpecs:
    Master:
      template: {spec: {containers: [{name: paddle, image: p}]}}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: paddle, image: p}]}}
";

fn env(job: &TrainingJob, replica_type: &ReplicaType, index: i32) -> Vec<(String, String)> {
    env_pairs(&env_vars(job, replica_type, index, &Addressing::default()))
}

#[test]
fn paddle_first_pod_advertises_its_pod_ip() {
    let job = load_job(COLLECTIVE);
    assert_eq!(
        env(&job, &ReplicaType::Worker, 0),
        pairs(&[
            ("PYTHONUNBUFFERED", "1"),
            ("PADDLE_JOB_ID", "pd"),
            ("PADDLE_NNODES", "2"),
            ("POD_IP_DUMMY", "<from status.podIP>"),
            ("PADDLE_MASTER", "$(POD_IP_DUMMY):37777"),
        ])
    );
}

#[test]
fn paddle_pod_ip_dummy_is_a_field_ref_without_api_version() {
    let job = load_job(COLLECTIVE);
    let vars = env_vars(&job, &ReplicaType::Worker, 0, &Addressing::default());
    assert_eq!(
        serde_json::to_value(&vars[3]).expect("serializable"),
        serde_json::json!({"name": "POD_IP_DUMMY", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    );
}

#[test]
fn paddle_collective_workers_point_at_worker_zero() {
    let job = load_job(COLLECTIVE);
    assert_eq!(
        env(&job, &ReplicaType::Worker, 1),
        pairs(&[
            ("PYTHONUNBUFFERED", "1"),
            ("PADDLE_JOB_ID", "pd"),
            ("PADDLE_NNODES", "2"),
            ("PADDLE_MASTER", "pd-worker-0:37777"),
        ])
    );
}

#[test]
fn paddle_ps_mode_master_is_server() {
    let job = load_job(PS_MODE);
    assert_eq!(
        env(&job, &ReplicaType::Master, 0),
        pairs(&[
            ("PYTHONUNBUFFERED", "1"),
            ("PADDLE_JOB_ID", "pd"),
            ("PADDLE_NNODES", "3"),
            ("POD_IP_DUMMY", "<from status.podIP>"),
            ("PADDLE_MASTER", "$(POD_IP_DUMMY):36543"),
            ("PADDLE_SERVER_NUM", "1"),
        ])
    );
}

#[test]
fn paddle_ps_mode_workers_are_trainers_pointing_at_master() {
    let job = load_job(PS_MODE);
    assert_eq!(
        env(&job, &ReplicaType::Worker, 0),
        pairs(&[
            ("PYTHONUNBUFFERED", "1"),
            ("PADDLE_JOB_ID", "pd"),
            ("PADDLE_NNODES", "3"),
            ("PADDLE_MASTER", "pd-master-0:36543"),
            ("PADDLE_TRAINER_NUM", "1"),
        ])
    );
}

#[test]
fn paddle_env_goes_to_every_container() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: PaddleJob
metadata: {name: pd}
spec:
  paddleReplicaSpecs:
    Worker:
      template: {spec: {containers: [{name: paddle, image: p}, {name: side, image: s}]}}
",
    );
    let pod =
        build_pod(&job, &ReplicaType::Worker, 0, &BuildOptions::default()).expect("Worker exists");
    assert_eq!(container_env(&pod, "side"), container_env(&pod, "paddle"));
}

#[test]
fn paddle_loopback_master_port_is_the_first_pods_slot_port() {
    let job = load_job(COLLECTIVE);
    let addressing = Addressing::Loopback {
        ports: [((ReplicaType::Worker, 0), 47_000)].into_iter().collect(),
    };
    let first = env_pairs(&env_vars(&job, &ReplicaType::Worker, 0, &addressing));
    assert_eq!(
        first[4],
        ("PADDLE_MASTER".into(), "$(POD_IP_DUMMY):47000".into())
    );
    let second = env_pairs(&env_vars(&job, &ReplicaType::Worker, 1, &addressing));
    assert_eq!(
        second[3],
        ("PADDLE_MASTER".into(), "127.0.0.1:47000".into())
    );
}
