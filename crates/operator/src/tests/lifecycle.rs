//! A job's life after its creation: running, past its deadline, finished (clean pod policy,
//! TTL), suspended, a pod restarted; and a failed reconcile retried.

use super::*;

#[tokio::test]
async fn running_pods_set_the_job_running() {
    let job = job(TF_JOB);
    let created = json!({
        "conditions": [{"type": "Created", "status": "True", "reason": "TFJobCreated",
                        "message": "TFJob mnist is created."}],
        "startTime": ago(5),
    });
    let (outcome, sent, events) = reconcile_among(
        &with_status(object(TF_JOB), &created),
        running_pods(&job),
        all_services(&job),
        cluster(&job),
    )
    .await;

    assert_eq!(outcome.expect("reconciled"), Action::await_change());
    assert_eq!(
        requests(&sent),
        ["PATCH /apis/kubeflow.org/v1/namespaces/ml/tfjobs/mnist/status"]
    );
    assert_eq!(
        applied_status(&sent).expect("a status"),
        &json!({
            "conditions": [
                {"type": "Created", "status": "True", "reason": "TFJobCreated",
                 "message": "TFJob mnist is created."},
                {"type": "Running", "status": "True", "reason": "TFJobRunning",
                 "message": "TFJob ml/mnist is running.",
                 "lastUpdateTime": "2025-01-01T00:00:00Z",
                 "lastTransitionTime": "2025-01-01T00:00:00Z"},
            ],
            "replicaStatuses": {
                "Chief": {"active": 1, "selector": selector("chief")},
                "Worker": {"active": 2, "selector": selector("worker")},
            },
            "startTime": ago(5),
        })
    );
    assert!(events.is_empty(), "{events:#?}");
}

#[tokio::test]
async fn job_past_its_deadline_fails_and_its_running_pods_are_deleted() {
    let manifest = with_run_policy("{activeDeadlineSeconds: 60}");
    let job = job(&manifest);
    let mut started = running_status();
    started["startTime"] = json!(ago(60));
    let (outcome, sent, events) = reconcile_among(
        &with_status(object(&manifest), &started),
        running_pods(&job),
        all_services(&job),
        cluster(&job),
    )
    .await;

    assert_eq!(outcome.expect("reconciled"), Action::await_change());
    let mut expected = deletions_of_every_slot();
    expected.push("PATCH /apis/kubeflow.org/v1/namespaces/ml/tfjobs/mnist/status".to_owned());
    assert_eq!(requests(&sent), expected);
    let message = "Job mnist has failed because it was active longer than specified deadline";
    assert_eq!(
        applied_status(&sent).expect("a status"),
        &json!({
            "conditions": [
                {"type": "Created", "status": "True", "reason": "TFJobCreated",
                 "message": "TFJob mnist is created."},
                {"type": "Running", "status": "False", "reason": "TFJobRunning",
                 "message": "TFJob ml/mnist is running.",
                 "lastUpdateTime": "2025-01-01T00:00:00Z",
                 "lastTransitionTime": "2025-01-01T00:00:00Z"},
                {"type": "Failed", "status": "True", "reason": "TFJobFailed", "message": message,
                 "lastUpdateTime": "2025-01-01T00:00:00Z",
                 "lastTransitionTime": "2025-01-01T00:00:00Z"},
            ],
            "replicaStatuses": {
                "Chief": {"active": 1, "selector": selector("chief")},
                "Worker": {"active": 2, "selector": selector("worker")},
            },
            "startTime": ago(60),
            "completionTime": "2025-01-01T00:00:00Z",
        })
    );
    let notes = event_notes(&events);
    assert_eq!(notes.len(), 7, "{notes:#?}");
    assert_eq!(
        notes.last(),
        Some(&("TFJobFailed".to_owned(), message.to_owned()))
    );
    assert_eq!(events.last().expect("an event").body["type"], "Warning");
}

#[tokio::test]
async fn job_within_its_deadline_is_requeued_for_it() {
    let manifest = with_run_policy("{activeDeadlineSeconds: 60}");
    let job = job(&manifest);
    let mut started = running_status();
    started["startTime"] = json!(ago(20));
    started["replicaStatuses"] = json!({
        "Chief": {"active": 1, "selector": selector("chief")},
        "Worker": {"active": 2, "selector": selector("worker")},
    });
    let (outcome, sent, events) = reconcile_among(
        &with_status(object(&manifest), &started),
        running_pods(&job),
        all_services(&job),
        cluster(&job),
    )
    .await;

    assert_eq!(
        outcome.expect("reconciled"),
        Action::requeue(Duration::from_secs(40))
    );
    assert!(requests(&sent).is_empty(), "{sent:#?}");
    assert!(events.is_empty(), "{events:#?}");
}

#[tokio::test]
async fn finished_job_with_clean_pod_policy_running_deletes_the_running_pod() {
    let manifest = with_run_policy("{cleanPodPolicy: Running}");
    let job = job(&manifest);
    let pods = vec![
        in_phase(owned_pod(&job, "mnist-chief-0"), "Succeeded"),
        in_phase(owned_pod(&job, "mnist-worker-0"), "Running"),
        in_phase(owned_pod(&job, "mnist-worker-1"), "Succeeded"),
    ];
    let finished = with_status(object(&manifest), &succeeded_status(&ago(5)));
    let (outcome, sent, events) =
        reconcile_among(&finished, pods, all_services(&job), cluster(&job)).await;

    assert_eq!(outcome.expect("reconciled"), Action::await_change());
    assert_eq!(sent.len(), 2, "no status to write: {sent:#?}");
    // The running pod goes, with its service; the finished pods stay.
    assert_eq!(sent[0].method, Method::DELETE);
    assert_eq!(
        sent[0].uri,
        "/api/v1/namespaces/ml/services/mnist-worker-0?"
    );
    assert_eq!(sent[1].method, Method::DELETE);
    assert_eq!(sent[1].uri, "/api/v1/namespaces/ml/pods/mnist-worker-0?");
    assert_eq!(
        event_notes(&events),
        [
            (
                "SuccessfulDeleteService".to_owned(),
                "Deleted service: mnist-worker-0".to_owned()
            ),
            (
                "SuccessfulDeletePod".to_owned(),
                "Deleted pod: mnist-worker-0".to_owned()
            ),
        ]
    );
}

#[tokio::test]
async fn suspended_job_deletes_its_pods_and_services() {
    let manifest = with_run_policy("{suspend: true}");
    let job = job(&manifest);
    let pods = SLOTS
        .iter()
        .map(|name| in_phase(owned_pod(&job, name), "Running"))
        .collect();
    let running = with_status(object(&manifest), &running_status());
    let (outcome, sent, _) =
        reconcile_among(&running, pods, all_services(&job), cluster(&job)).await;

    assert_eq!(outcome.expect("reconciled"), Action::await_change());
    let deleted: Vec<&str> = sent
        .iter()
        .filter(|s| s.method == Method::DELETE)
        .map(|s| s.uri.as_str())
        .collect();
    let expected: Vec<String> = ["services", "pods"]
        .iter()
        .flat_map(|resource| {
            SLOTS
                .iter()
                .map(move |name| format!("/api/v1/namespaces/ml/{resource}/{name}?"))
        })
        .collect();
    assert_eq!(deleted, expected);
    assert_eq!(
        applied_status(&sent).expect("a status"),
        &json!({
            "conditions": [
                {"type": "Created", "status": "True", "reason": "TFJobCreated",
                 "message": "TFJob mnist is created."},
                {"type": "Running", "status": "False", "reason": "TFJobSuspended",
                 "message": "TFJob mnist is suspended.",
                 "lastUpdateTime": "2025-01-01T00:00:00Z",
                 "lastTransitionTime": "2025-01-01T00:00:00Z"},
                {"type": "Suspended", "status": "True", "reason": "TFJobSuspended",
                 "message": "TFJob mnist is suspended.",
                 "lastUpdateTime": "2025-01-01T00:00:00Z",
                 "lastTransitionTime": "2025-01-01T00:00:00Z"},
            ],
            "replicaStatuses": {
                "Chief": {"selector": selector("chief")},
                "Worker": {"selector": selector("worker")},
            },
            "startTime": ago(600),
        })
    );
}

#[tokio::test]
async fn job_past_its_ttl_is_deleted() {
    let manifest = with_run_policy("{ttlSecondsAfterFinished: 60}");
    let job = job(&manifest);
    let finished = with_status(object(&manifest), &succeeded_status(&ago(61)));
    let (outcome, sent, events) = reconcile_against(&finished, cluster(&job)).await;

    assert_eq!(outcome.expect("reconciled"), Action::await_change());
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert_eq!(sent[0].method, Method::DELETE);
    assert_eq!(
        sent[0].uri,
        "/apis/kubeflow.org/v1/namespaces/ml/tfjobs/mnist?"
    );
    assert_eq!(sent[0].body["propagationPolicy"], "Background");
    assert_eq!(
        event_notes(&events),
        [(
            "SuccessfulDeleteJob".to_owned(),
            "Deleted job: mnist".to_owned()
        )]
    );
}

#[tokio::test]
async fn job_within_its_ttl_is_requeued_for_the_expiry() {
    let manifest = with_run_policy("{ttlSecondsAfterFinished: 60}");
    let job = job(&manifest);
    let finished = with_status(object(&manifest), &succeeded_status(&ago(20)));
    let (outcome, sent, _) = reconcile_against(&finished, cluster(&job)).await;

    assert_eq!(
        outcome.expect("reconciled"),
        Action::requeue(Duration::from_secs(40))
    );
    assert!(sent.is_empty(), "nothing to do: {sent:#?}");
}

#[tokio::test]
async fn restarted_pod_is_deleted_and_its_restart_kept_in_the_ledger() {
    let manifest = TF_JOB.replace(
        "      replicas: 2\n",
        "      replicas: 2\n      restartPolicy: ExitCode\n",
    );
    let job = job(&manifest);
    let mut killed = in_phase(owned_pod(&job, "mnist-worker-0"), "Failed");
    killed.status.as_mut().expect("a status").container_statuses = Some(vec![
        serde_json::from_value(json!({
            "name": "tensorflow", "image": "tf", "imageID": "", "ready": false,
            "restartCount": 0, "state": {"terminated": {"exitCode": 137}},
        }))
        .expect("a container status"),
    ]);
    let pods = vec![
        in_phase(owned_pod(&job, "mnist-chief-0"), "Running"),
        killed,
        in_phase(owned_pod(&job, "mnist-worker-1"), "Running"),
    ];
    let running = with_status(object(&manifest), &running_status());
    let (outcome, sent, _) =
        reconcile_among(&running, pods, all_services(&job), cluster(&job)).await;

    assert_eq!(outcome.expect("reconciled"), Action::await_change());
    assert_eq!(sent.len(), 3, "{sent:#?}");
    assert_eq!(sent[0].method, Method::DELETE);
    assert_eq!(sent[0].uri, "/api/v1/namespaces/ml/pods/mnist-worker-0?");
    assert_eq!(sent[1].method, Method::PATCH);
    assert_eq!(
        sent[1].uri,
        "/apis/kubeflow.org/v1/namespaces/ml/tfjobs/mnist?"
    );
    assert_eq!(
        sent[1].content_type.as_deref(),
        Some("application/merge-patch+json")
    );
    assert_eq!(
        sent[1].body,
        json!({"metadata": {"annotations": {"training.kubeflow.org/retired-restarts": "1"}}})
    );
    let status = applied_status(&sent[2..]).expect("a status");
    // Restarting replaces Running (docs/semantics.md §5.1).
    assert_eq!(
        status,
        &json!({
            "conditions": [
                {"type": "Created", "status": "True", "reason": "TFJobCreated",
                 "message": "TFJob mnist is created."},
                {"type": "Restarting", "status": "True", "reason": "TFJobRestarting",
                 "message": "TFJob mnist is restarting because 1 Worker replica(s) failed.",
                 "lastUpdateTime": "2025-01-01T00:00:00Z",
                 "lastTransitionTime": "2025-01-01T00:00:00Z"},
            ],
            "replicaStatuses": {
                "Chief": {"active": 1, "selector": selector("chief")},
                "Worker": {"active": 1, "failed": 1, "selector": selector("worker")},
            },
            "startTime": ago(600),
        })
    );
}

#[tokio::test]
async fn failed_reconcile_is_retried_soon() {
    let (ctx, _handle) = context();
    let error = Error::PatchStatus {
        job: "ml/mnist".to_owned(),
        source: kube::Error::Api(kube::core::Status::failure("boom", "InternalError").boxed()),
    };
    assert_eq!(error.metric_label(), "patch_status");
    let action =
        crate::runtime::controller::error_policy(std::sync::Arc::new(object(TF_JOB)), &error, ctx);
    assert_eq!(
        action,
        Action::requeue(crate::runtime::controller::RETRY_AFTER)
    );
}
