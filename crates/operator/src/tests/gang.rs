//! Gang scheduling (volcano's PodGroup admits the pods, and goes with the finished job), and a
//! job that MultiKueue manages, left alone.

use super::*;

/// One reconcile of the new [`TF_JOB`] under volcano, whose PodGroup is in `phase` (`None`: absent).
async fn reconcile_under_volcano(phase: Option<&'static str>) -> (Action, Vec<Sent>) {
    let job = job(TF_JOB);
    let mut answer = cluster(&job);
    let answer = move |sent: &Sent| match phase {
        Some(phase)
            if sent.method == Method::GET
                && sent.path()
                    == "/apis/scheduling.volcano.sh/v1beta1/namespaces/ml/podgroups/mnist" =>
        {
            (
                StatusCode::OK,
                json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                       "metadata": {"name": "mnist", "namespace": "ml"},
                       "status": {"phase": phase}}),
            )
        }
        _ => answer(sent),
    };
    let options = trainctl_engine::BuildOptions {
        gang_scheduler: Some("volcano".to_owned()),
        ..render_options()
    };
    let (ctx, handle) = context_with(options);
    let server = serve(handle, answer);
    let outcome = reconcile_at(JobKind::TFJob, &object(TF_JOB), &ctx, &no_children(), now()).await;
    let (sent, _) = finish(ctx, server).await;
    (outcome.expect("reconciled"), sent)
}

#[tokio::test]
async fn volcano_pods_and_services_wait_until_the_pod_group_is_admitted() {
    let (action, sent) = reconcile_under_volcano(None).await;
    assert_eq!(action, Action::await_change());
    assert_eq!(sent[0].method, Method::GET);
    assert_eq!(
        sent[0].uri,
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/ml/podgroups/mnist"
    );
    assert_eq!(sent[1].method, Method::PATCH);
    assert_eq!(
        sent[1].uri,
        format!("/apis/scheduling.volcano.sh/v1beta1/namespaces/ml/podgroups/mnist{APPLY}")
    );
    assert_eq!(sent[1].body["spec"]["minMember"], 3);
    assert_eq!(
        sent[1].body["metadata"]["ownerReferences"][0]["uid"],
        "job-uid"
    );
    assert!(
        applied(&sent, "pods").is_empty(),
        "no pods before admission"
    );
    // Nor services, as upstream: it creates neither until volcano admits the gang.
    assert!(applied(&sent, "services").is_empty(), "{sent:#?}");
    let status = applied_status(&sent).expect("a status");
    assert_eq!(
        status["conditions"][0]["message"],
        "TFJob mnist is created. Pending: waiting for PodGroup mnist to be created."
    );
}

#[tokio::test]
async fn volcano_pods_are_created_once_the_pod_group_is_inqueue() {
    let (_, sent) = reconcile_under_volcano(Some("Inqueue")).await;
    let pods = applied(&sent, "pods");
    assert_eq!(names(&pods), SLOTS);
    for (_, pod) in pods {
        assert_eq!(pod["spec"]["schedulerName"], "volcano");
        assert_eq!(
            pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"],
            "mnist"
        );
    }
}

#[tokio::test]
async fn job_managed_by_multikueue_is_left_alone() {
    let manifest = with_run_policy("{managedBy: kueue.x-k8s.io/multikueue}");
    let (outcome, sent, events) =
        reconcile_against(&object(&manifest), cluster(&job(&manifest))).await;
    assert_eq!(outcome.expect("reconciled"), Action::await_change());
    assert!(
        sent.is_empty() && events.is_empty(),
        "{sent:#?} {events:#?}"
    );
}

#[tokio::test]
async fn finished_job_under_volcano_deletes_its_pod_group() {
    let job = job(TF_JOB);
    let mut answer = cluster(&job);
    let answer = move |sent: &Sent| {
        if sent.method == Method::GET && sent.path().ends_with("/podgroups/mnist") {
            (
                StatusCode::OK,
                json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                       "metadata": {"name": "mnist", "namespace": "ml"},
                       "status": {"phase": "Running"}}),
            )
        } else {
            answer(sent)
        }
    };
    let options = trainctl_engine::BuildOptions {
        gang_scheduler: Some("volcano".to_owned()),
        ..render_options()
    };
    let (ctx, handle) = context_with(options);
    let server = serve(handle, answer);
    let finished = with_status(object(TF_JOB), &succeeded_status(&ago(5)));
    let outcome = reconcile_at(JobKind::TFJob, &finished, &ctx, &no_children(), now()).await;
    let (sent, _) = finish(ctx, server).await;

    assert_eq!(outcome.expect("reconciled"), Action::await_change());
    assert_eq!(
        requests(&sent),
        [
            "GET /apis/scheduling.volcano.sh/v1beta1/namespaces/ml/podgroups/mnist",
            "DELETE /apis/scheduling.volcano.sh/v1beta1/namespaces/ml/podgroups/mnist",
        ]
    );
}
