//! An elastic PyTorchJob's HorizontalPodAutoscaler: applied as the engine builds it, deleted
//! while the job is suspended, and a refusal that leaves the job running.

use super::*;

/// An elastic PyTorchJob `ml/elastic` of 2 workers, autoscaled by CPU between 1 and 3, with
/// `run_policy` as its `runPolicy`.
fn autoscaled(run_policy: &str) -> String {
    format!(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {{name: elastic, namespace: \
         ml, uid: job-uid}}\nspec:\n  runPolicy: {run_policy}\n  elasticPolicy:\n    \
         minReplicas: 1\n    maxReplicas: 3\n    metrics: [{{type: Resource, resource: {{name: \
         cpu, target: {{type: Utilization, averageUtilization: 80}}}}}}]\n  \
         pytorchReplicaSpecs:\n    Worker:\n      replicas: 2\n      template: {{spec: \
         {{containers: [{{name: pytorch, image: p}}]}}}}\n"
    )
}

const HPA: &str = "/apis/autoscaling/v2/namespaces/ml/horizontalpodautoscalers/elastic";

/// One reconcile of `manifest` (a new job) against a cluster that answers the HPA's requests
/// with `hpa_answer` (`None`: as a cluster holding the job does).
async fn reconcile_pytorch(
    manifest: &str,
    hpa_answer: Option<Answer>,
) -> (Result<Action, Error>, Vec<Sent>, Vec<Sent>) {
    let mut answer = cluster(&job(manifest));
    let answer = move |sent: &Sent| match &hpa_answer {
        Some(refused) if sent.path() == HPA => refused.clone(),
        _ => answer(sent),
    };
    let (ctx, handle) = context();
    let server = serve(handle, answer);
    let outcome = reconcile_at(
        JobKind::PyTorchJob,
        &object(manifest),
        &ctx,
        &no_children(),
        now(),
    )
    .await;
    let (sent, events) = finish(ctx, server).await;
    (outcome, sent, events)
}

/// The requests to the HPA.
fn to_the_hpa(sent: &[Sent]) -> Vec<&Sent> {
    sent.iter()
        .filter(|s| s.path().starts_with("/apis/autoscaling/"))
        .collect()
}

#[tokio::test]
async fn a_new_autoscaled_job_applies_its_hpa_and_creates_its_pods() {
    let manifest = autoscaled("{}");
    let (outcome, sent, _) = reconcile_pytorch(&manifest, None).await;
    assert_eq!(outcome.expect("reconciled"), Action::await_change());
    let hpa = to_the_hpa(&sent);
    assert_eq!(hpa.len(), 1, "{hpa:#?}");
    assert_eq!(hpa[0].method, Method::PATCH);
    assert_eq!(hpa[0].uri, format!("{HPA}{APPLY}"));
    assert_eq!(hpa[0].content_type.as_deref(), Some(APPLY_PATCH));
    let built = trainctl_engine::objects::hpa::build_hpa(&job(&manifest));
    assert_eq!(hpa[0].body, serde_json::to_value(built).expect("JSON"));
    assert_eq!(hpa[0].body["spec"]["maxReplicas"], 3);
    assert_eq!(
        hpa[0].body["metadata"]["ownerReferences"][0]["uid"],
        "job-uid"
    );
    let collection = "/api/v1/namespaces/ml/pods";
    let pods: Vec<&str> = sent
        .iter()
        .filter(|s| s.method == Method::POST && s.path() == collection)
        .map(|s| s.body["metadata"]["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(pods, ["elastic-worker-0", "elastic-worker-1"]);
}

#[tokio::test]
async fn a_suspended_autoscaled_job_deletes_its_hpa_even_one_already_gone() {
    for answer in [
        None,
        Some((StatusCode::NOT_FOUND, status_body(404, "NotFound"))),
    ] {
        let (outcome, sent, events) =
            reconcile_pytorch(&autoscaled("{suspend: true}"), answer).await;
        assert_eq!(outcome.expect("reconciled"), Action::await_change());
        let hpa = to_the_hpa(&sent);
        assert_eq!(hpa.len(), 1, "{hpa:#?}");
        assert_eq!(hpa[0].method, Method::DELETE);
        assert_eq!(hpa[0].path(), HPA);
        assert!(
            !events.iter().any(|e| e.body["reason"] == "FailedDeleteHPA"),
            "{events:#?}"
        );
    }
}

#[tokio::test]
async fn a_refused_hpa_is_a_warning_and_the_job_runs_all_the_same() {
    let forbidden = (StatusCode::FORBIDDEN, status_body(403, "Forbidden"));
    let (outcome, sent, events) = reconcile_pytorch(&autoscaled("{}"), Some(forbidden)).await;
    match outcome {
        Err(Error::Apply { kind, name, .. }) => {
            assert_eq!(
                (kind, name.as_str()),
                ("HorizontalPodAutoscaler", "elastic")
            );
        }
        other => panic!("the refusal is the reconcile's error, for a retry: {other:?}"),
    }
    let pods = sent
        .iter()
        .filter(|s| s.method == Method::POST && s.path() == "/api/v1/namespaces/ml/pods")
        .count();
    assert_eq!(pods, 2, "the pods are created all the same");
    assert!(
        sent.iter()
            .any(|s| s.path() == "/apis/kubeflow.org/v1/namespaces/ml/pytorchjobs/elastic/status"),
        "the status is written all the same"
    );
    let warning = events
        .iter()
        .find(|e| e.body["reason"] == "FailedApplyHPA")
        .unwrap_or_else(|| panic!("a FailedApplyHPA event in {events:#?}"));
    assert_eq!(warning.body["type"], "Warning");
    assert_eq!(warning.body["regarding"]["kind"], "PyTorchJob");
    assert_eq!(warning.body["related"]["kind"], "HorizontalPodAutoscaler");
    assert_eq!(warning.body["related"]["apiVersion"], "autoscaling/v2");
    let note = warning.body["note"].as_str().unwrap_or_default();
    assert!(
        note.starts_with("Error applying HorizontalPodAutoscaler elastic: ")
            && note
                .contains("needs create, patch and delete on autoscaling horizontalpodautoscalers")
            && note.ends_with("the job runs without autoscaling; retrying"),
        "{note}"
    );
}

#[tokio::test]
async fn an_elastic_job_without_metrics_leaves_autoscaling_alone() {
    let manifest = autoscaled("{}").replace(
        "    metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]\n",
        "",
    );
    assert!(!manifest.contains("metrics"), "{manifest}");
    let (outcome, sent, _) = reconcile_pytorch(&manifest, None).await;
    outcome.expect("reconciled");
    assert!(to_the_hpa(&sent).is_empty(), "{sent:#?}");
}
