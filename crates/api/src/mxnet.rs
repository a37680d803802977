//! `MXJob`: Apache MXNet, as the Kubeflow training operator ran it until v1.8: parameter-server
//! training over ps-lite (`MXTrain`: a `Scheduler`, `Server`s and `Worker`s) or TVM auto-tuning
//! (`MXTune`: a `TunerTracker`, `TunerServer`s and a `Tuner`).

use std::fmt;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::replica::{ReplicaSpecs, ReplicaType};
use crate::run_policy::RunPolicy;
use crate::status::JobStatus;

/// The desired state of an MXJob.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubeflow.org",
    version = "v1",
    kind = "MXJob",
    namespaced,
    status = "JobStatus",
    shortname = "mxjob",
    derive = "PartialEq",
    doc = "MXJob represents an Apache MXNet training or auto-tuning job.",
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
pub struct MXJobSpec {
    /// Policies for running the job.
    #[serde(default)]
    pub run_policy: RunPolicy,
    /// `MXTrain` (Scheduler, Server, Worker) or `MXTune` (TunerTracker, TunerServer, Tuner).
    // Required in the CRD, as upstream's; read as optional here so that validation can say what
    // is expected when it is missing, with the job's other problems.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub job_mode: Option<JobMode>,
    /// Replica type to replica spec.
    pub mx_replica_specs: ReplicaSpecs,
}

/// What an MXJob does, and so which replica types it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum JobMode {
    /// Distributed training over ps-lite: a `Scheduler`, parameter `Server`s and `Worker`s.
    MXTrain,
    /// TVM auto-tuning: a `TunerTracker`, `TunerServer`s and a `Tuner`.
    MXTune,
}

impl JobMode {
    /// Both modes.
    pub const ALL: [JobMode; 2] = [JobMode::MXTrain, JobMode::MXTune];

    /// The spelling used in manifests.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            JobMode::MXTrain => "MXTrain",
            JobMode::MXTune => "MXTune",
        }
    }

    /// The replica types of this mode, in canonical spelling.
    #[must_use]
    pub fn replica_types(self) -> &'static [ReplicaType] {
        match self {
            JobMode::MXTrain => &[
                ReplicaType::Scheduler,
                ReplicaType::Server,
                ReplicaType::Worker,
            ],
            JobMode::MXTune => &[
                ReplicaType::TunerTracker,
                ReplicaType::TunerServer,
                ReplicaType::Tuner,
            ],
        }
    }
}

impl fmt::Display for JobMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The pod-template annotation whose value `MX_CONFIG`'s `labels` carries for each replica
/// type: the key under which TVM's tuner servers register with the tracker.
pub const TUNER_SERVER_KEY_ANNOTATION: &str = "tuner-server-key";
