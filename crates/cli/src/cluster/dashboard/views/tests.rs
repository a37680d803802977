//! The translation of the cluster's objects, built here as the API server sends them.

use k8s_openapi::api::events::v1::Event;
use serde_json::json;

use super::{job_view, summaries};
use crate::cluster::dashboard::test_objects::{JOB_UID, pod, running_since, tfjob};
use crate::cluster::events::event_rows;

#[test]
fn pods_become_replicas_named_by_their_labels_with_their_containers_state() {
    let job = tfjob(&json!({}));
    let pods = [
        pod(("chief", 0), JOB_UID, "Pending", &json!({}), false),
        pod(
            ("worker", 0),
            JOB_UID,
            "Running",
            &json!({
                "restartCount": 2,
                "state": {"running": {"startedAt": "2026-01-02T03:02:00Z"}},
                "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                              "startedAt": "2026-01-02T03:01:00Z",
                                              "finishedAt": "2026-01-02T03:01:30Z"}},
            }),
            true,
        ),
        pod(
            ("worker", 1),
            JOB_UID,
            "Failed",
            &json!({"state": {"terminated": {"exitCode": 1, "reason": "Error",
                                             "startedAt": "2026-01-02T03:01:00Z",
                                             "finishedAt": "2026-01-02T03:03:00Z"}}}),
            false,
        ),
    ];
    let view = job_view(&job, &pods, Vec::new());
    let replicas = serde_json::to_value(&view.replicas).expect("JSON");
    assert_eq!(
        replicas,
        json!([
            {"name": "chief-0", "type": "Chief", "index": 0, "state": "Pending", "pid": null,
             "port": 2222, "gpus": [], "restarts": 0, "exitCode": null, "reason": null, "started": null,
             "finished": null},
            {"name": "worker-0", "type": "Worker", "index": 0, "state": "Running", "pid": null,
             "port": 2222, "gpus": [], "restarts": 2, "exitCode": 137, "reason": "OOMKilled",
             "started": "2026-01-02T03:02:00Z", "finished": null},
            {"name": "worker-1", "type": "Worker", "index": 1, "state": "Failed", "pid": null,
             "port": 2222, "gpus": [], "restarts": 0, "exitCode": 1, "reason": null,
             "started": "2026-01-02T03:01:00Z", "finished": "2026-01-02T03:03:00Z"},
        ])
    );
    assert_eq!(
        (view.kind, view.state, view.finished),
        ("TFJob", "Pending", false)
    );
    // The object as stored, without managedFields (as kubectl shows it).
    assert_eq!(view.job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"], 2);
    assert_eq!(view.job["metadata"]["uid"], JOB_UID);
    assert!(view.job["metadata"].get("managedFields").is_none());
}

#[test]
fn a_summary_counts_ready_pods_spec_replicas_restarts_and_running_gpus() {
    let job = tfjob(&json!({
        "startTime": "2026-01-02T03:00:10Z",
        "conditions": [
            {"type": "Created", "status": "True", "lastTransitionTime": "2026-01-02T03:00:01Z"},
            {"type": "Running", "status": "True", "lastTransitionTime": "2026-01-02T03:00:20Z"},
        ],
    }));
    let mut restarted = running_since("2026-01-02T03:02:00Z");
    restarted["restartCount"] = json!(3);
    let pods = [
        pod(("chief", 0), JOB_UID, "Running", &restarted, true),
        // Running, not ready yet: holds its GPU, not counted ready.
        pod(
            ("worker", 0),
            JOB_UID,
            "Running",
            &running_since("2026-01-02T03:02:00Z"),
            false,
        ),
        pod(("worker", 1), JOB_UID, "Pending", &json!({}), false),
        // An older job's orphan of the same name: not this job's.
        pod(
            ("worker", 1),
            "uid-of-another-mnist",
            "Running",
            &restarted,
            true,
        ),
    ];
    let summaries = summaries(std::slice::from_ref(&job), &pods);
    assert_eq!(
        serde_json::to_value(&summaries).expect("JSON"),
        json!([{
            "namespace": "ml", "name": "mnist", "kind": "TFJob", "plural": "tfjobs",
            "uid": JOB_UID, "state": "Running", "waiting": null, "failure": null, "reason": null,
            "queuePosition": null,
            "replicasReady": 1, "replicasTotal": 3,
            // The chief's 3, and the 4 of pods already replaced.
            "restarts": 7,
            "created": "2026-01-02T03:00:00Z", "started": "2026-01-02T03:00:10Z",
            "finishedAt": null, "gpus": 2,
        }])
    );
}

#[test]
fn a_finished_job_finished_at_its_completion_else_its_last_condition() {
    let succeeded = tfjob(&json!({
        "startTime": "2026-01-02T03:00:10Z",
        "completionTime": "2026-01-02T03:09:00Z",
        "conditions": [
            {"type": "Running", "status": "False", "lastTransitionTime": "2026-01-02T03:08:59Z"},
            {"type": "Succeeded", "status": "True", "lastTransitionTime": "2026-01-02T03:08:59Z"},
        ],
    }));
    let failed = tfjob(&json!({
        "conditions": [
            {"type": "Running", "status": "False", "lastTransitionTime": "2026-01-02T03:05:00Z"},
            {"type": "Failed", "status": "True", "lastTransitionTime": "2026-01-02T03:06:00Z"},
        ],
    }));
    let succeeded_pod = pod(
        ("worker", 0),
        JOB_UID,
        "Succeeded",
        &json!({"state": {"terminated": {"exitCode": 0}}}),
        false,
    );
    let listed = summaries(&[succeeded, failed], &[succeeded_pod]);
    let shown: Vec<_> = listed
        .iter()
        .map(|summary| {
            (
                summary.state,
                summary.finished_at.map(|time| time.to_string()),
                summary.replicas_ready,
                summary.gpus,
            )
        })
        .collect();
    let at = |time: &str| Some(time.to_owned());
    assert_eq!(
        shown,
        [
            ("Succeeded", at("2026-01-02T03:09:00Z"), 0, 0),
            ("Failed", at("2026-01-02T03:06:00Z"), 0, 0),
        ]
    );
}

#[test]
fn a_gang_pending_job_says_why_it_waits() {
    let job = tfjob(&json!({"conditions": [{
        "type": "Created", "status": "True", "reason": "TFJobCreated",
        "message": "TFJob mnist is created. Pending: waiting for the gang scheduler to admit PodGroup mnist (phase Pending).",
    }]}));
    let view = job_view(&job, &[], Vec::new());
    assert_eq!(view.state, "Pending");
    assert_eq!(
        view.waiting.as_deref(),
        Some("waiting for the gang scheduler to admit PodGroup mnist (phase Pending)")
    );
    assert_eq!(summaries(&[job], &[])[0].waiting, view.waiting);
}

#[test]
fn the_jobs_events_come_oldest_first_each_at_its_last_occurrence_and_counted() {
    let event = |name: &str, time: &str, series: Option<&str>, reason: &str| -> Event {
        let mut event = json!({
            "metadata": {"name": name, "namespace": "ml"},
            "eventTime": time,
            "type": "Normal",
            "reason": reason,
            "note": format!("{reason} happened"),
            "reportingController": "trainctl-operator",
            "reportingInstance": "trainctl-operator-0",
            "action": "Reconcile",
            "regarding": {"kind": "TFJob", "name": "mnist", "uid": JOB_UID},
        });
        if let Some(last) = series {
            event["series"] = json!({"count": 2, "lastObservedTime": last});
        }
        serde_json::from_value(event).expect("an event")
    };
    let events = event_rows(vec![
        event("c", "2026-01-02T03:00:03.000000Z", None, "Third"),
        event(
            "a",
            "2026-01-02T03:00:01.000000Z",
            Some("2026-01-02T03:00:05.000000Z"),
            "Repeated",
        ),
        event("b", "2026-01-02T03:00:02.000000Z", None, "Second"),
    ]);
    let view = job_view(&tfjob(&json!({})), &[], events);
    let shown = serde_json::to_value(&view.events).expect("JSON");
    assert_eq!(
        shown,
        json!([
            {"time": "2026-01-02T03:00:02Z", "firstTimestamp": "2026-01-02T03:00:02Z",
             "count": 1, "type": "Normal", "reason": "Second", "message": "Second happened"},
            {"time": "2026-01-02T03:00:03Z", "firstTimestamp": "2026-01-02T03:00:03Z",
             "count": 1, "type": "Normal", "reason": "Third", "message": "Third happened"},
            {"time": "2026-01-02T03:00:05Z", "firstTimestamp": "2026-01-02T03:00:01Z",
             "count": 2, "type": "Normal", "reason": "Repeated", "message": "Repeated happened"},
        ])
    );
}

#[test]
fn a_running_job_whose_pods_left_all_wait_in_crash_loop_back_off_says_so() {
    let running = tfjob(&json!({
        "conditions": [
            {"type": "Running", "status": "True", "lastTransitionTime": "2026-01-02T03:00:20Z"},
        ],
    }));
    let looping = json!({
        "restartCount": 4,
        "state": {"waiting": {"reason": "CrashLoopBackOff",
                              "message": "back-off 40s restarting failed container"}},
    });
    let done = json!({"state": {"terminated": {"exitCode": 0}}});
    let reason = |pods: &[k8s_openapi::api::core::v1::Pod]| {
        summaries(std::slice::from_ref(&running), pods)[0]
            .reason
            .clone()
    };
    let crash_looping = [
        pod(("chief", 0), JOB_UID, "Succeeded", &done, false),
        pod(("worker", 0), JOB_UID, "Running", &looping, false),
        pod(("worker", 1), JOB_UID, "Running", &looping, false),
    ];
    assert_eq!(reason(&crash_looping).as_deref(), Some("CrashLoopBackOff"));
    assert_eq!(
        job_view(&running, &crash_looping, Vec::new())
            .reason
            .as_deref(),
        Some("CrashLoopBackOff")
    );
    // One pod that runs, and the job gets on.
    let one_runs = [
        pod(("worker", 0), JOB_UID, "Running", &looping, false),
        pod(
            ("worker", 1),
            JOB_UID,
            "Running",
            &running_since("2026-01-02T03:02:00Z"),
            true,
        ),
    ];
    assert_eq!(reason(&one_runs), None);
    // A job that does not run says nothing of its pods.
    let created = tfjob(&json!({}));
    assert_eq!(job_view(&created, &crash_looping, Vec::new()).reason, None);
}
