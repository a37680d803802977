//! A job in one line, as the dashboard's Jobs page lists it: [`job_summary`].

use trainctl_api::JobStatus;
use trainctl_local::store::{JobRecord, ReplicaRecord, ReplicaState};

use super::JobSummary;

/// The summary of a recorded job and its replicas; `waiting` and `queue_position` as the
/// server's queue says.
#[must_use]
pub fn job_summary(
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
        failure: trainctl_local::runner::failure_cause(&record.job, replicas),
        reason: super::shown_reason(state, replicas),
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
