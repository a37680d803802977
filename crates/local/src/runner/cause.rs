//! Why a job failed, in a few words for a list (`get -o wide`'s REASON, the dashboard's Jobs
//! page and a failed job's banner, the notification): the replica whose failure ended it and
//! how it ended (`worker-0 OOMKilled (exit code 137)`), or what the Failed condition says when
//! no replica failed by itself (a deadline, a machine it cannot run on, an interrupted run).

use trainctl_api::{JobConditionType, TrainingJob};

use super::pod::OOM_KILLED;
use super::report::exit_words;
use crate::store::{ReplicaRecord, ReplicaState};

/// Why `job` failed, judged from its `replicas`; `None` unless it failed.
#[must_use]
pub fn failure_cause(job: &TrainingJob, replicas: &[ReplicaRecord]) -> Option<String> {
    let status = job.status()?;
    let failed = status
        .condition(JobConditionType::Failed)
        .filter(|_| status.is_true(JobConditionType::Failed))?;
    let first_failure = replicas
        .iter()
        .filter(|replica| replica.state == ReplicaState::Failed)
        .filter(|replica| replica.exit_code.is_some())
        .min_by_key(|replica| replica.finished_at);
    // A job failed by its replicas carries its kind's reason (`TFJobFailed`); others say why
    // themselves (`Interrupted`), as do its messages of a deadline or a machine it cannot run on.
    let by_replicas = failed.reason == format!("{}Failed", job.kind().as_str())
        && !failed.message.starts_with("cannot run on this machine");
    let message = failed.message.trim_end_matches('.');
    match first_failure {
        Some(replica) if message.contains("backoff limit") => Some(format!(
            "backoff limit reached; {}",
            replica_failure(replica)
        )),
        Some(replica) if by_replicas => Some(replica_failure(replica)),
        _ => Some(message.to_owned()),
    }
}

/// `worker-0 OOMKilled (exit code 137)`, `worker-1 exited with code 2`.
fn replica_failure(replica: &ReplicaRecord) -> String {
    let code = replica.exit_code.unwrap_or_default();
    match replica.reason.as_deref() {
        Some(OOM_KILLED) => format!("{} {OOM_KILLED} (exit code {code})", replica.name()),
        _ => format!("{} {}", replica.name(), exit_words(code)),
    }
}

#[cfg(test)]
mod tests {
    use trainctl_api::{ConditionStatus, JobCondition, JobStatus, ReplicaType};

    use super::*;
    use crate::store::fixtures;

    /// The example TFJob (a chief and workers), failed with `reason` and `message`.
    fn failed_job(reason: &str, message: &str) -> TrainingJob {
        let mut job = fixtures::example_tfjob();
        *job.status_mut() = Some(JobStatus {
            conditions: vec![JobCondition {
                type_: JobConditionType::Failed,
                status: ConditionStatus::True,
                reason: reason.to_owned(),
                message: message.to_owned(),
                last_update_time: None,
                last_transition_time: None,
            }],
            ..JobStatus::default()
        });
        job
    }

    /// Worker `index`, ended in `state` with `code` (and `reason`) at second `at`.
    fn replica(
        index: i32,
        state: ReplicaState,
        code: Option<i32>,
        reason: Option<&str>,
        at: i64,
    ) -> ReplicaRecord {
        ReplicaRecord {
            state,
            exit_code: code,
            reason: reason.map(str::to_owned),
            finished_at: Some(jiff::Timestamp::from_second(at).expect("a time")),
            ..fixtures::pending_replica("uid", ReplicaType::Worker, index)
        }
    }

    #[test]
    fn the_first_replica_to_fail_is_the_cause_with_how_it_ended() {
        let job = failed_job(
            "TFJobFailed",
            "TFJob default/mnist has failed because 1 Worker replica(s) failed.",
        );
        let replicas = [
            replica(0, ReplicaState::Stopped, Some(143), None, 20),
            replica(1, ReplicaState::Failed, Some(137), Some(OOM_KILLED), 10),
        ];
        assert_eq!(
            failure_cause(&job, &replicas).as_deref(),
            Some("worker-1 OOMKilled (exit code 137)")
        );
        let replicas = [replica(1, ReplicaState::Failed, Some(2), None, 10)];
        assert_eq!(
            failure_cause(&job, &replicas).as_deref(),
            Some("worker-1 exited with code 2")
        );
    }

    #[test]
    fn a_failure_no_replica_caused_is_what_the_condition_says() {
        let job = failed_job(
            "Interrupted",
            "TFJob mnist was interrupted (SIGINT); its replicas were stopped.",
        );
        let replicas = [replica(0, ReplicaState::Stopped, Some(143), None, 20)];
        assert_eq!(
            failure_cause(&job, &replicas).as_deref(),
            Some("TFJob mnist was interrupted (SIGINT); its replicas were stopped")
        );
        let job = failed_job(
            "TFJobFailed",
            "Job mnist has failed because it has reached the specified backoff limit",
        );
        let replicas = [replica(0, ReplicaState::Failed, Some(1), None, 20)];
        assert_eq!(
            failure_cause(&job, &replicas).as_deref(),
            Some("backoff limit reached; worker-0 exited with code 1")
        );
    }

    #[test]
    fn a_job_that_did_not_fail_has_no_cause() {
        let mut job = failed_job("TFJobFailed", "x");
        *job.status_mut() = None;
        assert_eq!(failure_cause(&job, &[]), None);
    }
}
