//! PyTorch: `torchrun`'s `PET_*` variables plus the classic `MASTER_*`/`RANK`/`WORLD_SIZE`, and
//! the `init-pytorch` container that waits for the master's Service to resolve.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, EnvVar, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use trainctl_api::pytorch::{DEFAULT_RDZV_BACKEND, ElasticPolicy};
use trainctl_api::{ReplicaType, TrainingJob};

use super::{PYTHONUNBUFFERED, var};
use crate::addressing::{Addressing, slot_port};
use crate::naming::replica_name;

/// Name of the init container that waits for the master.
pub const INIT_CONTAINER: &str = "init-pytorch";

/// The PyTorch env of replica slot `(replica_type, index)`, in upstream's order.
#[must_use]
pub fn env_vars(
    job: &TrainingJob,
    replica_type: &ReplicaType,
    index: i32,
    addressing: &Addressing,
) -> Vec<EnvVar> {
    let (nproc_per_node, elastic) = match job {
        TrainingJob::PyTorch(pytorch) => (
            pytorch.spec.nproc_per_node.as_deref(),
            pytorch.spec.elastic_policy.as_ref(),
        ),
        _ => (None, None),
    };
    let total = job.total_replicas();
    let mut vars = vec![var(PYTHONUNBUFFERED, "1")];
    if job.replica_specs().contains_key(&ReplicaType::Master) {
        let port = slot_port(job, addressing, &ReplicaType::Master, 0).to_string();
        let host = addressing.host(job, &ReplicaType::Master, 0, false);
        let world_size = i64::from(total).saturating_mul(nproc_per_node_count(nproc_per_node));
        let rank = if *replica_type == ReplicaType::Worker {
            i64::from(index) + 1
        } else {
            i64::from(index)
        };
        vars.extend([
            var("MASTER_PORT", port.clone()),
            var("PET_MASTER_PORT", port),
            var("MASTER_ADDR", host.clone()),
            var("PET_MASTER_ADDR", host),
            var("WORLD_SIZE", world_size.to_string()),
            var("RANK", rank.to_string()),
            var("PET_NODE_RANK", rank.to_string()),
        ]);
    }
    if let Some(nproc) = nproc_per_node {
        vars.push(var("PET_NPROC_PER_NODE", nproc));
    }
    match elastic {
        Some(policy) => vars.extend(elastic_env_vars(job, policy, addressing)),
        None => vars.push(var("PET_NNODES", total.to_string())),
    }
    vars
}

/// `nprocPerNode` as a count for `WORLD_SIZE`: an integer as written, anything else (`auto`,
/// `cpu`, `gpu`) counts as 1, like upstream's `strconv.Atoi` fallback.
fn nproc_per_node_count(nproc_per_node: Option<&str>) -> i64 {
    nproc_per_node.and_then(|n| n.parse().ok()).unwrap_or(1)
}

/// The rendezvous variables of an elastic job.
fn elastic_env_vars(
    job: &TrainingJob,
    policy: &ElasticPolicy,
    addressing: &Addressing,
) -> Vec<EnvVar> {
    let host = policy
        .rdzv_host
        .clone()
        .unwrap_or_else(|| addressing.host(job, &ReplicaType::Worker, 0, false));
    let port = policy
        .rdzv_port
        .unwrap_or_else(|| slot_port(job, addressing, &ReplicaType::Worker, 0));
    let nnodes = match (policy.min_replicas, policy.max_replicas) {
        (Some(min), Some(max)) => format!("{min}:{max}"),
        (Some(bound), None) | (None, Some(bound)) => format!("{bound}:{bound}"),
        (None, None) => job
            .replica_specs()
            .get(&ReplicaType::Worker)
            .map_or(0, trainctl_api::ReplicaSpec::replicas_or_default)
            .to_string(),
    };
    let mut vars = vec![
        var("PET_RDZV_ENDPOINT", format!("{host}:{port}")),
        var(
            "PET_RDZV_BACKEND",
            policy
                .rdzv_backend
                .as_deref()
                .unwrap_or(DEFAULT_RDZV_BACKEND),
        ),
        var("PET_NNODES", nnodes),
    ];
    if let Some(max_restarts) = policy.max_restarts {
        vars.push(var("PET_MAX_RESTARTS", max_restarts.to_string()));
    }
    if let Some(nproc) = policy.n_proc_per_node {
        vars.push(var("PET_NPROC_PER_NODE", nproc.to_string()));
    }
    if let Some(id) = &policy.rdzv_id {
        vars.push(var("PET_RDZV_ID", id.clone()));
    }
    // Upstream panics on an empty (non-null) list; no entries means no variable.
    if let Some(conf) = policy.rdzv_conf.as_ref().filter(|conf| !conf.is_empty()) {
        let joined = conf
            .iter()
            .map(|entry| format!("{}={}", entry.key, entry.value))
            .collect::<Vec<_>>()
            .join(",");
        vars.push(var("PET_RDZV_CONF", joined));
    }
    if policy.standalone == Some(true) {
        // Upstream writes an empty value, which torchrun's `check_env` rejects
        // (`bool(int(""))` raises); `1` is what the user asked for.
        vars.push(var("PET_STANDALONE", "1"));
    }
    vars
}

/// The `init-pytorch` container of a Worker pod in a job with a Master: waits (every 2 s, up to
/// `max_tries` times) until the master's Service name resolves.
#[must_use]
pub fn init_container(job: &TrainingJob, image: &str, max_tries: u32) -> Container {
    let master = replica_name(job.name(), &ReplicaType::Master, 0);
    let quantities = |cpu: &str, memory: &str| {
        BTreeMap::from([
            ("cpu".to_owned(), Quantity(cpu.to_owned())),
            ("memory".to_owned(), Quantity(memory.to_owned())),
        ])
    };
    Container {
        name: INIT_CONTAINER.to_owned(),
        image: Some(image.to_owned()),
        image_pull_policy: Some("IfNotPresent".to_owned()),
        resources: Some(ResourceRequirements {
            limits: Some(quantities("100m", "20Mi")),
            requests: Some(quantities("50m", "10Mi")),
            ..ResourceRequirements::default()
        }),
        command: Some(vec![
            "sh".to_owned(),
            "-c".to_owned(),
            format!(
                "err=1;for i in $(seq {max_tries}); do if nslookup {master}; then err=0 && break; \
                 fi;echo waiting for master; sleep 2; done; exit $err"
            ),
        ]),
        ..Container::default()
    }
}

/// Whether replica `replica_type` of `job` gets the `init-pytorch` container (on a cluster).
#[must_use]
pub fn needs_init_container(job: &TrainingJob, replica_type: &ReplicaType) -> bool {
    matches!(job, TrainingJob::PyTorch(_))
        && *replica_type == ReplicaType::Worker
        && job.replica_specs().contains_key(&ReplicaType::Master)
}

#[cfg(test)]
mod tests {
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
        let pod = build_pod(&job, &ReplicaType::Worker, 0, &BuildOptions::default())
            .expect("Worker exists");
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

    #[test]
    fn pytorch_worker_waits_for_master_in_init_container() {
        let job = load_job(MASTER_WORKERS);
        let pod = build_pod(&job, &ReplicaType::Worker, 0, &BuildOptions::default())
            .expect("Worker exists");
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
        let master = build_pod(&job, &ReplicaType::Master, 0, &BuildOptions::default())
            .expect("Master exists");
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
        let pod = build_pod(&job, &ReplicaType::Worker, 0, &BuildOptions::default())
            .expect("Worker exists");
        let names: Vec<String> = pod
            .spec
            .and_then(|s| s.init_containers)
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["fetch", "init-pytorch"]);
    }
}
