//! `PaddleJob`: PaddlePaddle collective or parameter-server training.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::pytorch::MetricSpecs;
use crate::replica::ReplicaSpecs;
use crate::run_policy::RunPolicy;
use crate::status::JobStatus;

/// The desired state of a PaddleJob.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubeflow.org",
    version = "v1",
    kind = "PaddleJob",
    namespaced,
    status = "JobStatus",
    shortname = "paddlejob",
    derive = "PartialEq",
    doc = "PaddleJob represents a PaddlePaddle training job.",
    printcolumn(
        name = "State",
        type_ = "string",
        json_path = ".status.conditions[-1:].type"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    scale(
        spec_replicas_path = ".spec.paddleReplicaSpecs.Worker.replicas",
        status_replicas_path = ".status.replicaStatuses.Worker.active",
        label_selector_path = ".status.replicaStatuses.Worker.selector"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct PaddleJobSpec {
    /// Policies for running the job.
    #[serde(default)]
    pub run_policy: RunPolicy,
    /// Elastic training bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elastic_policy: Option<PaddleElasticPolicy>,
    /// Replica type (`Master`, `Worker`) to replica spec.
    pub paddle_replica_specs: ReplicaSpecs,
}

/// Elastic training bounds of a PaddleJob.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaddleElasticPolicy {
    /// Lower bound of workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_replicas: Option<i32>,
    /// Upper bound of workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_replicas: Option<i32>,
    /// Restarts allowed before the elastic agent gives up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_restarts: Option<i32>,
    /// Autoscaling metrics (HPA `MetricSpec`s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<MetricSpecs>,
}
