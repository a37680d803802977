//! `MPIJob` (the training operator's v1 MPIJob): a launcher running `mpirun` against workers.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::replica::ReplicaSpecs;
use crate::run_policy::{CleanPodPolicy, RunPolicy};
use crate::status::JobStatus;

/// The desired state of an MPIJob.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubeflow.org",
    version = "v1",
    kind = "MPIJob",
    namespaced,
    status = "JobStatus",
    shortname = "mpijob",
    derive = "PartialEq",
    doc = "MPIJob represents an MPI training job.",
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
pub struct MPIJobSpec {
    /// Slots per worker in the hostfile (1 when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots_per_worker: Option<i32>,
    /// Deprecated: use `runPolicy.cleanPodPolicy`. Copied there by defaulting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_pod_policy: Option<CleanPodPolicy>,
    /// Replica type (`Launcher`, `Worker`) to replica spec.
    pub mpi_replica_specs: ReplicaSpecs,
    /// The container that runs MPI (default: the first container).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub main_container: Option<String>,
    /// Policies for running the job.
    #[serde(default)]
    pub run_policy: RunPolicy,
}
