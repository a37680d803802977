//! JAX: `jax.distributed.initialize()`'s coordinator (worker 0) and process numbering.

use k8s_openapi::api::core::v1::EnvVar;
use trainctl_api::{ReplicaType, TrainingJob};

use super::{PYTHONUNBUFFERED, var};
use crate::addressing::{Addressing, slot_port};

/// The JAX env of replica slot `(replica_type, index)`, in upstream's order.
#[must_use]
pub fn env_vars(
    job: &TrainingJob,
    _replica_type: &ReplicaType,
    index: i32,
    addressing: &Addressing,
) -> Vec<EnvVar> {
    vec![
        var(PYTHONUNBUFFERED, "1"),
        var(
            "COORDINATOR_PORT",
            slot_port(job, addressing, &ReplicaType::Worker, 0).to_string(),
        ),
        var(
            "COORDINATOR_ADDRESS",
            addressing.host(job, &ReplicaType::Worker, 0, false),
        ),
        var("NUM_PROCESSES", job.total_replicas().to_string()),
        var("PROCESS_ID", index.to_string()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_jobs::{env_pairs, load_job, pairs};

    const JOB: &str = r"
apiVersion: kubeflow.org/v1
kind: JAXJob
metadata: {name: jx, namespace: ns}
spec:
  jaxReplicaSpecs:
    Worker:
      replicas: 3
      template: {spec: {containers: [{name: jax, image: j}]}}
";

    #[test]
    fn jax_worker_env_in_order() {
        let job = load_job(JOB);
        assert_eq!(
            env_pairs(&env_vars(
                &job,
                &ReplicaType::Worker,
                2,
                &Addressing::default()
            )),
            pairs(&[
                ("PYTHONUNBUFFERED", "1"),
                ("COORDINATOR_PORT", "6666"),
                ("COORDINATOR_ADDRESS", "jx-worker-0"),
                ("NUM_PROCESSES", "3"),
                ("PROCESS_ID", "2"),
            ])
        );
    }

    #[test]
    fn jax_loopback_coordinator_is_worker_zero_slot() {
        let job = load_job(JOB);
        let addressing = Addressing::Loopback {
            ports: [
                ((ReplicaType::Worker, 0), 48_000),
                ((ReplicaType::Worker, 1), 48_001),
            ]
            .into_iter()
            .collect(),
        };
        assert_eq!(
            env_pairs(&env_vars(&job, &ReplicaType::Worker, 1, &addressing)),
            pairs(&[
                ("PYTHONUNBUFFERED", "1"),
                ("COORDINATOR_PORT", "48000"),
                ("COORDINATOR_ADDRESS", "127.0.0.1"),
                ("NUM_PROCESSES", "3"),
                ("PROCESS_ID", "1"),
            ])
        );
    }
}
