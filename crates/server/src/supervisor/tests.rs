//! The supervisor over a real state database in a temporary directory, with replicas that are
//! tiny `sh -c` scripts.

use std::path::Path;
use std::sync::Arc;

use trainctl_api::JobKind;

use super::{SubmitOptions, Supervisor, SupervisorError};
use crate::testing::{eventually, job, quota, runtime, serial, supervisor, suspended_job, until};
use crate::view::JobView;

fn submit(supervisor: &Arc<Supervisor>, manifest: &str) -> Result<Vec<JobView>, SupervisorError> {
    supervisor
        .submit(manifest, "test.yaml", &SubmitOptions::default())
        .map(|submitted| submitted.jobs)
}

fn view(supervisor: &Supervisor, namespace: &str, name: &str) -> JobView {
    supervisor
        .get(namespace, JobKind::TFJob, name)
        .expect("the job exists")
}

/// Waits until the job `namespace/name` is shown in `state`.
async fn reaches(supervisor: &Supervisor, namespace: &str, name: &str, state: &str) -> JobView {
    eventually(&format!("{namespace}/{name} to be {state}"), || {
        Some(view(supervisor, namespace, name)).filter(|view| view.state == state)
    })
    .await
}

fn open(gate: &Path) {
    std::fs::write(gate, "").expect("the gate opens");
}

#[test]
fn a_submitted_job_runs_its_replica_to_success_and_is_listed() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("temp dir");
    runtime().block_on(async {
        let supervisor = supervisor(dir.path(), 0);
        let views = submit(&supervisor, &job("default", "hello", 0, "exit 0")).expect("submitted");
        assert_eq!(views.len(), 1);
        assert_eq!(
            (views[0].namespace.as_str(), views[0].name.as_str()),
            ("default", "hello")
        );
        let done = reaches(&supervisor, "default", "hello", "Succeeded").await;
        assert!(done.finished);
        assert_eq!(done.replicas.len(), 1);
        assert_eq!(done.replicas[0].exit_code, Some(0));
        let listed = supervisor.list(None, None).expect("listed");
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].uid, done.uid);
        assert!(
            supervisor
                .list(Some("other"), None)
                .expect("listed")
                .is_empty()
        );
        assert!(
            supervisor
                .list(None, Some(JobKind::PyTorchJob))
                .expect("listed")
                .is_empty()
        );
        supervisor.shutdown().await;
    });
}

#[test]
fn a_failing_replica_fails_its_job() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("temp dir");
    runtime().block_on(async {
        let supervisor = supervisor(dir.path(), 0);
        submit(&supervisor, &job("default", "broken", 0, "exit 3")).expect("submitted");
        let failed = reaches(&supervisor, "default", "broken", "Failed").await;
        assert_eq!(failed.replicas[0].exit_code, Some(3));
        supervisor.shutdown().await;
    });
}

#[test]
fn an_invalid_manifest_is_refused_with_its_problems_and_records_nothing() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("temp dir");
    runtime().block_on(async {
        let supervisor = supervisor(dir.path(), 0);
        let manifest = job("default", "bad", 0, "true").replace("replicas: 1", "replicas: -1");
        let Err(SupervisorError::Invalid(problems)) = submit(&supervisor, &manifest) else {
            panic!("a negative replica count is refused");
        };
        assert_eq!(
            problems,
            ["test.yaml:9:17: spec.tfReplicaSpecs[Worker].replicas: is -1: expected 0 or more"]
        );
        assert!(supervisor.list(None, None).expect("listed").is_empty());
    });
}

#[test]
fn a_job_whose_namespace_differs_from_the_submitted_one_is_refused() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("temp dir");
    runtime().block_on(async {
        let supervisor = supervisor(dir.path(), 0);
        let refused = supervisor.submit(
            &job("team-a", "j", 0, "true"),
            "j.yaml",
            &SubmitOptions {
                namespace: Some("team-b"),
                ..SubmitOptions::default()
            },
        );
        let Err(SupervisorError::Invalid(problems)) = refused else {
            panic!("the namespaces differ");
        };
        assert!(
            problems[0].contains("`team-a` does not match the namespace `team-b`"),
            "{problems:?}"
        );
        assert!(supervisor.list(None, None).expect("listed").is_empty());
    });
}

#[test]
fn a_job_of_the_same_name_that_has_not_finished_conflicts() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("temp dir");
    runtime().block_on(async {
        let supervisor = supervisor(dir.path(), 0);
        submit(&supervisor, &suspended_job("default", "twin")).expect("submitted");
        let again = submit(&supervisor, &suspended_job("default", "twin"));
        let Err(SupervisorError::Conflict(message)) = again else {
            panic!("an unfinished job of the same name conflicts: {again:?}");
        };
        assert_eq!(
            message,
            "TFJob default/twin exists and has not finished; delete it first"
        );
        assert_eq!(supervisor.list(None, None).expect("listed").len(), 1);
        supervisor.shutdown().await;
    });
}

#[test]
fn jobs_that_do_not_fit_wait_and_start_in_submission_order() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("temp dir");
    let gate = dir.path().join("gate");
    runtime().block_on(async {
        let supervisor = supervisor(dir.path(), 1);
        submit(&supervisor, &job("default", "first", 1, &until(&gate))).expect("submitted");
        reaches(&supervisor, "default", "first", "Running").await;
        submit(&supervisor, &job("default", "second", 1, "true")).expect("submitted");
        submit(&supervisor, &job("default", "third", 1, "true")).expect("submitted");
        for name in ["second", "third"] {
            let waiting = view(&supervisor, "default", name);
            assert_eq!(waiting.state, "Pending", "{name}");
            assert!(waiting.waiting.is_some(), "{name} says why it waits");
            assert!(
                waiting
                    .replicas
                    .iter()
                    .all(|replica| replica.started.is_none())
            );
        }
        open(&gate);
        let second = reaches(&supervisor, "default", "second", "Succeeded").await;
        let third = reaches(&supervisor, "default", "third", "Succeeded").await;
        let (second_ended, third_started) =
            (second.replicas[0].finished, third.replicas[0].started);
        assert!(
            second_ended.expect("ended") <= third_started.expect("started"),
            "the one GPU went to the second job first"
        );
        supervisor.shutdown().await;
    });
}

#[test]
fn a_quota_holds_a_job_over_it_until_the_quota_is_deleted() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("temp dir");
    let gate = dir.path().join("gate");
    runtime().block_on(async {
        let supervisor = supervisor(dir.path(), 4);
        let manifest = format!(
            "{}---\n{}",
            quota("team-a", "gpus", &[("requests.nvidia.com/gpu", "1")]),
            job("team-a", "first", 1, &until(&gate)),
        );
        supervisor
            .submit(&manifest, "team.yaml", &SubmitOptions::default())
            .expect("submitted");
        reaches(&supervisor, "team-a", "first", "Running").await;
        let used = supervisor.quota("team-a", "gpus").expect("the quota");
        let used = used
            .status
            .and_then(|status| status.used)
            .expect("its usage");
        assert_eq!(used["requests.nvidia.com/gpu"].0, "1");
        submit(&supervisor, &job("team-a", "second", 1, "true")).expect("submitted");
        let held = view(&supervisor, "team-a", "second");
        assert_eq!(held.state, "Pending");
        let why = held.waiting.expect("it says why it waits");
        assert!(why.starts_with("exceeded quota: gpus"), "{why}");
        // Another namespace, without a quota, is not held.
        submit(&supervisor, &job("team-b", "free", 1, "true")).expect("submitted");
        reaches(&supervisor, "team-b", "free", "Succeeded").await;
        supervisor.delete_quota("team-a", "gpus").expect("deleted");
        assert!(
            supervisor
                .quotas(Some("team-a"))
                .expect("listed")
                .is_empty()
        );
        // The first job still runs: only the quota held the second.
        reaches(&supervisor, "team-a", "second", "Succeeded").await;
        assert_eq!(view(&supervisor, "team-a", "first").state, "Running");
        open(&gate);
        reaches(&supervisor, "team-a", "first", "Succeeded").await;
        supervisor.shutdown().await;
    });
}

#[test]
fn a_job_larger_than_its_quota_in_all_fails_without_running() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("temp dir");
    runtime().block_on(async {
        let supervisor = supervisor(dir.path(), 4);
        let manifest = format!(
            "{}---\n{}",
            quota("team-a", "gpus", &[("requests.nvidia.com/gpu", "2")]),
            job("team-a", "big", 4, "true"),
        );
        supervisor
            .submit(&manifest, "team.yaml", &SubmitOptions::default())
            .expect("submitted");
        let failed = reaches(&supervisor, "team-a", "big", "Failed").await;
        assert!(
            failed
                .replicas
                .iter()
                .all(|replica| replica.started.is_none())
        );
        supervisor.shutdown().await;
    });
}

#[test]
fn suspend_stops_a_running_job_and_resume_runs_it_again() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("temp dir");
    let gate = dir.path().join("gate");
    runtime().block_on(async {
        let supervisor = supervisor(dir.path(), 0);
        submit(&supervisor, &job("default", "pausable", 0, &until(&gate))).expect("submitted");
        reaches(&supervisor, "default", "pausable", "Running").await;
        let suspended = supervisor
            .suspend("default", JobKind::TFJob, "pausable")
            .await
            .expect("suspended");
        assert_eq!(suspended.state, "Suspended");
        assert!(!suspended.finished);
        assert!(suspended.replicas.iter().all(|replica| replica.pid.is_none()), "{:?}", suspended.replicas);
        let resumed = supervisor
            .resume("default", JobKind::TFJob, "pausable")
            .expect("resumed");
        assert_eq!(resumed.job["spec"]["runPolicy"]["suspend"], false, "{:?}", resumed.job);
        reaches(&supervisor, "default", "pausable", "Running").await;
        open(&gate);
        reaches(&supervisor, "default", "pausable", "Succeeded").await;
        let finished = supervisor.suspend("default", JobKind::TFJob, "pausable").await;
        assert!(
            matches!(finished, Err(SupervisorError::Conflict(ref message)) if message.ends_with("has finished; there is nothing to suspend")),
            "{finished:?}"
        );
        supervisor.shutdown().await;
    });
}

#[test]
fn delete_stops_a_running_job_and_forgets_it() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("temp dir");
    let gate = dir.path().join("gate");
    runtime().block_on(async {
        let supervisor = supervisor(dir.path(), 0);
        submit(&supervisor, &job("default", "doomed", 0, &until(&gate))).expect("submitted");
        let running = reaches(&supervisor, "default", "doomed", "Running").await;
        let (sources, _) = supervisor.log_sources(&running.uid).expect("its logs");
        assert_eq!(sources.len(), 1);
        let deleted = supervisor
            .delete("default", JobKind::TFJob, "doomed")
            .await
            .expect("deleted");
        assert_eq!(deleted.uid, running.uid);
        assert!(matches!(
            supervisor.get("default", JobKind::TFJob, "doomed"),
            Err(SupervisorError::NotFound(ref what)) if what == "TFJob default/doomed"
        ));
        assert!(supervisor.list(None, None).expect("listed").is_empty());
        assert!(!sources[0].1.exists(), "its log is removed");
        assert_eq!(
            supervisor.log_sources(&running.uid).expect("asked"),
            (Vec::new(), true)
        );
        let again = supervisor.delete("default", JobKind::TFJob, "doomed").await;
        assert!(
            matches!(again, Err(SupervisorError::NotFound(_))),
            "{again:?}"
        );
    });
}

#[test]
fn a_supervisor_reopened_on_the_same_state_directory_takes_its_jobs_over() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("temp dir");
    let gate = dir.path().join("gate");
    let before = runtime().block_on(async {
        let supervisor = supervisor(dir.path(), 0);
        submit(&supervisor, &job("default", "done", 0, "true")).expect("submitted");
        submit(&supervisor, &suspended_job("default", "parked")).expect("submitted");
        submit(&supervisor, &job("default", "busy", 0, &until(&gate))).expect("submitted");
        reaches(&supervisor, "default", "done", "Succeeded").await;
        reaches(&supervisor, "default", "parked", "Suspended").await;
        reaches(&supervisor, "default", "busy", "Running").await;
        supervisor.shutdown().await;
        supervisor.list(None, None).expect("listed")
    });
    runtime().block_on(async {
        let supervisor = supervisor(dir.path(), 0);
        let after = supervisor.list(None, None).expect("listed");
        let identities = |views: &[JobView]| -> Vec<(String, String)> {
            views
                .iter()
                .map(|view| (view.name.clone(), view.uid.clone()))
                .collect()
        };
        assert_eq!(identities(&after), identities(&before));
        assert_eq!(view(&supervisor, "default", "done").state, "Succeeded");
        reaches(&supervisor, "default", "parked", "Suspended").await;
        // The unfinished job runs again under the new supervisor, to its end.
        reaches(&supervisor, "default", "busy", "Running").await;
        open(&gate);
        reaches(&supervisor, "default", "busy", "Succeeded").await;
        supervisor.shutdown().await;
    });
}
