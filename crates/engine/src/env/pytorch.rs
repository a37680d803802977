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

/// The c10d rendezvous setting that says whether this node's torchrun hosts the store.
const IS_HOST: &str = "is_host";

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
        Some(policy) => vars.extend(elastic_env_vars(
            job,
            policy,
            addressing,
            is_store_host(replica_type, index),
        )),
        None => vars.push(var("PET_NNODES", total.to_string())),
    }
    vars
}

/// `nprocPerNode` as a count for `WORLD_SIZE`: an integer as written, anything else (`auto`,
/// `cpu`, `gpu`) counts as 1, like upstream's `strconv.Atoi` fallback.
fn nproc_per_node_count(nproc_per_node: Option<&str>) -> i64 {
    nproc_per_node.and_then(|n| n.parse().ok()).unwrap_or(1)
}

/// Whether replica slot `(replica_type, index)` is the one the default rendezvous endpoint
/// names: worker 0.
fn is_store_host(replica_type: &ReplicaType, index: i32) -> bool {
    *replica_type == ReplicaType::Worker && index == 0
}

/// The rendezvous variables of an elastic job, for a replica that is (`store_host`) or is not
/// worker 0.
fn elastic_env_vars(
    job: &TrainingJob,
    policy: &ElasticPolicy,
    addressing: &Addressing,
    store_host: bool,
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
    let backend = policy
        .rdzv_backend
        .as_deref()
        .unwrap_or(DEFAULT_RDZV_BACKEND);
    let mut vars = vec![
        var("PET_RDZV_ENDPOINT", format!("{host}:{port}")),
        var("PET_RDZV_BACKEND", backend),
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
    let mut conf: Vec<String> = policy
        .rdzv_conf
        .iter()
        .flatten()
        .map(|entry| format!("{}={}", entry.key, entry.value))
        .collect();
    // On a cluster only worker 0's host name is the endpoint's, so only its torchrun hosts the
    // c10d store; on loopback every replica's is, and whichever bound the port first would host
    // it (and take the rendezvous down with it when it dies). Say which one, as the cluster
    // would decide (docs/semantics.md §4.3).
    let loopback_store = matches!(addressing, Addressing::Loopback { .. })
        && policy.rdzv_host.is_none()
        && backend == DEFAULT_RDZV_BACKEND;
    let user_decides = policy
        .rdzv_conf
        .iter()
        .flatten()
        .any(|entry| entry.key == IS_HOST);
    if loopback_store && !user_decides {
        conf.push(format!("{IS_HOST}={}", u8::from(store_host)));
    }
    if !conf.is_empty() {
        vars.push(var("PET_RDZV_CONF", conf.join(",")));
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
mod tests;
