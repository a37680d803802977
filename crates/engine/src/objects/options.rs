//! [`BuildOptions`]: what the runtime decides about a job's objects, beyond the job itself.

use super::podgroup::GangScheduler;
use crate::addressing::Addressing;

/// The image of the PyTorch `init-pytorch` container unless the operator says otherwise.
pub const DEFAULT_PYTORCH_INIT_IMAGE: &str = "alpine:3.10";
/// How many times `init-pytorch` looks the master up (2 s apart) unless the operator says otherwise.
pub const DEFAULT_PYTORCH_INIT_MAX_TRIES: u32 = 100;
/// The image of MPI's `kubectl-delivery` init container unless the operator says otherwise.
pub const DEFAULT_MPI_KUBECTL_DELIVERY_IMAGE: &str = "kubeflow/kubectl-delivery:latest";

/// What the runtime decides about the objects, beyond the job itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildOptions {
    /// How replicas reach each other.
    pub addressing: Addressing,
    /// The gang scheduler (`--gang-scheduler-name`): `volcano`, `kubernetes`, another
    /// scheduler's name for scheduler-plugins, or `None` (or empty) for no gang scheduling.
    pub gang_scheduler: Option<String>,
    /// Image of PyTorch's `init-pytorch` container.
    pub pytorch_init_image: String,
    /// Lookups `init-pytorch` makes before giving up.
    pub pytorch_init_max_tries: u32,
    /// Image of MPI's `kubectl-delivery` init container (it copies `kubectl` for `kubexec.sh`).
    pub mpi_kubectl_delivery_image: String,
}

impl Default for BuildOptions {
    /// Cluster addressing without a cluster domain, no gang scheduling, upstream's images.
    fn default() -> Self {
        BuildOptions {
            addressing: Addressing::default(),
            gang_scheduler: None,
            pytorch_init_image: DEFAULT_PYTORCH_INIT_IMAGE.to_owned(),
            pytorch_init_max_tries: DEFAULT_PYTORCH_INIT_MAX_TRIES,
            mpi_kubectl_delivery_image: DEFAULT_MPI_KUBECTL_DELIVERY_IMAGE.to_owned(),
        }
    }
}

impl BuildOptions {
    /// The gang scheduler in use, if any.
    #[must_use]
    pub fn gang_scheduler(&self) -> Option<GangScheduler> {
        self.gang_scheduler
            .as_deref()
            .and_then(GangScheduler::from_name)
    }
}
