//! A job in one line, as the dashboard's Jobs page lists it: [`JobSummary`].

use jiff::Timestamp;
use serde::Serialize;
use trainctl_api::JobStatus;
use trainctl_local::store::{JobRecord, ReplicaRecord, ReplicaState};

/// A job in one line: its state, replicas, restarts, times and GPUs, and why it waits.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobSummary {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// The kind, as in manifests (`TFJob`).
    pub kind: &'static str,
    /// The kind's plural, as the API's paths name it (`tfjobs`).
    pub plural: &'static str,
    /// `metadata.uid`.
    pub uid: String,
    /// The state in one word, as [`JobView`](super::JobView) says it.
    pub state: &'static str,
    /// Why a queued job waits, in plain words.
    pub waiting: Option<String>,
    /// Its place in the server's queue, 1 being the next to be admitted.
    pub queue_position: Option<u32>,
    /// Replicas whose process runs.
    pub replicas_ready: usize,
    /// Replicas the spec asks for.
    pub replicas_total: i64,
    /// Restarts of all its replicas.
    pub restarts: i64,
    /// When the job was submitted.
    pub created: Timestamp,
    /// When it started (`status.startTime`).
    pub started: Option<Timestamp>,
    /// When it finished: `status.completionTime`, else the last condition's transition.
    pub finished_at: Option<Timestamp>,
    /// The GPUs its replicas hold now.
    pub gpus: usize,
}

impl JobSummary {
    /// The summary of a recorded job and its replicas; `waiting` and `queue_position` as the
    /// server's queue says.
    #[must_use]
    pub fn of(
        record: &JobRecord,
        replicas: &[ReplicaRecord],
        waiting: Option<String>,
        queue_position: Option<u32>,
    ) -> JobSummary {
        let state = super::shown_state(record, waiting.is_some());
        let status = record.job.status();
        let finished_at = status
            .filter(|_| record.finished)
            .and_then(JobStatus::finish_time)
            .map(|time| time.0);
        let running = |replica: &&ReplicaRecord| replica.state == ReplicaState::Running;
        JobSummary {
            namespace: record.namespace.clone(),
            name: record.name.clone(),
            kind: record.kind.as_str(),
            plural: record.kind.plural(),
            uid: record.uid.clone(),
            state,
            waiting,
            queue_position,
            replicas_ready: replicas.iter().filter(running).count(),
            replicas_total: record
                .job
                .replica_specs()
                .values()
                .map(|spec| i64::from(spec.replicas_or_default()))
                .sum(),
            restarts: replicas
                .iter()
                .map(|replica| i64::from(replica.restarts))
                .sum(),
            created: record.created_at,
            started: status
                .and_then(|status| status.start_time.as_ref())
                .map(|time| time.0),
            finished_at,
            gpus: replicas
                .iter()
                .filter(running)
                .map(|replica| replica.gpus.len())
                .sum(),
        }
    }
}
