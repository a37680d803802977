//! What the API shows of a job, built from its records: [`job_view`] (a [`JobView`], as
//! `docs/server-api.md` describes it) and, for the dashboard, [`job_summary`] (a job in one
//! line). The types are the API's own, defined once in [`trainctl_server_api`] and re-exported
//! here with the machine's.

mod summary;

pub use summary::job_summary;
pub use trainctl_server_api::{
    Amounts, EventView, GpuHolder, GpuView, HolderView, JobRef, JobSummary, JobView, MachineView,
    QueuedView, ReplicaView, Submitted,
};

use trainctl_local::runner::failure_cause;
use trainctl_local::store::{EventRecord, JobRecord, NEXT_START, ReplicaRecord, replicas_reason};

/// The view of a recorded job; `queued` says why it waits in the server's queue, if it does.
#[must_use]
pub fn job_view(
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
        failure: failure_cause(&record.job, replicas),
        reason: shown_reason(state, replicas),
        created: record.created_at,
        finished: record.finished,
        job: serde_json::to_value(&record.job).unwrap_or(serde_json::Value::Null),
        replicas: replicas.iter().map(replica_view).collect(),
        events: events.iter().map(event_view).collect(),
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

/// Why the job, in the `state` it is shown in, does not get on: [`replicas_reason`].
fn shown_reason(state: &str, replicas: &[ReplicaRecord]) -> Option<String> {
    replicas_reason(state, replicas).map(str::to_owned)
}

/// One replica of a [`JobView`].
fn replica_view(record: &ReplicaRecord) -> ReplicaView {
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
        reason: record
            .reason
            .clone()
            .filter(|reason| !reason.starts_with(NEXT_START)),
        started: record.started_at,
        finished: record.finished_at,
    }
}

/// One event of a [`JobView`].
fn event_view(record: &EventRecord) -> EventView {
    EventView {
        time: record.time,
        first_timestamp: record.first_time,
        count: record.count,
        type_: record.type_.clone(),
        reason: record.reason.clone(),
        message: record.message.clone(),
    }
}
