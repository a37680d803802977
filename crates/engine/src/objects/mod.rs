//! The Kubernetes objects that stand for a job (docs/semantics.md §3): a pod and a headless service
//! per replica slot, the PodGroup (and under Kubernetes' own gang scheduling, the Workload) under
//! gang scheduling, an elastic PyTorchJob's HorizontalPodAutoscaler, and MPI's ConfigMap and
//! launcher RBAC.
//!
//! Each kind of object has its builder in a submodule (`pod`, `service`, [`podgroup`],
//! [`workload`], [`hpa`], [`mpi`]);
//! the builders use [`BuildOptions`] and [`owner_reference`] (each in a module of its own, which
//! this one re-exports), and nothing outside `objects` is used by them but `addressing`, `env`
//! and `naming`.
//!
//! Pure and deterministic: the same job and options always give the same objects, in the same
//! order (replica types in canonical order, indices ascending).

mod gang;
pub mod hpa;
pub mod mpi;
mod options;
mod owner;
mod pod;
pub mod podgroup;
mod service;
pub mod workload;

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use trainctl_api::{ReplicaType, TrainingJob};

use crate::env::JobEnv;
use podgroup::{GangScheduler, PodGroup};
use workload::Workload;

pub use options::{
    BuildOptions, DEFAULT_MPI_KUBECTL_DELIVERY_IMAGE, DEFAULT_PYTORCH_INIT_IMAGE,
    DEFAULT_PYTORCH_INIT_MAX_TRIES,
};
pub use owner::owner_reference;
pub use pod::{build_pod, build_pod_with, pod_restart_policy};
pub use service::build_service;

/// Every object a job stands for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobObjects {
    /// One pod per replica slot.
    pub pods: Vec<Pod>,
    /// One headless service per replica slot (none for MPI).
    pub services: Vec<Service>,
    /// The PodGroup, under gang scheduling.
    pub pod_group: Option<PodGroup>,
    /// The Workload the PodGroup is made from, under Kubernetes' own gang scheduling.
    pub workload: Option<Workload>,
    /// The HorizontalPodAutoscaler of an elastic PyTorchJob with `metrics`.
    pub hpa: Option<HorizontalPodAutoscaler>,
    /// MPI: `<job>-config` with the hostfile, `kubexec.sh` and `discover_hosts.sh`.
    pub config_maps: Vec<ConfigMap>,
    /// MPI: the launcher's service account (to be created only if absent).
    pub service_accounts: Vec<ServiceAccount>,
    /// MPI: the launcher's role (`kubectl exec` into the workers).
    pub roles: Vec<Role>,
    /// MPI: the binding of that role to the launcher's service account.
    pub role_bindings: Vec<RoleBinding>,
}

/// Every replica slot of a job: `(type, index)` for each type in canonical order and each index
/// below its replica count.
#[must_use]
pub fn replica_slots(job: &TrainingJob) -> Vec<(ReplicaType, i32)> {
    job.replica_specs()
        .iter()
        .flat_map(|(replica_type, spec)| {
            (0..spec.replicas_or_default()).map(move |index| (replica_type.clone(), index))
        })
        .collect()
}

/// Every object of `job`.
#[must_use]
pub fn build_objects(job: &TrainingJob, options: &BuildOptions) -> JobObjects {
    JobObjects {
        pods: build_pods(job, options).collect(),
        ..build_objects_but_pods(job, options)
    }
}

/// The pods of `job`, each built as it is taken: together they can be gigabytes (each
/// TensorFlow pod names every replica in its `TF_CONFIG`), one at a time they are not.
pub fn build_pods<'a>(
    job: &'a TrainingJob,
    options: &'a BuildOptions,
) -> impl Iterator<Item = Pod> + 'a {
    let job_env = JobEnv::new(job, &options.addressing);
    replica_slots(job)
        .into_iter()
        .filter_map(move |(replica_type, index)| {
            pod::build_pod_with(&job_env, job, &replica_type, index, options)
        })
}

/// Every object of `job` but its pods (see [`build_pods`]).
#[must_use]
pub fn build_objects_but_pods(job: &TrainingJob, options: &BuildOptions) -> JobObjects {
    let mut objects = JobObjects {
        services: replica_slots(job)
            .iter()
            .filter_map(|(replica_type, index)| build_service(job, replica_type, *index))
            .collect(),
        pod_group: options
            .gang_scheduler()
            .map(|scheduler| podgroup::build_pod_group(job, &scheduler)),
        workload: (options.gang_scheduler() == Some(GangScheduler::Kubernetes))
            .then(|| workload::build_workload(job)),
        hpa: hpa::build_hpa(job),
        ..JobObjects::default()
    };
    if let TrainingJob::Mpi(_) = job {
        objects
            .config_maps
            .push(mpi::config_map(job, &options.addressing));
        objects
            .service_accounts
            .push(mpi::launcher_service_account(job));
        objects.roles.push(mpi::launcher_role(job));
        objects.role_bindings.push(mpi::launcher_role_binding(job));
    }
    objects
}

#[cfg(test)]
mod tests;
