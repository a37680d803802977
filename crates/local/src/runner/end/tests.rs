use jiff::SignedDuration;
use trainctl_api::ReplicaType;
use trainctl_engine::reconcile::{PodPhase, RestartBackoff};

use super::*;
use crate::runner::pod::PodRestart;
use crate::store::fixtures::example_tfjob;

const BACKOFF: RestartBackoff = RestartBackoff {
    initial: SignedDuration::from_secs(10),
    max: SignedDuration::from_secs(300),
};

const GRACE: Duration = Duration::from_secs(30);

fn worker(index: i32) -> ReplicaSlot {
    ReplicaSlot::new(ReplicaType::Worker, index)
}

/// A pod whose process `pid` runs.
fn running(pid: i32) -> LocalPod {
    let mut pod = LocalPod::new(PodRestart::OnFailure);
    pod.started(pid, Timestamp::UNIX_EPOCH);
    pod
}

/// A pod whose process exited with `code` under `policy`.
fn exited(policy: PodRestart, code: i32) -> LocalPod {
    let mut pod = LocalPod::new(policy);
    let generation = pod.started(100, Timestamp::UNIX_EPOCH);
    pod.exited(generation, code, Timestamp::UNIX_EPOCH, &BACKOFF);
    pod
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn stopping_stops_what_runs_ends_what_waits_to_restart_and_leaves_what_ended() {
    let now = Instant::now();
    let mut being_deleted = running(103);
    let deleted_at = now + Duration::from_secs(1);
    being_deleted.deleting = Some(deleted_at);
    let mut gone = exited(PodRestart::Never, 1);
    gone.delete(Timestamp::UNIX_EPOCH);
    let mut pods = BTreeMap::from([
        (worker(0), running(100)),
        (worker(1), exited(PodRestart::OnFailure, 1)),
        (worker(2), exited(PodRestart::Never, 0)),
        (worker(3), being_deleted),
        (worker(4), gone),
    ]);
    assert!(pods[&worker(1)].restart_due.is_some(), "waits to restart");

    let stopping = stop_pods(&mut pods, |_| GRACE, now);

    assert_eq!(
        stopping,
        Stopping {
            changed: vec![worker(0), worker(1), worker(3)],
            terminate: vec![100],
        }
    );
    let stopped: Vec<bool> = pods.values().map(|pod| pod.stopped).collect();
    assert_eq!(stopped, [true, false, false, true, false]);
    // Waiting out its back-off after failing by itself: it failed, it was not stopped.
    assert_eq!(pods[&worker(1)].phase, PodPhase::Failed);
    assert!(pods[&worker(1)].finished_at.is_some());
    assert_eq!(pods[&worker(0)].deleting, Some(now + GRACE));
    assert_eq!(
        pods[&worker(3)].deleting,
        Some(deleted_at),
        "its deadline stays"
    );
    assert!(pods.values().all(|pod| pod.restart_due.is_none()));
    assert_eq!(pods[&worker(2)].phase, PodPhase::Succeeded);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_stopped_replica_keeps_no_exit_code_of_an_earlier_start() {
    let mut restarted = exited(PodRestart::OnFailure, 1);
    restarted.started(101, Timestamp::UNIX_EPOCH);
    assert_eq!(restarted.exit_code, Some(1));
    let mut pods = BTreeMap::from([(worker(0), restarted)]);
    let _ = stop_pods(&mut pods, |_| GRACE, Instant::now());
    assert_eq!(pods[&worker(0)].exit_code, None);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn each_slot_has_its_own_grace_period() {
    let now = Instant::now();
    let mut pods = BTreeMap::from([(worker(0), running(100)), (worker(1), running(101))]);
    let grace_of = |slot: &ReplicaSlot| Duration::from_secs(u64::from(slot.index.unsigned_abs()));
    let stopping = stop_pods(&mut pods, grace_of, now);
    assert_eq!(stopping.terminate, [100, 101]);
    assert_eq!(pods[&worker(0)].deleting, Some(now));
    assert_eq!(
        pods[&worker(1)].deleting,
        Some(now + Duration::from_secs(1))
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_exit_while_stopping_is_recorded_and_one_of_an_older_start_is_not() {
    let mut pods = BTreeMap::from([(worker(0), running(100))]);
    let _ = stop_pods(&mut pods, |_| GRACE, Instant::now());
    let pod = pods.get_mut(&worker(0)).expect("the pod");
    let generation = pod.running.expect("runs").generation;
    exited_while_stopping(pod, generation - 1, Some(1));
    assert_eq!((pod.running.is_some(), pod.exit_code), (true, None));
    exited_while_stopping(pod, generation, Some(143));
    assert_eq!((pod.running, pod.exit_code), (None, Some(143)));
    // Stopped, not ended by its own doing: its phase stays, and its record says `Stopped`.
    assert_eq!(pod.phase, PodPhase::Running);
    assert_eq!(report::state_of(pod), crate::store::ReplicaState::Stopped);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_replica_that_exits_0_as_the_run_stops_succeeded() {
    let mut pods = BTreeMap::from([(worker(0), running(100))]);
    let _ = stop_pods(&mut pods, |_| GRACE, Instant::now());
    let pod = pods.get_mut(&worker(0)).expect("the pod");
    let generation = pod.running.expect("runs").generation;
    exited_while_stopping(pod, generation, Some(0));
    assert_eq!(report::state_of(pod), crate::store::ReplicaState::Succeeded);
    assert!(pod.finished_at.is_some());
}

fn condition_of(status: &JobStatus, type_: JobConditionType) -> &JobCondition {
    status.condition(type_).expect("the condition")
}

#[test]
fn an_interrupted_job_fails_and_is_no_longer_running() {
    let mut job = example_tfjob();
    let before = Time(Timestamp::from_second(1_700_000_000).expect("a time"));
    let pending = condition(
        JobConditionType::Created,
        "TFJobCreated",
        "Pending: waiting for 2 GPUs, 0 free.",
        &before,
    );
    let running = condition(
        JobConditionType::Running,
        "TFJobRunning",
        "TFJob is running.",
        &before,
    );
    *job.status_mut() = Some(JobStatus {
        conditions: vec![pending, running],
        ..JobStatus::default()
    });
    let now = Time(Timestamp::from_second(1_700_000_100).expect("a time"));

    let status = finished_status(
        &job,
        JobConditionType::Failed,
        "Interrupted",
        "interrupted",
        &now,
    );

    let types: Vec<JobConditionType> = status.conditions.iter().map(|c| c.type_).collect();
    assert_eq!(
        types,
        [
            JobConditionType::Created,
            JobConditionType::Running,
            JobConditionType::Failed
        ]
    );
    let created = condition_of(&status, JobConditionType::Created);
    assert_eq!(created.message, format!("TFJob {} is created.", job.name()));
    let running = condition_of(&status, JobConditionType::Running);
    assert_eq!(running.status, ConditionStatus::False);
    assert_eq!(running.last_transition_time, Some(now.clone()));
    let failed = condition_of(&status, JobConditionType::Failed);
    assert_eq!(
        (
            failed.status,
            failed.reason.as_str(),
            failed.message.as_str()
        ),
        (ConditionStatus::True, "Interrupted", "interrupted")
    );
    assert_eq!(status.completion_time, Some(now));
    assert!(status.is_true(JobConditionType::Failed));
    assert!(!status.is_true(JobConditionType::Running));
}

#[test]
fn a_job_that_fails_before_it_was_created_is_created_first() {
    let job = example_tfjob();
    assert_eq!(job.status(), None);
    let now = Time(Timestamp::from_second(1_700_000_000).expect("a time"));
    let status = finished_status(
        &job,
        JobConditionType::Failed,
        "TFJobFailed",
        "cannot run on this machine: worker-0: no command",
        &now,
    );
    let summary: Vec<(JobConditionType, &str)> = status
        .conditions
        .iter()
        .map(|c| (c.type_, c.reason.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            (JobConditionType::Created, "TFJobCreated"),
            (JobConditionType::Failed, "TFJobFailed")
        ]
    );
    assert_eq!(status.completion_time, Some(now));
}

#[test]
fn a_finished_run_ends_as_its_status_says() {
    let job = example_tfjob();
    assert_eq!(outcome(&job), RunEnd::Failed, "no status is no success");
    let now = Time(Timestamp::UNIX_EPOCH);
    for (type_, end) in [
        (JobConditionType::Succeeded, RunEnd::Succeeded),
        (JobConditionType::Failed, RunEnd::Failed),
    ] {
        let mut job = job.clone();
        let status = finished_status(&job, type_, "Reason", "message", &now);
        *job.status_mut() = Some(status);
        assert_eq!(outcome(&job), end, "{type_:?}");
    }
}

#[test]
fn a_stopped_run_ends_as_its_request_says() {
    assert_eq!(
        end_of(StopRequest::Interrupt(Signal::SIGTERM)),
        RunEnd::Interrupted(Signal::SIGTERM)
    );
    assert_eq!(end_of(StopRequest::Delete), RunEnd::Deleted);
    assert_eq!(end_of(StopRequest::Shutdown), RunEnd::Shutdown);
    // A suspend that arrives as the run stops: the job stays as it is, to run when resumed.
    assert_eq!(end_of(StopRequest::Suspend), RunEnd::Shutdown);
    assert_eq!(signal_words(Signal::SIGINT), "interrupted (Ctrl-C)");
    assert_eq!(signal_words(Signal::SIGHUP), "the terminal hung up");
    assert_eq!(signal_words(Signal::SIGTERM), "terminated");
}
