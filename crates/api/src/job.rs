//! [`TrainingJob`]: any of the seven kinds, with the accessors every runtime needs.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Serialize, Serializer};

use crate::jax::JAXJob;
use crate::kind::JobKind;
use crate::mpi::MPIJob;
use crate::mxnet::MXJob;
use crate::paddle::PaddleJob;
use crate::pytorch::PyTorchJob;
use crate::replica::ReplicaSpecs;
use crate::run_policy::RunPolicy;
use crate::status::JobStatus;
use crate::tensorflow::TFJob;
use crate::xgboost::XGBoostJob;

/// A training job of any kind.
#[derive(Debug, Clone, PartialEq)]
pub enum TrainingJob {
    /// A TFJob.
    TF(TFJob),
    /// A PyTorchJob.
    PyTorch(PyTorchJob),
    /// An XGBoostJob.
    XGBoost(XGBoostJob),
    /// A PaddleJob.
    Paddle(PaddleJob),
    /// A JAXJob.
    Jax(JAXJob),
    /// An MPIJob.
    Mpi(MPIJob),
    /// An MXJob.
    MXNet(MXJob),
}

/// Applies the same expression to the inner job, whatever its kind.
macro_rules! each_kind {
    ($job:expr, $inner:pat => $body:expr) => {
        match $job {
            TrainingJob::TF($inner) => $body,
            TrainingJob::PyTorch($inner) => $body,
            TrainingJob::XGBoost($inner) => $body,
            TrainingJob::Paddle($inner) => $body,
            TrainingJob::Jax($inner) => $body,
            TrainingJob::Mpi($inner) => $body,
            TrainingJob::MXNet($inner) => $body,
        }
    };
}

impl TrainingJob {
    /// The job's kind.
    #[must_use]
    pub fn kind(&self) -> JobKind {
        match self {
            TrainingJob::TF(_) => JobKind::TFJob,
            TrainingJob::PyTorch(_) => JobKind::PyTorchJob,
            TrainingJob::XGBoost(_) => JobKind::XGBoostJob,
            TrainingJob::Paddle(_) => JobKind::PaddleJob,
            TrainingJob::Jax(_) => JobKind::JAXJob,
            TrainingJob::Mpi(_) => JobKind::MPIJob,
            TrainingJob::MXNet(_) => JobKind::MXJob,
        }
    }

    /// The job's object metadata.
    #[must_use]
    pub fn metadata(&self) -> &ObjectMeta {
        each_kind!(self, job => &job.metadata)
    }

    /// The job's object metadata, mutably.
    pub fn metadata_mut(&mut self) -> &mut ObjectMeta {
        each_kind!(self, job => &mut job.metadata)
    }

    /// `metadata.name`, or `""` when unset (validation rejects that).
    #[must_use]
    pub fn name(&self) -> &str {
        self.metadata().name.as_deref().unwrap_or_default()
    }

    /// `metadata.namespace`, or `default`.
    #[must_use]
    pub fn namespace(&self) -> &str {
        self.metadata().namespace.as_deref().unwrap_or("default")
    }

    /// The replica specs, keyed by canonical replica type.
    #[must_use]
    pub fn replica_specs(&self) -> &ReplicaSpecs {
        match self {
            TrainingJob::TF(job) => &job.spec.tf_replica_specs,
            TrainingJob::PyTorch(job) => &job.spec.pytorch_replica_specs,
            TrainingJob::XGBoost(job) => &job.spec.xgb_replica_specs,
            TrainingJob::Paddle(job) => &job.spec.paddle_replica_specs,
            TrainingJob::Jax(job) => &job.spec.jax_replica_specs,
            TrainingJob::Mpi(job) => &job.spec.mpi_replica_specs,
            TrainingJob::MXNet(job) => &job.spec.mx_replica_specs,
        }
    }

    /// The replica specs, mutably.
    pub fn replica_specs_mut(&mut self) -> &mut ReplicaSpecs {
        match self {
            TrainingJob::TF(job) => &mut job.spec.tf_replica_specs,
            TrainingJob::PyTorch(job) => &mut job.spec.pytorch_replica_specs,
            TrainingJob::XGBoost(job) => &mut job.spec.xgb_replica_specs,
            TrainingJob::Paddle(job) => &mut job.spec.paddle_replica_specs,
            TrainingJob::Jax(job) => &mut job.spec.jax_replica_specs,
            TrainingJob::Mpi(job) => &mut job.spec.mpi_replica_specs,
            TrainingJob::MXNet(job) => &mut job.spec.mx_replica_specs,
        }
    }

    /// The run policy.
    #[must_use]
    pub fn run_policy(&self) -> &RunPolicy {
        each_kind!(self, job => &job.spec.run_policy)
    }

    /// The run policy, mutably.
    pub fn run_policy_mut(&mut self) -> &mut RunPolicy {
        each_kind!(self, job => &mut job.spec.run_policy)
    }

    /// The status, if any was recorded.
    #[must_use]
    pub fn status(&self) -> Option<&JobStatus> {
        each_kind!(self, job => job.status.as_ref())
    }

    /// The status slot, mutably.
    pub fn status_mut(&mut self) -> &mut Option<JobStatus> {
        each_kind!(self, job => &mut job.status)
    }

    /// The total number of replicas over all replica types (saturating: validation bounds it).
    #[must_use]
    pub fn total_replicas(&self) -> i32 {
        self.replica_specs()
            .values()
            .map(crate::replica::ReplicaSpec::replicas_or_default)
            .fold(0, i32::saturating_add)
    }
}

impl Serialize for TrainingJob {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        each_kind!(self, job => job.serialize(serializer))
    }
}
