//! Tests of the XGBoost environment: its variables, and where they land in the pods built
//! for a job.

use super::*;
use crate::objects::{BuildOptions, build_pod};
use crate::test_jobs::{container_env, env_pairs, load_job, pairs};

const JOB: &str = r"
apiVersion: kubeflow.org/v1
kind: XGBoostJob
metadata: {name: xgb, namespace: ns}
spec:
  xgbReplicaSpecs:
    Master:
      template: {spec: {containers: [{name: xgboost, image: x}]}}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: xgboost, image: x, ports: [{name: xgboostjob-port, containerPort: 9000}]}
";

fn env(job: &TrainingJob, replica_type: &ReplicaType, index: i32) -> Vec<(String, String)> {
    env_pairs(&env_vars(job, replica_type, index, &Addressing::default()))
}

#[test]
fn xgboost_master_env_in_order() {
    let job = load_job(JOB);
    assert_eq!(
        env(&job, &ReplicaType::Master, 0),
        pairs(&[
            ("MASTER_PORT", "9999"),
            ("MASTER_ADDR", "xgb-master-0"),
            ("WORLD_SIZE", "3"),
            ("RANK", "0"),
            ("PYTHONUNBUFFERED", "1"),
            ("WORKER_PORT", "9000"),
            ("WORKER_ADDRS", "xgb-worker-0,xgb-worker-1"),
        ])
    );
}

#[test]
fn xgboost_worker_rank_is_index_plus_master_replicas() {
    let job = load_job(JOB);
    assert_eq!(
        env(&job, &ReplicaType::Worker, 1),
        pairs(&[
            ("MASTER_PORT", "9999"),
            ("MASTER_ADDR", "xgb-master-0"),
            ("WORLD_SIZE", "3"),
            ("RANK", "2"),
            ("PYTHONUNBUFFERED", "1"),
            ("WORKER_PORT", "9000"),
            ("WORKER_ADDRS", "xgb-worker-0,xgb-worker-1"),
        ])
    );
}

#[test]
fn xgboost_single_replica_has_no_worker_env() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: XGBoostJob
metadata: {name: xgb}
spec:
  xgbReplicaSpecs:
    Master:
      template: {spec: {containers: [{name: xgboost, image: x}]}}
",
    );
    assert_eq!(
        env(&job, &ReplicaType::Master, 0),
        pairs(&[
            ("MASTER_PORT", "9999"),
            ("MASTER_ADDR", "xgb-master-0"),
            ("WORLD_SIZE", "1"),
            ("RANK", "0"),
            ("PYTHONUNBUFFERED", "1"),
        ])
    );
}

#[test]
fn xgboost_env_goes_to_every_container() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: XGBoostJob
metadata: {name: xgb}
spec:
  xgbReplicaSpecs:
    Master:
      template: {spec: {containers: [{name: xgboost, image: x}, {name: side, image: s}]}}
",
    );
    let pod =
        build_pod(&job, &ReplicaType::Master, 0, &BuildOptions::default()).expect("Master exists");
    assert_eq!(container_env(&pod, "side"), container_env(&pod, "xgboost"));
    assert_eq!(container_env(&pod, "side").len(), 5);
}

#[test]
fn xgboost_loopback_ports_are_master_and_worker_zero_slots() {
    let job = load_job(JOB);
    let addressing = Addressing::Loopback {
        ports: [
            ((ReplicaType::Master, 0), 46_000),
            ((ReplicaType::Worker, 0), 46_001),
        ]
        .into_iter()
        .collect(),
    };
    assert_eq!(
        env_pairs(&env_vars(&job, &ReplicaType::Worker, 0, &addressing)),
        pairs(&[
            ("MASTER_PORT", "46000"),
            ("MASTER_ADDR", "127.0.0.1"),
            ("WORLD_SIZE", "3"),
            ("RANK", "1"),
            ("PYTHONUNBUFFERED", "1"),
            ("WORKER_PORT", "46001"),
            ("WORKER_ADDRS", "127.0.0.1,127.0.0.1"),
        ])
    );
}
