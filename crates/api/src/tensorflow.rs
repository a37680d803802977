//! `TFJob`: TensorFlow training with Chief/Master, Workers, parameter servers and an Evaluator.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::replica::{ReplicaSpecs, ReplicaType};
use crate::run_policy::RunPolicy;
use crate::status::JobStatus;

/// The desired state of a TFJob.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubeflow.org",
    version = "v1",
    kind = "TFJob",
    namespaced,
    status = "JobStatus",
    shortname = "tfjob",
    derive = "PartialEq",
    doc = "TFJob represents a TensorFlow training job.",
    printcolumn(
        name = "State",
        type_ = "string",
        json_path = ".status.conditions[-1:].type"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct TFJobSpec {
    /// Policies for running the job.
    #[serde(default)]
    pub run_policy: RunPolicy,
    /// Who decides success: `""` (chief/master, else worker 0) or `AllWorkers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_policy: Option<SuccessPolicy>,
    /// Replica type (`Chief`, `Master`, `PS`, `Worker`, `Evaluator`) to replica spec.
    pub tf_replica_specs: ReplicaSpecs,
    /// Workers get a sparse `TF_CONFIG` and may come and go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_dynamic_worker: Option<bool>,
}

/// Which replicas decide that a TFJob succeeded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum SuccessPolicy {
    /// The chief (or master) decides; without one, worker 0.
    #[default]
    #[serde(rename = "")]
    Default,
    /// Every worker must succeed.
    AllWorkers,
}

/// The container that receives `TF_CONFIG` (the first one with this name).
pub const CONTAINER: &str = "tensorflow";

/// The replica types counted to decide whether a job is distributed.
const TF_TYPES: [ReplicaType; 5] = [
    ReplicaType::Chief,
    ReplicaType::Evaluator,
    ReplicaType::Master,
    ReplicaType::PS,
    ReplicaType::Worker,
];

/// Whether a TFJob with these replica specs is distributed: its TF replicas do not add up to
/// exactly one. Only a distributed job's replicas get `TF_CONFIG`.
#[must_use]
pub fn is_distributed(specs: &ReplicaSpecs) -> bool {
    let total: i64 = TF_TYPES
        .iter()
        .filter_map(|replica_type| specs.get(replica_type))
        .map(|spec| i64::from(spec.replicas_or_default()))
        .sum();
    total != 1
}
