//! `TFJob`: TensorFlow training with Chief/Master, Workers, parameter servers and an Evaluator.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::replica::ReplicaSpecs;
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
