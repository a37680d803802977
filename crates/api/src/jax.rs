//! `JAXJob`: multi-process JAX, every process a worker.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::replica::ReplicaSpecs;
use crate::run_policy::RunPolicy;
use crate::status::JobStatus;

/// The desired state of a JAXJob.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubeflow.org",
    version = "v1",
    kind = "JAXJob",
    namespaced,
    status = "JobStatus",
    shortname = "jaxjob",
    derive = "PartialEq",
    doc = "JAXJob represents a JAX multi-process training job.",
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
        spec_replicas_path = ".spec.jaxReplicaSpecs.Worker.replicas",
        status_replicas_path = ".status.replicaStatuses.Worker.active",
        label_selector_path = ".status.replicaStatuses.Worker.selector"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct JAXJobSpec {
    /// Policies for running the job.
    #[serde(default)]
    pub run_policy: RunPolicy,
    /// Replica type (`Worker`) to replica spec.
    pub jax_replica_specs: ReplicaSpecs,
}
