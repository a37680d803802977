//! The six job kinds and the per-kind constants of docs/semantics.md §1 (one table, one source
//! of truth).

use std::fmt;
use std::str::FromStr;

use crate::replica::{ReplicaType, RestartPolicy};

/// A kubeflow.org/v1 training job kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JobKind {
    /// `TFJob`: TensorFlow.
    TFJob,
    /// `PyTorchJob`: PyTorch, optionally elastic (torchrun).
    PyTorchJob,
    /// `XGBoostJob`: XGBoost with a Rabit/collective tracker on the master.
    XGBoostJob,
    /// `PaddleJob`: PaddlePaddle collective or parameter-server training.
    PaddleJob,
    /// `JAXJob`: JAX multi-process.
    JAXJob,
    /// `MPIJob`: an MPI launcher driving workers (the v1 MPIJob of the training operator).
    MPIJob,
}

impl JobKind {
    /// Every kind, in a stable order.
    pub const ALL: [JobKind; 6] = [
        JobKind::TFJob,
        JobKind::PyTorchJob,
        JobKind::XGBoostJob,
        JobKind::PaddleJob,
        JobKind::JAXJob,
        JobKind::MPIJob,
    ];

    /// The `kind` string, e.g. `TFJob`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::TFJob => "TFJob",
            JobKind::PyTorchJob => "PyTorchJob",
            JobKind::XGBoostJob => "XGBoostJob",
            JobKind::PaddleJob => "PaddleJob",
            JobKind::JAXJob => "JAXJob",
            JobKind::MPIJob => "MPIJob",
        }
    }

    /// The lowercase singular resource name (`tfjob`), which is also the short name.
    #[must_use]
    pub fn singular(self) -> &'static str {
        match self {
            JobKind::TFJob => "tfjob",
            JobKind::PyTorchJob => "pytorchjob",
            JobKind::XGBoostJob => "xgboostjob",
            JobKind::PaddleJob => "paddlejob",
            JobKind::JAXJob => "jaxjob",
            JobKind::MPIJob => "mpijob",
        }
    }

    /// The plural resource name (`tfjobs`).
    #[must_use]
    pub fn plural(self) -> &'static str {
        match self {
            JobKind::TFJob => "tfjobs",
            JobKind::PyTorchJob => "pytorchjobs",
            JobKind::XGBoostJob => "xgboostjobs",
            JobKind::PaddleJob => "paddlejobs",
            JobKind::JAXJob => "jaxjobs",
            JobKind::MPIJob => "mpijobs",
        }
    }

    /// The JSON field holding the replica specs (`tfReplicaSpecs`).
    #[must_use]
    pub fn replica_specs_field(self) -> &'static str {
        match self {
            JobKind::TFJob => "tfReplicaSpecs",
            JobKind::PyTorchJob => "pytorchReplicaSpecs",
            JobKind::XGBoostJob => "xgbReplicaSpecs",
            JobKind::PaddleJob => "paddleReplicaSpecs",
            JobKind::JAXJob => "jaxReplicaSpecs",
            JobKind::MPIJob => "mpiReplicaSpecs",
        }
    }

    /// The framework label used in metrics (`tensorflow`, `pytorch`, ...).
    #[must_use]
    pub fn framework(self) -> &'static str {
        match self {
            JobKind::TFJob => "tensorflow",
            JobKind::PyTorchJob => "pytorch",
            JobKind::XGBoostJob => "xgboost",
            JobKind::PaddleJob => "paddle",
            JobKind::JAXJob => "jax",
            JobKind::MPIJob => "mpi",
        }
    }

    /// The value of the `training.kubeflow.org/operator-name` label.
    #[must_use]
    pub fn operator_name(self) -> &'static str {
        match self {
            JobKind::TFJob => "tfjob-controller",
            JobKind::PyTorchJob => "pytorchjob-controller",
            JobKind::XGBoostJob => "xgboostjob-controller",
            JobKind::PaddleJob => "paddlejob-controller",
            JobKind::JAXJob => "jaxjob-controller",
            JobKind::MPIJob => "mpijob-controller",
        }
    }

    /// The name of the container that carries the framework (MPI: none, the first container is used).
    #[must_use]
    pub fn default_container(self) -> Option<&'static str> {
        match self {
            JobKind::TFJob => Some("tensorflow"),
            JobKind::PyTorchJob => Some("pytorch"),
            JobKind::XGBoostJob => Some("xgboost"),
            JobKind::PaddleJob => Some("paddle"),
            JobKind::JAXJob => Some("jax"),
            JobKind::MPIJob => None,
        }
    }

    /// The default port's name and number, appended to the default container when missing.
    #[must_use]
    pub fn default_port(self) -> Option<(&'static str, i32)> {
        match self {
            JobKind::TFJob => Some(("tfjob-port", 2222)),
            JobKind::PyTorchJob => Some(("pytorchjob-port", 23456)),
            JobKind::XGBoostJob => Some(("xgboostjob-port", 9999)),
            JobKind::PaddleJob => Some(("master", 36543)),
            JobKind::JAXJob => Some(("jaxjob-port", 6666)),
            JobKind::MPIJob => None,
        }
    }

    /// The restart policy of a replica spec that sets none.
    #[must_use]
    pub fn default_restart_policy(self) -> RestartPolicy {
        match self {
            JobKind::PyTorchJob | JobKind::PaddleJob => RestartPolicy::OnFailure,
            JobKind::TFJob | JobKind::XGBoostJob | JobKind::JAXJob | JobKind::MPIJob => {
                RestartPolicy::Never
            }
        }
    }

    /// The replica types this kind accepts, in canonical spelling.
    #[must_use]
    pub fn replica_types(self) -> &'static [ReplicaType] {
        use ReplicaType::{Chief, Evaluator, Launcher, Master, PS, Worker};
        match self {
            JobKind::TFJob => &[Chief, Master, PS, Worker, Evaluator],
            JobKind::PyTorchJob | JobKind::XGBoostJob | JobKind::PaddleJob => &[Master, Worker],
            JobKind::JAXJob => &[Worker],
            JobKind::MPIJob => &[Launcher, Worker],
        }
    }

    /// Whether the CRD has a scale subresource on `Worker` (docs/semantics.md §1).
    #[must_use]
    pub fn has_scale_subresource(self) -> bool {
        matches!(
            self,
            JobKind::PyTorchJob | JobKind::PaddleJob | JobKind::JAXJob
        )
    }
}

impl fmt::Display for JobKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no job kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown job kind `{0}`: expected one of TFJob, PyTorchJob, XGBoostJob, PaddleJob, JAXJob, MPIJob \
     (kubectl spellings such as `tfjob` and `tfjobs` work too)"
)]
pub struct UnknownKind(pub String);

impl FromStr for JobKind {
    type Err = UnknownKind;

    /// Accepts the kubectl spellings: `TFJob`, `tfjob`, `tfjobs`, `tfjobs.kubeflow.org`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bare = s.strip_suffix(".kubeflow.org").unwrap_or(s);
        JobKind::ALL
            .into_iter()
            .find(|kind| {
                bare.eq_ignore_ascii_case(kind.as_str()) || bare.eq_ignore_ascii_case(kind.plural())
            })
            .ok_or_else(|| UnknownKind(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_accepts_kubectl_spellings() {
        for spelling in ["TFJob", "tfjob", "tfjobs", "TFJOBS", "tfjobs.kubeflow.org"] {
            assert_eq!(
                spelling.parse::<JobKind>(),
                Ok(JobKind::TFJob),
                "{spelling}"
            );
        }
        assert_eq!("mpijobs".parse::<JobKind>(), Ok(JobKind::MPIJob));
        assert!("job".parse::<JobKind>().is_err());
    }
}
