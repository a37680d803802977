//! Tests of the PyTorch environment: its variables, and where they land in the pods built
//! for a job.

use super::*;
use crate::objects::{BuildOptions, build_pod};
use crate::test_jobs::{container_env, env_pairs, load_job, pairs};

const MASTER_WORKERS: &str = r"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: ns}
spec:
  pytorchReplicaSpecs:
    Master:
      template: {spec: {containers: [{name: pytorch, image: torch}]}}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: pytorch, image: torch}]}}
";

const ELASTIC: &str = r"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: el, namespace: ns}
spec:
  elasticPolicy:
    minReplicas: 1
    maxReplicas: 3
    maxRestarts: 5
    rdzvId: abc
    rdzvConf: [{key: timeout, value: '900'}, {key: read_timeout, value: '60'}]
    standalone: true
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: pytorch, image: torch}]}}
";

fn env(job: &TrainingJob, replica_type: &ReplicaType, index: i32) -> Vec<(String, String)> {
    env_pairs(&env_vars(job, replica_type, index, &Addressing::default()))
}

#[test]
fn pytorch_master_env_in_order() {
    let job = load_job(MASTER_WORKERS);
    assert_eq!(
        env(&job, &ReplicaType::Master, 0),
        pairs(&[
            ("PYTHONUNBUFFERED", "1"),
            ("MASTER_PORT", "23456"),
            ("PET_MASTER_PORT", "23456"),
            ("MASTER_ADDR", "pt-master-0"),
            ("PET_MASTER_ADDR", "pt-master-0"),
            ("WORLD_SIZE", "3"),
            ("RANK", "0"),
            ("PET_NODE_RANK", "0"),
            ("PET_NPROC_PER_NODE", "auto"),
            ("PET_NNODES", "3"),
        ])
    );
}

#[test]
fn pytorch_worker_rank_is_index_plus_one() {
    let job = load_job(MASTER_WORKERS);
    assert_eq!(
        env(&job, &ReplicaType::Worker, 1),
        pairs(&[
            ("PYTHONUNBUFFERED", "1"),
            ("MASTER_PORT", "23456"),
            ("PET_MASTER_PORT", "23456"),
            ("MASTER_ADDR", "pt-master-0"),
            ("PET_MASTER_ADDR", "pt-master-0"),
            ("WORLD_SIZE", "3"),
            ("RANK", "2"),
            ("PET_NODE_RANK", "2"),
            ("PET_NPROC_PER_NODE", "auto"),
            ("PET_NNODES", "3"),
        ])
    );
}

#[test]
fn pytorch_world_size_multiplies_integer_nproc_per_node() {
    let job = load_job(&MASTER_WORKERS.replace(
        "spec:\n  pytorchReplicaSpecs:",
        "spec:\n  nprocPerNode: '4'\n  pytorchReplicaSpecs:",
    ));
    let env = env(&job, &ReplicaType::Worker, 0);
    assert!(env.contains(&("WORLD_SIZE".into(), "12".into())), "{env:?}");
    assert!(
        env.contains(&("PET_NPROC_PER_NODE".into(), "4".into())),
        "{env:?}"
    );
}

#[test]
fn pytorch_master_port_is_the_masters_pytorchjob_port() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Master:
      template:
        spec:
          containers:
          - {name: pytorch, image: torch, ports: [{name: pytorchjob-port, containerPort: 29500}]}
    Worker:
      template: {spec: {containers: [{name: pytorch, image: torch}]}}
",
    );
    let env = env(&job, &ReplicaType::Worker, 0);
    assert_eq!(env[1], ("MASTER_PORT".into(), "29500".into()));
    assert_eq!(env[2], ("PET_MASTER_PORT".into(), "29500".into()));
}

#[test]
fn pytorch_without_master_has_no_master_env() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: pytorch, image: torch}]}}
",
    );
    assert_eq!(
        env(&job, &ReplicaType::Worker, 1),
        pairs(&[
            ("PYTHONUNBUFFERED", "1"),
            ("PET_NPROC_PER_NODE", "auto"),
            ("PET_NNODES", "2")
        ])
    );
}

#[test]
fn pytorch_elastic_env_in_order() {
    let job = load_job(ELASTIC);
    assert_eq!(
        env(&job, &ReplicaType::Worker, 0),
        pairs(&[
            ("PYTHONUNBUFFERED", "1"),
            ("PET_NPROC_PER_NODE", "auto"),
            ("PET_RDZV_ENDPOINT", "el-worker-0:23456"),
            ("PET_RDZV_BACKEND", "c10d"),
            ("PET_NNODES", "1:3"),
            ("PET_MAX_RESTARTS", "5"),
            ("PET_RDZV_ID", "abc"),
            ("PET_RDZV_CONF", "timeout=900,read_timeout=60"),
            ("PET_STANDALONE", "1"),
        ])
    );
}

#[test]
fn pytorch_elastic_rdzv_host_port_and_backend_as_given() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: el}
spec:
  elasticPolicy: {rdzvHost: etcd.svc, rdzvPort: 2379, rdzvBackend: etcd-v2}
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      template: {spec: {containers: [{name: pytorch, image: torch}]}}
",
    );
    assert_eq!(
        env(&job, &ReplicaType::Worker, 3),
        pairs(&[
            ("PYTHONUNBUFFERED", "1"),
            ("PET_NPROC_PER_NODE", "auto"),
            ("PET_RDZV_ENDPOINT", "etcd.svc:2379"),
            ("PET_RDZV_BACKEND", "etcd-v2"),
            ("PET_NNODES", "4:4"),
        ])
    );
}

#[test]
fn pytorch_elastic_deprecated_nproc_per_node_comes_after_max_restarts() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: el}
spec:
  elasticPolicy: {nProcPerNode: 2, maxRestarts: 1}
  pytorchReplicaSpecs:
    Worker:
      template: {spec: {containers: [{name: pytorch, image: torch}]}}
",
    );
    assert_eq!(
        env(&job, &ReplicaType::Worker, 0),
        pairs(&[
            ("PYTHONUNBUFFERED", "1"),
            ("PET_RDZV_ENDPOINT", "el-worker-0:23456"),
            ("PET_RDZV_BACKEND", "c10d"),
            ("PET_NNODES", "1:1"),
            ("PET_MAX_RESTARTS", "1"),
            ("PET_NPROC_PER_NODE", "2"),
        ])
    );
}

#[test]
fn pytorch_env_goes_to_every_container_after_user_env() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Worker:
      template:
        spec:
          containers:
          - {name: pytorch, image: torch, env: [{name: A, value: '1'}]}
          - {name: sidecar, image: s}
",
    );
    let pod =
        build_pod(&job, &ReplicaType::Worker, 0, &BuildOptions::default()).expect("Worker exists");
    let main = container_env(&pod, "pytorch");
    assert_eq!(main[0], ("A".into(), "1".into()));
    assert_eq!(main[1..], env(&job, &ReplicaType::Worker, 0));
    assert_eq!(
        container_env(&pod, "sidecar"),
        env(&job, &ReplicaType::Worker, 0)
    );
}

#[test]
fn pytorch_loopback_master_port_is_the_master_slot_port() {
    let job = load_job(MASTER_WORKERS);
    let addressing = Addressing::Loopback {
        ports: [
            ((ReplicaType::Master, 0), 45_000),
            ((ReplicaType::Worker, 0), 45_001),
        ]
        .into_iter()
        .collect(),
    };
    let env = env_pairs(&env_vars(&job, &ReplicaType::Worker, 0, &addressing));
    assert_eq!(
        env[1..5],
        pairs(&[
            ("MASTER_PORT", "45000"),
            ("PET_MASTER_PORT", "45000"),
            ("MASTER_ADDR", "127.0.0.1"),
            ("PET_MASTER_ADDR", "127.0.0.1"),
        ])
    );
}

#[test]
fn pytorch_loopback_rdzv_endpoint_is_worker_zero_slot() {
    let job = load_job(ELASTIC);
    let addressing = Addressing::Loopback {
        ports: [((ReplicaType::Worker, 0), 45_010)].into_iter().collect(),
    };
    let env = env_pairs(&env_vars(&job, &ReplicaType::Worker, 1, &addressing));
    assert!(
        env.contains(&("PET_RDZV_ENDPOINT".into(), "127.0.0.1:45010".into())),
        "{env:?}"
    );
}

/// On loopback every replica's host is the endpoint's: worker 0 is told to host the c10d
/// store and the others not to, after the user's settings.
#[test]
fn pytorch_loopback_c10d_store_is_hosted_by_worker_zero() {
    let job = load_job(ELASTIC);
    let addressing = Addressing::Loopback {
        ports: [((ReplicaType::Worker, 0), 45_010)].into_iter().collect(),
    };
    let conf = |index| {
        env_pairs(&env_vars(&job, &ReplicaType::Worker, index, &addressing))
            .into_iter()
            .find(|(name, _)| name == "PET_RDZV_CONF")
            .map(|(_, value)| value)
    };
    assert_eq!(
        conf(0).as_deref(),
        Some("timeout=900,read_timeout=60,is_host=1")
    );
    assert_eq!(
        conf(1).as_deref(),
        Some("timeout=900,read_timeout=60,is_host=0")
    );
}

/// The user's own `is_host`, another rendezvous host or backend, and a cluster's addresses
/// leave `PET_RDZV_CONF` as the job says.
#[test]
fn pytorch_is_host_is_added_only_for_the_loopback_c10d_store_of_worker_zero() {
    let loopback = Addressing::Loopback {
        ports: [((ReplicaType::Worker, 0), 45_010)].into_iter().collect(),
    };
    let conf = |policy: &str, addressing: &Addressing| {
        let manifest = format!(
            "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {{name: el}}\nspec:\n  \
             elasticPolicy: {policy}\n  pytorchReplicaSpecs:\n    Worker:\n      replicas: 2\n      \
             template: {{spec: {{containers: [{{name: pytorch, image: torch}}]}}}}\n"
        );
        env_pairs(&env_vars(
            &load_job(&manifest),
            &ReplicaType::Worker,
            0,
            addressing,
        ))
        .into_iter()
        .find(|(name, _)| name == "PET_RDZV_CONF")
        .map(|(_, value)| value)
    };
    assert_eq!(
        conf("{maxReplicas: 2}", &loopback).as_deref(),
        Some("is_host=1")
    );
    assert_eq!(conf("{maxReplicas: 2}", &Addressing::default()), None);
    assert_eq!(
        conf("{rdzvConf: [{key: is_host, value: 'false'}]}", &loopback).as_deref(),
        Some("is_host=false")
    );
    assert_eq!(conf("{rdzvHost: store.example}", &loopback), None);
    assert_eq!(conf("{rdzvBackend: etcd-v2}", &loopback), None);
}

#[test]
fn pytorch_worker_waits_for_master_in_init_container() {
    let job = load_job(MASTER_WORKERS);
    let pod =
        build_pod(&job, &ReplicaType::Worker, 0, &BuildOptions::default()).expect("Worker exists");
    let init = pod
        .spec
        .as_ref()
        .and_then(|s| s.init_containers.clone())
        .unwrap_or_default();
    assert_eq!(init.len(), 1);
    let init = serde_json::to_value(&init[0]).expect("serializable");
    assert_eq!(
        init,
        serde_json::json!({
        "name": "init-pytorch",
        "image": "alpine:3.10",
        "imagePullPolicy": "IfNotPresent",
        "resources": {
            "limits": {"cpu": "100m", "memory": "20Mi"},
            "requests": {"cpu": "50m", "memory": "10Mi"}
        },
        "command": [
            "sh",
            "-c",
            "err=1;for i in $(seq 100); do if nslookup pt-master-0; then err=0 && break; fi;echo waiting for master; sleep 2; done; exit $err"
            ]
        })
    );
}

#[test]
fn pytorch_init_container_image_and_tries_are_options() {
    let job = load_job(MASTER_WORKERS);
    let options = BuildOptions {
        pytorch_init_image: "busybox:1".into(),
        pytorch_init_max_tries: 7,
        ..BuildOptions::default()
    };
    let pod = build_pod(&job, &ReplicaType::Worker, 1, &options).expect("Worker exists");
    let init = &pod
        .spec
        .as_ref()
        .and_then(|s| s.init_containers.clone())
        .unwrap_or_default()[0];
    assert_eq!(init.image.as_deref(), Some("busybox:1"));
    assert!(
        init.command
            .as_ref()
            .is_some_and(|c| c[2].contains("$(seq 7)"))
    );
}

#[test]
fn pytorch_init_container_only_for_workers_with_a_master() {
    let job = load_job(MASTER_WORKERS);
    let master =
        build_pod(&job, &ReplicaType::Master, 0, &BuildOptions::default()).expect("Master exists");
    assert_eq!(
        master
            .spec
            .as_ref()
            .and_then(|s| s.init_containers.as_ref()),
        None
    );
    let no_master = load_job(ELASTIC);
    let worker = build_pod(
        &no_master,
        &ReplicaType::Worker,
        0,
        &BuildOptions::default(),
    )
    .expect("Worker exists");
    assert_eq!(
        worker
            .spec
            .as_ref()
            .and_then(|s| s.init_containers.as_ref()),
        None
    );
}

#[test]
fn pytorch_init_container_skipped_with_loopback_addressing() {
    let job = load_job(MASTER_WORKERS);
    let options = BuildOptions {
        addressing: Addressing::Loopback {
            ports: BTreeMap::new(),
        },
        ..BuildOptions::default()
    };
    let pod = build_pod(&job, &ReplicaType::Worker, 0, &options).expect("Worker exists");
    assert_eq!(
        pod.spec.as_ref().and_then(|s| s.init_containers.as_ref()),
        None
    );
}

#[test]
fn pytorch_user_init_containers_come_first() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Master:
      template: {spec: {containers: [{name: pytorch, image: torch}]}}
    Worker:
      template:
        spec:
          initContainers: [{name: fetch, image: f}]
          containers: [{name: pytorch, image: torch}]
",
    );
    let pod =
        build_pod(&job, &ReplicaType::Worker, 0, &BuildOptions::default()).expect("Worker exists");
    let names: Vec<String> = pod
        .spec
        .and_then(|s| s.init_containers)
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names, ["fetch", "init-pytorch"]);
}
