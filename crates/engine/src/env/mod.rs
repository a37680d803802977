//! The environment injected into replicas (docs/semantics.md §4), one module per framework.
//!
//! Injected variables are appended after the user's own env. Each framework decides which
//! containers receive them: TF only the first container named `tensorflow`, MPI the launcher's
//! first container, the others (MXNet included) every (non-init) container.

mod inject;
pub mod jax;
pub mod mpi;
pub mod mxnet;
pub mod paddle;
pub mod pytorch;
pub mod tensorflow;
pub mod xgboost;

use k8s_openapi::api::core::v1::EnvVar;

pub use inject::JobEnv;

/// `PYTHONUNBUFFERED=1`, which every Python framework except TF gets so logs are not held back.
pub const PYTHONUNBUFFERED: &str = "PYTHONUNBUFFERED";

/// An env var with a literal value.
#[must_use]
pub fn var(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.into()),
        value_from: None,
    }
}
