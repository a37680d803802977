//! The `kubeflow.org/v1` training job API.
//!
//! Types for the seven job kinds (TFJob, PyTorchJob, XGBoostJob, PaddleJob, JAXJob, MPIJob, MXJob),
//! manifest
//! loading with `FILE:LINE:COL` errors, the legacy `v1alpha1` TFJob conversion, defaulting and
//! validation with field paths, label selectors, and CRD generation. No client, no async: every runtime builds on this.

pub mod crd;
pub mod defaults;
pub mod expansion;
pub mod field_path;
pub mod job;
pub mod kind;
pub mod log_lines;
pub mod manifest;
pub mod namespace;
pub mod replica;
pub mod resources;
pub mod run_policy;
pub mod selector;
pub mod status;
pub mod validation;

pub mod jax;
pub mod mpi;
pub mod mxnet;
pub mod paddle;
pub mod pytorch;
pub mod quantity;
pub mod quota;
pub mod tensorflow;
pub mod xgboost;

pub use field_path::FieldPath;
pub use job::TrainingJob;
pub use kind::JobKind;
pub use replica::{ReplicaSpec, ReplicaSpecs, ReplicaType, RestartPolicy};
pub use run_policy::{CleanPodPolicy, RunPolicy, SchedulingPolicy};
pub use status::{ConditionStatus, JobCondition, JobConditionType, JobStatus, ReplicaStatus};

/// The API group of every training job kind.
pub const GROUP: &str = "kubeflow.org";
/// The API version implemented here.
pub const VERSION: &str = "v1";
/// `apiVersion` of every training job: `kubeflow.org/v1`.
pub const API_VERSION: &str = "kubeflow.org/v1";
