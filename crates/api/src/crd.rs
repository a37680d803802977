//! CRD generation: the seven CustomResourceDefinitions, derived from the Rust types.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use crate::kind::JobKind;
use crate::{jax, mpi, mxnet, paddle, pytorch, tensorflow, xgboost};

/// The CRD of one kind.
#[must_use]
pub fn crd(kind: JobKind) -> CustomResourceDefinition {
    match kind {
        JobKind::TFJob => tensorflow::TFJob::crd(),
        JobKind::PyTorchJob => pytorch::PyTorchJob::crd(),
        JobKind::XGBoostJob => xgboost::XGBoostJob::crd(),
        JobKind::PaddleJob => paddle::PaddleJob::crd(),
        JobKind::JAXJob => jax::JAXJob::crd(),
        JobKind::MPIJob => mpi::MPIJob::crd(),
        JobKind::MXJob => mxnet::MXJob::crd(),
    }
}

/// Every CRD, in [`JobKind::ALL`] order.
#[must_use]
pub fn all() -> Vec<CustomResourceDefinition> {
    JobKind::ALL.into_iter().map(crd).collect()
}
