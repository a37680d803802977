//! MPI: the launcher's env pointing `mpirun` (Open MPI or Intel MPI) at the hostfile and at the
//! remote-exec script. Workers get no env; they sleep until the launcher drives them.

use k8s_openapi::api::core::v1::EnvVar;
use trainctl_api::{ReplicaType, TrainingJob};

use super::var;

/// Where the job's ConfigMap (hostfile, `kubexec.sh`, `discover_hosts.sh`) is mounted.
pub const CONFIG_MOUNT_PATH: &str = "/etc/mpi";
/// The remote-exec script `mpirun` uses instead of `ssh`.
pub const KUBEXEC_PATH: &str = "/etc/mpi/kubexec.sh";
/// The hostfile listing the workers.
pub const HOSTFILE_PATH: &str = "/etc/mpi/hostfile";
/// Intel MPI's bootstrap when the user sets none.
pub const INTEL_MPI_DEFAULT_BOOTSTRAP: &str = "rsh";

/// Whether the launcher itself uses a GPU: one of its containers has a resource limit whose name
/// contains `gpu` (e.g. `nvidia.com/gpu`). Such a launcher is also listed in the hostfile.
#[must_use]
pub fn is_gpu_launcher(job: &TrainingJob) -> bool {
    job.replica_specs()
        .get(&ReplicaType::Launcher)
        .and_then(|spec| spec.template.spec.as_ref())
        .is_some_and(|pod| {
            pod.containers.iter().any(|container| {
                container
                    .resources
                    .as_ref()
                    .and_then(|resources| resources.limits.as_ref())
                    .is_some_and(|limits| limits.keys().any(|name| name.contains("gpu")))
            })
        })
}

/// The env appended to the launcher's first container, given the env it already has (a user's
/// own `I_MPI_HYDRA_BOOTSTRAP*` wins).
#[must_use]
pub fn launcher_env_vars(job: &TrainingJob, existing: &[EnvVar]) -> Vec<EnvVar> {
    let mut vars = vec![
        var("OMPI_MCA_plm_rsh_agent", KUBEXEC_PATH),
        var("OMPI_MCA_orte_default_hostfile", HOSTFILE_PATH),
    ];
    if !is_gpu_launcher(job) {
        // Hide the node's GPUs from a launcher that asked for none.
        vars.push(var("NVIDIA_VISIBLE_DEVICES", ""));
        vars.push(var("NVIDIA_DRIVER_CAPABILITIES", ""));
    }
    let user_sets = |name: &str| existing.iter().any(|v| v.name == name);
    if !user_sets("I_MPI_HYDRA_BOOTSTRAP") {
        vars.push(var("I_MPI_HYDRA_BOOTSTRAP", INTEL_MPI_DEFAULT_BOOTSTRAP));
    }
    if !user_sets("I_MPI_HYDRA_BOOTSTRAP_EXEC") {
        vars.push(var("I_MPI_HYDRA_BOOTSTRAP_EXEC", KUBEXEC_PATH));
    }
    vars
}

#[cfg(test)]
mod tests;
