//! Defaulting (docs/semantics.md §1): what the operator's mutating webhook filled in, made visible.

use k8s_openapi::api::core::v1::{ContainerPort, PodSpec};

use crate::job::TrainingJob;
use crate::kind::JobKind;
use crate::pytorch::DEFAULT_NPROC_PER_NODE;
use crate::replica::{ReplicaSpecs, ReplicaType};
use crate::run_policy::CleanPodPolicy;
use crate::tensorflow::SuccessPolicy;

/// Fills in every default of docs/semantics.md §1. Idempotent.
pub fn apply(job: &mut TrainingJob) {
    let kind = job.kind();
    for (replica_type, spec) in job.replica_specs_mut().iter_mut() {
        let default_replicas =
            i32::from(!(kind == JobKind::MPIJob && *replica_type == ReplicaType::Worker));
        spec.replicas.get_or_insert(default_replicas);
        spec.restart_policy
            .get_or_insert(kind.default_restart_policy());
        if let (Some(container), Some(port)) = (kind.default_container(), kind.default_port())
            && let Some(pod) = spec.template.spec.as_mut()
        {
            add_default_port(pod, container, port);
        }
    }

    let mpi_clean_pod_policy = match job {
        TrainingJob::Mpi(mpi) => mpi.spec.clean_pod_policy,
        _ => None,
    };
    let run_policy = job.run_policy_mut();
    let clean = run_policy
        .clean_pod_policy
        .or(mpi_clean_pod_policy)
        .unwrap_or(CleanPodPolicy::None);
    run_policy.clean_pod_policy = Some(clean);
    run_policy.suspend.get_or_insert(false);

    match job {
        TrainingJob::TF(tf) => {
            tf.spec.success_policy.get_or_insert(SuccessPolicy::Default);
        }
        TrainingJob::PyTorch(pytorch) => {
            let spec = &mut pytorch.spec;
            let worker_replicas = spec
                .pytorch_replica_specs
                .get(&ReplicaType::Worker)
                .and_then(|w| w.replicas);
            if let Some(elastic) = spec.elastic_policy.as_mut() {
                match (elastic.min_replicas, elastic.max_replicas) {
                    (Some(_), Some(_)) => {}
                    (Some(min), None) => elastic.max_replicas = Some(min),
                    (None, Some(max)) => elastic.min_replicas = Some(max),
                    (None, None) => {
                        elastic.min_replicas = worker_replicas;
                        elastic.max_replicas = worker_replicas;
                    }
                }
            }
            // The deprecated elasticPolicy.nProcPerNode and nprocPerNode are exclusive: only
            // default the latter when the former is unset, so validation sees what was written.
            let deprecated_nproc = spec.elastic_policy.as_ref().and_then(|e| e.n_proc_per_node);
            if deprecated_nproc.is_none() {
                spec.nproc_per_node
                    .get_or_insert_with(|| DEFAULT_NPROC_PER_NODE.to_owned());
            }
        }
        TrainingJob::Paddle(paddle) => {
            let spec = &mut paddle.spec;
            let workers = worker_replicas(&spec.paddle_replica_specs);
            if let Some(elastic) = spec.elastic_policy.as_mut() {
                default_elastic_bounds(
                    &mut elastic.min_replicas,
                    &mut elastic.max_replicas,
                    workers,
                );
            }
        }
        TrainingJob::Mpi(mpi) => mpi.spec.clean_pod_policy = Some(clean),
        TrainingJob::XGBoost(_) | TrainingJob::Jax(_) | TrainingJob::MXNet(_) => {}
    }
}

fn worker_replicas(specs: &ReplicaSpecs) -> Option<i32> {
    specs
        .get(&ReplicaType::Worker)
        .and_then(|worker| worker.replicas)
}

/// Elastic bounds: each defaults to the other, both to the Worker replicas (PyTorch, Paddle).
fn default_elastic_bounds(min: &mut Option<i32>, max: &mut Option<i32>, workers: Option<i32>) {
    match (*min, *max) {
        (Some(_), Some(_)) => {}
        (Some(bound), None) | (None, Some(bound)) => (*min, *max) = (Some(bound), Some(bound)),
        (None, None) => (*min, *max) = (workers, workers),
    }
}

/// Appends `{name, containerPort}` to the default container unless it has a port of that name.
fn add_default_port(pod: &mut PodSpec, container_name: &str, (port_name, port): (&str, i32)) {
    let Some(container) = pod.containers.iter_mut().find(|c| c.name == container_name) else {
        return;
    };
    let ports = container.ports.get_or_insert_with(Vec::new);
    if !ports.iter().any(|p| p.name.as_deref() == Some(port_name)) {
        ports.push(ContainerPort {
            name: Some(port_name.to_owned()),
            container_port: port,
            ..ContainerPort::default()
        });
    }
}
