//! PaddlePaddle: `paddle.distributed.launch`'s `PADDLE_*` variables, collective or PS mode.
//!
//! A job with a Master runs in parameter-server mode (the master is the server), otherwise in
//! collective mode with worker 0 as the master endpoint. The first pod advertises its own pod IP,
//! read through `POD_IP_DUMMY` (`status.podIP`) and expanded by the kubelet in `PADDLE_MASTER`.

use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, ObjectFieldSelector};
use trainctl_api::{ReplicaType, TrainingJob};

use super::{PYTHONUNBUFFERED, var};
use crate::addressing::{Addressing, slot_port};

/// The variable holding the pod's own IP on the first pod.
pub const POD_IP_DUMMY: &str = "POD_IP_DUMMY";

/// The Paddle env of replica slot `(replica_type, index)`, in upstream's order.
#[must_use]
pub fn env_vars(
    job: &TrainingJob,
    replica_type: &ReplicaType,
    index: i32,
    addressing: &Addressing,
) -> Vec<EnvVar> {
    let ps_mode = job.replica_specs().contains_key(&ReplicaType::Master);
    let master_type = if ps_mode {
        ReplicaType::Master
    } else {
        ReplicaType::Worker
    };
    let master_port = slot_port(job, addressing, &master_type, 0);
    let is_first_pod = index == 0 && (!ps_mode || *replica_type == ReplicaType::Master);

    let mut vars = vec![
        var(PYTHONUNBUFFERED, "1"),
        var("PADDLE_JOB_ID", job.name()),
        var("PADDLE_NNODES", job.total_replicas().to_string()),
    ];
    if is_first_pod {
        vars.push(EnvVar {
            name: POD_IP_DUMMY.to_owned(),
            value: None,
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    api_version: None,
                    field_path: "status.podIP".to_owned(),
                }),
                ..EnvVarSource::default()
            }),
        });
        vars.push(var(
            "PADDLE_MASTER",
            format!("$({POD_IP_DUMMY}):{master_port}"),
        ));
    } else {
        let master_host = addressing.host(job, &master_type, 0, false);
        vars.push(var("PADDLE_MASTER", format!("{master_host}:{master_port}")));
    }
    if ps_mode {
        if *replica_type == ReplicaType::Master {
            vars.push(var("PADDLE_SERVER_NUM", "1"));
        } else {
            vars.push(var("PADDLE_TRAINER_NUM", "1"));
        }
    }
    vars
}

#[cfg(test)]
mod tests {
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
        let pod = build_pod(&job, &ReplicaType::Worker, 0, &BuildOptions::default())
            .expect("Worker exists");
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
}
