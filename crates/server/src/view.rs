//! What the API shows of a job: [`JobView`], as `docs/server-api.md` describes it; what a
//! submission recorded ([`Submitted`]); and what the dashboard shows: a job in one line
//! ([`JobSummary`]) and the machine ([`MachineView`]).

mod machine;
mod summary;

pub use machine::{Amounts, GpuHolder, GpuView, HolderView, JobRef, MachineView, QueuedView};
pub use summary::JobSummary;

use jiff::Timestamp;
use serde::Serialize;
use trainctl_local::store::{EventRecord, JobRecord, ReplicaRecord};

use crate::supervisor::{ClaimBound, ObjectApplied, QuotaApplied};

/// What a submission recorded, as the API answers it.
#[derive(Debug, Clone, Serialize)]
pub struct Submitted {
    /// The quotas applied, in file order.
    #[serde(rename = "resourceQuotas")]
    pub quotas: Vec<QuotaApplied>,
    /// The claims bound (`volume`), with the directory each was bound to before.
    pub claims: Vec<ClaimBound>,
    /// The ConfigMaps applied, in file order: names, never data.
    #[serde(rename = "configMaps")]
    pub config_maps: Vec<ObjectApplied>,
    /// The Secrets applied, in file order: names, never data.
    pub secrets: Vec<ObjectApplied>,
    /// The jobs recorded and queued, in file order.
    pub jobs: Vec<JobView>,
}

/// A job as the API shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobView {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// The kind, as in manifests (`TFJob`).
    pub kind: &'static str,
    /// `metadata.uid`.
    pub uid: String,
    /// The state in one word (`Pending`, `Running`, `Succeeded`...), as `trainctl get` says it.
    pub state: &'static str,
    /// Why a queued job waits, in plain words.
    pub waiting: Option<String>,
    /// When the job was submitted.
    pub created: Timestamp,
    /// Whether the job reached a final state.
    pub finished: bool,
    /// The whole job object, status included.
    pub job: serde_json::Value,
    /// Its replicas.
    pub replicas: Vec<ReplicaView>,
    /// Its events, oldest first (empty in lists).
    pub events: Vec<EventView>,
}

/// One replica of a [`JobView`].
#[derive(Debug, Clone, Serialize)]
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
    pub state: &'static str,
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
    /// When its process last started.
    pub started: Option<Timestamp>,
    /// When it finished.
    pub finished: Option<Timestamp>,
}

/// One event of a [`JobView`].
#[derive(Debug, Clone, Serialize)]
pub struct EventView {
    /// When it happened.
    pub time: Timestamp,
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: String,
    /// The reason, one word.
    pub reason: String,
    /// What happened.
    pub message: String,
}

impl JobView {
    /// The view of a recorded job; `queued` says why it waits in the server's queue, if it does.
    #[must_use]
    pub fn of(
        record: &JobRecord,
        replicas: &[ReplicaRecord],
        events: &[EventRecord],
        queued: Option<String>,
    ) -> JobView {
        let state = shown_state(record, queued.is_some());
        JobView {
            namespace: record.namespace.clone(),
            name: record.name.clone(),
            kind: record.kind.as_str(),
            uid: record.uid.clone(),
            state,
            waiting: queued,
            created: record.created_at,
            finished: record.finished,
            job: serde_json::to_value(&record.job).unwrap_or(serde_json::Value::Null),
            replicas: replicas.iter().map(ReplicaView::of).collect(),
            events: events.iter().map(EventView::of).collect(),
        }
    }
}

/// The state a job is shown in: its record's, except that a job waiting in the queue is
/// `Pending` (not yet `Created`).
fn shown_state(record: &JobRecord, queued: bool) -> &'static str {
    match record.state() {
        "Created" | "Pending" if queued => "Pending",
        state => state,
    }
}

impl ReplicaView {
    fn of(record: &ReplicaRecord) -> ReplicaView {
        ReplicaView {
            name: record.name(),
            type_: record.replica_type.as_str().to_owned(),
            index: record.index,
            state: record.state.as_str(),
            pid: record.pid.map(|pid| pid.pid),
            port: record.port,
            gpus: record.gpus.clone(),
            restarts: record.restarts,
            exit_code: record.exit_code,
            started: record.started_at,
            finished: record.finished_at,
        }
    }
}

impl EventView {
    fn of(record: &EventRecord) -> EventView {
        EventView {
            time: record.time,
            type_: record.type_.clone(),
            reason: record.reason.clone(),
            message: record.message.clone(),
        }
    }
}
