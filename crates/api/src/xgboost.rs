//! `XGBoostJob`: XGBoost with a master (which runs the tracker) and workers.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::replica::ReplicaSpecs;
use crate::run_policy::RunPolicy;
use crate::status::JobStatus;

/// The desired state of an XGBoostJob.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubeflow.org",
    version = "v1",
    kind = "XGBoostJob",
    namespaced,
    status = "JobStatus",
    shortname = "xgboostjob",
    derive = "PartialEq",
    doc = "XGBoostJob represents an XGBoost training job.",
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
pub struct XGBoostJobSpec {
    /// Policies for running the job.
    #[serde(default)]
    pub run_policy: RunPolicy,
    /// Replica type (`Master`, `Worker`) to replica spec.
    pub xgb_replica_specs: ReplicaSpecs,
}
