//! XGBoost: the Rabit tracker on the master, plus the worker list LightGBM-style scripts read.

use k8s_openapi::api::core::v1::EnvVar;
use trainctl_api::{ReplicaSpec, ReplicaType, TrainingJob};

use super::{PYTHONUNBUFFERED, var};
use crate::addressing::{Addressing, slot_port};

/// The XGBoost env of replica slot `(replica_type, index)`, in upstream's order.
///
/// `WORKER_ADDRS` names workers `0..total-1` (one fewer than all replicas, master included):
/// upstream computes it from the total, not from the Worker count, and so do we.
#[must_use]
pub fn env_vars(
    job: &TrainingJob,
    replica_type: &ReplicaType,
    index: i32,
    addressing: &Addressing,
) -> Vec<EnvVar> {
    let specs = job.replica_specs();
    let total = job.total_replicas();
    let mut rank = i64::from(index);
    if *replica_type == ReplicaType::Worker {
        rank += i64::from(
            specs
                .get(&ReplicaType::Master)
                .map_or(0, ReplicaSpec::replicas_or_default),
        );
    }
    let mut vars = vec![
        var(
            "MASTER_PORT",
            slot_port(job, addressing, &ReplicaType::Master, 0).to_string(),
        ),
        var(
            "MASTER_ADDR",
            addressing.host(job, &ReplicaType::Master, 0, false),
        ),
        var("WORLD_SIZE", total.to_string()),
        var("RANK", rank.to_string()),
        var(PYTHONUNBUFFERED, "1"),
    ];
    if total > 1 {
        let workers = (0..total - 1)
            .map(|i| addressing.host(job, &ReplicaType::Worker, i, false))
            .collect::<Vec<_>>()
            .join(",");
        vars.push(var(
            "WORKER_PORT",
            slot_port(job, addressing, &ReplicaType::Worker, 0).to_string(),
        ));
        vars.push(var("WORKER_ADDRS", workers));
    }
    vars
}

#[cfg(test)]
mod tests;
