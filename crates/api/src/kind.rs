//! The seven job kinds and the per-kind constants of docs/semantics.md §1 (one table, one source
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
    /// `MXJob`: Apache MXNet, parameter-server training (ps-lite) or auto-tuning, as the training
    /// operator had it until v1.8 (v1.9 dropped it with MXNet's retirement).
    MXJob,
}

impl JobKind {
    /// Every kind, in a stable order.
    pub const ALL: [JobKind; 7] = [
        JobKind::TFJob,
        JobKind::PyTorchJob,
        JobKind::XGBoostJob,
        JobKind::PaddleJob,
        JobKind::JAXJob,
        JobKind::MPIJob,
        JobKind::MXJob,
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
            JobKind::MXJob => "MXJob",
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
            JobKind::MXJob => "mxjob",
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
            JobKind::MXJob => "mxjobs",
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
            JobKind::MXJob => "mxReplicaSpecs",
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
            JobKind::MXJob => "mxnet",
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
            JobKind::MXJob => "mxjob-controller",
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
            JobKind::MXJob => Some("mxnet"),
        }
    }

    /// The job `name` of this kind as kubectl names it: `tfjob.kubeflow.org/mnist`.
    #[must_use]
    pub fn qualified_name(self, name: &str) -> String {
        format!("{}.{}/{name}", self.singular(), crate::GROUP)
    }

    /// The container that carries the framework among a pod's `containers`: the kind's
    /// [`default_container`](JobKind::default_container) when the pod has it, else the first
    /// (an MPIJob names none; validation makes every other kind's pods have theirs).
    #[must_use]
    pub fn framework_container(
        self,
        containers: &[k8s_openapi::api::core::v1::Container],
    ) -> Option<&k8s_openapi::api::core::v1::Container> {
        let name = self
            .framework_container_name(containers.iter().map(|container| container.name.as_str()))?;
        containers.iter().find(|container| container.name == name)
    }

    /// The name of the framework's container among a pod's containers' `names`, in their order
    /// (see [`framework_container`](JobKind::framework_container)).
    #[must_use]
    pub fn framework_container_name<'a>(
        self,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Option<&'a str> {
        let default = self.default_container();
        let mut first = None;
        for name in names {
            if Some(name) == default {
                return Some(name);
            }
            first.get_or_insert(name);
        }
        first
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
            JobKind::MXJob => Some(("mxjob-port", 9091)),
        }
    }

    /// The restart policy of a replica spec that sets none.
    #[must_use]
    pub fn default_restart_policy(self) -> RestartPolicy {
        match self {
            JobKind::PyTorchJob | JobKind::PaddleJob => RestartPolicy::OnFailure,
            JobKind::TFJob
            | JobKind::XGBoostJob
            | JobKind::JAXJob
            | JobKind::MPIJob
            | JobKind::MXJob => RestartPolicy::Never,
        }
    }

    /// The replica types this kind accepts, in canonical spelling.
    #[must_use]
    pub fn replica_types(self) -> &'static [ReplicaType] {
        use ReplicaType::{
            Chief, Evaluator, Launcher, Master, PS, Scheduler, Server, Tuner, TunerServer,
            TunerTracker, Worker,
        };
        match self {
            JobKind::TFJob => &[Chief, Master, PS, Worker, Evaluator],
            JobKind::PyTorchJob | JobKind::XGBoostJob | JobKind::PaddleJob => &[Master, Worker],
            JobKind::JAXJob => &[Worker],
            JobKind::MPIJob => &[Launcher, Worker],
            JobKind::MXJob => &[Scheduler, Server, Worker, TunerTracker, TunerServer, Tuner],
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

/// A string that names no job kind; its message suggests the spelling meant when one is close
/// (`tfjbs`: did you mean `tfjobs`?).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKind(pub String);

impl std::error::Error for UnknownKind {}

impl fmt::Display for UnknownKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown job kind `{}`", self.0)?;
        if let Some(spelling) = self.closest_spelling() {
            write!(f, " (did you mean `{spelling}`?)")?;
        }
        write!(
            f,
            ": expected one of TFJob, PyTorchJob, XGBoostJob, PaddleJob, JAXJob, MPIJob, MXJob \
             (kubectl spellings such as `tfjob` and `tfjobs` work too)"
        )
    }
}

impl UnknownKind {
    /// The kubectl spelling of a kind (`tfjob`, `tfjobs`, `TFJob`) at most two edits away from
    /// what was typed, and no more than one edit per three letters (a swap of two letters counts
    /// as one), the closest first.
    #[must_use]
    pub fn closest_spelling(&self) -> Option<String> {
        let typed = self.0.to_ascii_lowercase();
        let typed = typed.strip_suffix(".kubeflow.org").unwrap_or(&typed);
        JobKind::ALL
            .into_iter()
            .flat_map(|kind| [kind.singular(), kind.plural()])
            .map(|spelling| (strsim::damerau_levenshtein(typed, spelling), spelling))
            .filter(|&(distance, _)| distance <= 2 && distance * 3 <= typed.len())
            .min_by_key(|&(distance, _)| distance)
            .map(|(_, spelling)| spelling.to_owned())
    }
}

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
    fn a_mistyped_kind_is_answered_with_the_spelling_meant() {
        let message = |typed: &str| typed.parse::<JobKind>().unwrap_err().to_string();
        assert_eq!(
            message("tfjbs"),
            "unknown job kind `tfjbs` (did you mean `tfjobs`?): expected one of TFJob, \
             PyTorchJob, XGBoostJob, PaddleJob, JAXJob, MPIJob, MXJob (kubectl spellings such \
             as `tfjob` and `tfjobs` work too)"
        );
        assert!(message("PytorchJbo").contains("(did you mean `pytorchjob`?)"));
        assert!(message("mpijbos.kubeflow.org").contains("(did you mean `mpijobs`?)"));
        assert!(!message("deployment").contains("did you mean"));
    }

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
        assert_eq!("mxjob".parse::<JobKind>(), Ok(JobKind::MXJob));
        assert_eq!("MXJobs".parse::<JobKind>(), Ok(JobKind::MXJob));
        assert!("job".parse::<JobKind>().is_err());
    }
}
