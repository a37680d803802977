//! A job as the API shows it ([`JobView`]: with its replicas and events), and in one line, as
//! the dashboard's Jobs page lists it ([`JobSummary`]).

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Word, words};

/// A job as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobView {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// The kind, as in manifests (`TFJob`).
    #[serde(deserialize_with = "words::kind")]
    #[schemars(schema_with = "words::kind_schema")]
    pub kind: Word,
    /// `metadata.uid`.
    pub uid: String,
    /// The state in one word (`Pending`, `Running`, `Succeeded`...), as `trainctl get` says it.
    #[serde(deserialize_with = "words::job_state")]
    #[schemars(schema_with = "words::job_state_schema")]
    pub state: Word,
    /// Why a queued job waits, in plain words.
    pub waiting: Option<String>,
    /// Why a failed job failed, in a few words (`worker-0 OOMKilled (exit code 137)`).
    #[serde(default)]
    pub failure: Option<String>,
    /// [`JobSummary::reason`].
    pub reason: Option<String>,
    /// When the job was submitted.
    #[schemars(schema_with = "words::time_schema")]
    pub created: Timestamp,
    /// Whether the job reached a final state.
    pub finished: bool,
    /// The whole kubeflow.org/v1 object, status included.
    #[schemars(extend("type" = "object"))]
    pub job: serde_json::Value,
    /// Its replicas.
    pub replicas: Vec<ReplicaView>,
    /// Its events, oldest first (empty in lists).
    pub events: Vec<EventView>,
}

impl JobView {
    /// `tfjob.kubeflow.org/mnist`, as kubectl names a resource.
    #[must_use]
    pub fn resource(&self) -> String {
        match self.kind.parse::<trainctl_api::JobKind>() {
            Ok(kind) => kind.qualified_name(&self.name),
            // Decoding accepts only the kinds' words: this is never reached.
            Err(_) => format!("{}/{}", self.kind.to_lowercase(), self.name),
        }
    }
}

/// One replica of a [`JobView`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaView {
    /// `<type>-<index>`.
    pub name: String,
    /// The replica type, as in manifests (`Worker`).
    #[serde(rename = "type")]
    pub type_: String,
    /// The index within its type.
    pub index: i32,
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Stopped`.
    #[serde(deserialize_with = "words::replica_state")]
    #[schemars(schema_with = "words::replica_state_schema")]
    pub state: Word,
    /// The process id while it runs.
    pub pid: Option<i32>,
    /// Its loopback port.
    pub port: Option<u16>,
    /// The GPUs it was given.
    pub gpus: Vec<u32>,
    /// How many times its process restarted.
    pub restarts: i32,
    /// The last exit code.
    pub exit_code: Option<i32>,
    /// Why it ended, when the kernel said (`OOMKilled`).
    #[serde(default)]
    pub reason: Option<String>,
    /// When its process last started.
    #[schemars(schema_with = "words::optional_time_schema")]
    pub started: Option<Timestamp>,
    /// When it finished.
    #[schemars(schema_with = "words::optional_time_schema")]
    pub finished: Option<Timestamp>,
}

/// One event of a [`JobView`]: alike events are one, counted, as Kubernetes counts them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EventView {
    /// When it (last) happened: Kubernetes' `lastTimestamp`.
    #[schemars(schema_with = "words::time_schema")]
    pub time: Timestamp,
    /// When it first happened (Kubernetes' `firstTimestamp`): `time`, for an event that
    /// happened once.
    #[serde(rename = "firstTimestamp")]
    #[schemars(schema_with = "words::time_schema")]
    pub first_timestamp: Timestamp,
    /// How many times it happened (Kubernetes' `count`).
    pub count: u32,
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: String,
    /// The reason, one word.
    pub reason: String,
    /// What happened.
    pub message: String,
}

/// A job in one line: its state, replicas, restarts, times and GPUs, and why it waits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobSummary {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// The kind, as in manifests (`TFJob`).
    #[serde(deserialize_with = "words::kind")]
    #[schemars(schema_with = "words::kind_schema")]
    pub kind: Word,
    /// The kind's plural, as the API's paths name it (`tfjobs`).
    #[serde(deserialize_with = "words::plural")]
    #[schemars(schema_with = "words::plural_schema")]
    pub plural: Word,
    /// `metadata.uid`.
    pub uid: String,
    /// The state in one word, as [`JobView`] says it.
    #[serde(deserialize_with = "words::job_state")]
    #[schemars(schema_with = "words::job_state_schema")]
    pub state: Word,
    /// Why a queued job waits, in plain words.
    pub waiting: Option<String>,
    /// Why a failed job failed, as [`JobView`] says it.
    #[serde(default)]
    pub failure: Option<String>,
    /// Why a job that runs does not get on, as `trainctl get -o wide`'s REASON says it:
    /// `CrashLoopBackOff` when each of its replicas that has not ended waits out a restart
    /// back-off.
    pub reason: Option<String>,
    /// Its place in the server's queue, 1 being the next to be admitted.
    pub queue_position: Option<u32>,
    /// Replicas whose process runs.
    pub replicas_ready: usize,
    /// Replicas the spec asks for.
    pub replicas_total: i64,
    /// Restarts of all its replicas.
    pub restarts: i64,
    /// When the job was submitted.
    #[schemars(schema_with = "words::time_schema")]
    pub created: Timestamp,
    /// When it started (`status.startTime`).
    #[schemars(schema_with = "words::optional_time_schema")]
    pub started: Option<Timestamp>,
    /// When it finished: `status.completionTime`, else the last condition's transition.
    #[schemars(schema_with = "words::optional_time_schema")]
    pub finished_at: Option<Timestamp>,
    /// The GPUs its running replicas hold now.
    pub gpus: usize,
}
