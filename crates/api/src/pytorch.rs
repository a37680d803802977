//! `PyTorchJob`: PyTorch with a master and workers, optionally elastic (torchrun rendezvous).

use k8s_openapi::api::autoscaling::v2::MetricSpec;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::replica::ReplicaSpecs;
use crate::run_policy::RunPolicy;
use crate::status::JobStatus;

/// The `nprocPerNode` a PyTorchJob gets when it sets none.
pub const DEFAULT_NPROC_PER_NODE: &str = "auto";
/// The rendezvous backend an elastic PyTorchJob gets when it sets none.
pub const DEFAULT_RDZV_BACKEND: &str = "c10d";

/// Autoscaling metrics (HPA `MetricSpec`s) of an elastic job.
pub type MetricSpecs = Vec<MetricSpec>;

/// The desired state of a PyTorchJob.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubeflow.org",
    version = "v1",
    kind = "PyTorchJob",
    namespaced,
    status = "JobStatus",
    shortname = "pytorchjob",
    derive = "PartialEq",
    doc = "PyTorchJob represents a PyTorch training job.",
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
        spec_replicas_path = ".spec.pytorchReplicaSpecs.Worker.replicas",
        status_replicas_path = ".status.replicaStatuses.Worker.active",
        label_selector_path = ".status.replicaStatuses.Worker.selector"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct PyTorchJobSpec {
    /// Policies for running the job.
    #[serde(default)]
    pub run_policy: RunPolicy,
    /// Elastic training (torchrun rendezvous) settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elastic_policy: Option<ElasticPolicy>,
    /// Replica type (`Master`, `Worker`) to replica spec.
    pub pytorch_replica_specs: ReplicaSpecs,
    /// Processes per node: an integer, `auto`, `cpu` or `gpu` (default `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nproc_per_node: Option<String>,
}

/// Elastic training settings of a PyTorchJob (torchrun's rendezvous).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ElasticPolicy {
    /// Lower bound of nodes (defaults to `maxReplicas`, else to the Worker replicas).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_replicas: Option<i32>,
    /// Upper bound of nodes (defaults to `minReplicas`, else to the Worker replicas).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_replicas: Option<i32>,
    /// Rendezvous backend: `c10d` (default), `etcd` or `etcd-v2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdzv_backend: Option<String>,
    /// Rendezvous port (default: the Worker's port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdzv_port: Option<i32>,
    /// Rendezvous host (default: worker 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdzv_host: Option<String>,
    /// Rendezvous id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdzv_id: Option<String>,
    /// Extra rendezvous configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdzv_conf: Option<Vec<RdzvConf>>,
    /// torchrun `--standalone`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standalone: Option<bool>,
    /// Deprecated: use `spec.nprocPerNode`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_proc_per_node: Option<i32>,
    /// torchrun `--max-restarts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_restarts: Option<i32>,
    /// Autoscaling metrics (HPA `MetricSpec`s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<MetricSpecs>,
}

/// One `key=value` of the rendezvous configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RdzvConf {
    /// The key.
    #[serde(default)]
    pub key: String,
    /// The value.
    #[serde(default)]
    pub value: String,
}
