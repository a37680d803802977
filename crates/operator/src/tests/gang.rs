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

/// One reconcile of the new [`TF_JOB`] under Kubernetes' own gang scheduling, its PodGroup as
/// `group` (`None`: absent); what was sent.
async fn reconcile_under_kubernetes(group: Option<Value>) -> Vec<Sent> {
    let job = job(TF_JOB);
    let mut answer = cluster(&job);
    let answer = move |sent: &Sent| {
        let path = sent.path();
        if !path.starts_with("/apis/scheduling.k8s.io/v1alpha2/namespaces/ml/") {
            return answer(sent);
        }
        match (&sent.method, &group) {
            (&Method::GET, Some(group)) => (StatusCode::OK, group.clone()),
            (&Method::GET, None) => (
                StatusCode::NOT_FOUND,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                       "reason": "NotFound", "code": 404, "message": "not found"}),
            ),
            _ => (StatusCode::CREATED, sent.body.clone()),
        }
    };
    let options = trainctl_engine::BuildOptions {
        gang_scheduler: Some("kubernetes".to_owned()),
        ..render_options()
    };
    let (ctx, handle) = context_with(options);
    let server = serve(handle, answer);
    let outcome = reconcile_at(JobKind::TFJob, &object(TF_JOB), &ctx, &no_children(), now()).await;
    let (sent, _) = finish(ctx, server).await;
    outcome.expect("reconciled");
    sent
}

#[tokio::test]
async fn kubernetes_gang_creates_the_workload_then_the_pod_group_and_no_pod_before_it() {
    let sent = reconcile_under_kubernetes(None).await;
    let scheduling: Vec<String> = requests(&sent)
        .into_iter()
        .filter(|request| request.contains("scheduling.k8s.io"))
        .collect();
    assert_eq!(
        scheduling,
        [
            "GET /apis/scheduling.k8s.io/v1alpha2/namespaces/ml/podgroups/mnist",
            "POST /apis/scheduling.k8s.io/v1alpha2/namespaces/ml/workloads",
            "POST /apis/scheduling.k8s.io/v1alpha2/namespaces/ml/podgroups",
        ]
    );
    let posted = |plural: &str| {
        sent.iter()
            .find(|s| s.method == Method::POST && s.path().ends_with(plural))
            .map(|s| s.body.clone())
            .expect("posted")
    };
    assert_eq!(
        posted("/workloads")["spec"]["podGroupTemplates"][0]["schedulingPolicy"],
        json!({"gang": {"minCount": 3}})
    );
    assert_eq!(
        posted("/podgroups")["spec"]["podGroupTemplateRef"]["workload"]["workloadName"],
        "mnist"
    );
    assert!(
        applied(&sent, "pods").is_empty(),
        "no pods before the PodGroup"
    );
}

#[tokio::test]
async fn kubernetes_gang_pods_name_the_group_and_an_unplaced_group_says_why() {
    let group = json!({
        "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
        "metadata": {"name": "mnist", "namespace": "ml"},
        "status": {"conditions": [{"type": "PodGroupScheduled", "status": "False",
            "reason": "Unschedulable", "message": "0/1 nodes are available: 1 Insufficient cpu."}]},
    });
    let sent = reconcile_under_kubernetes(Some(group)).await;
    assert!(
        !requests(&sent)
            .iter()
            .any(|r| r.starts_with("POST /apis/scheduling.k8s.io")),
        "an existing (immutable) group is left as it is: {sent:#?}"
    );
    let pods = applied(&sent, "pods");
    assert_eq!(names(&pods), SLOTS);
    for (_, pod) in pods {
        assert_eq!(
            pod["spec"]["schedulingGroup"],
            json!({"podGroupName": "mnist"})
        );
        assert_eq!(pod["spec"].get("schedulerName"), None);
    }
    let status = applied_status(&sent).expect("a status");
    assert_eq!(
        status["conditions"][0]["message"],
        "TFJob mnist is created. Pending: PodGroup mnist cannot be placed whole (Unschedulable: \
         0/1 nodes are available: 1 Insufficient cpu.)."
    );
}

/// An answer to discovery of `scheduling.k8s.io/v1alpha2` (served or not) and of the other
/// schedulers' groups (never served).
fn discovery(native: bool) -> impl FnMut(&Sent) -> (StatusCode, Value) + Send + 'static {
    move |sent: &Sent| {
        if native && sent.path() == "/apis/scheduling.k8s.io/v1alpha2" {
            let resource = |name: &str, kind: &str| {
                json!({"name": name, "singularName": "", "namespaced": true, "kind": kind,
                       "verbs": ["create", "delete", "get", "list", "watch"]})
            };
            (
                StatusCode::OK,
                json!({"kind": "APIResourceList", "apiVersion": "v1",
                       "groupVersion": "scheduling.k8s.io/v1alpha2",
                       "resources": [resource("podgroups", "PodGroup"),
                                     resource("workloads", "Workload")]}),
            )
        } else {
            // As kube-apiserver answers for a group version it does not serve: not a Status.
            (StatusCode::NOT_FOUND, json!("404 page not found"))
        }
    }
}

async fn check(scheduler: &str, native: bool) -> Result<(), String> {
    let (ctx, handle) = context();
    let server = serve(handle, discovery(native));
    let scheduler = trainctl_engine::podgroup::GangScheduler::from_name(scheduler).expect("a name");
    let checked = crate::reconcile::gang::check_served(&ctx.client, &scheduler).await;
    drop(finish(ctx, server).await);
    checked.map_err(|error| error.to_string())
}

#[tokio::test]
async fn an_unserved_gang_scheduler_is_an_error_at_start_that_says_what_to_do() {
    assert_eq!(check("kubernetes", true).await, Ok(()));
    assert_eq!(
        check("default-scheduler", true).await,
        Err(
            "--gang-scheduler-name default-scheduler: the API server does not serve \
             scheduling.x-k8s.io/v1alpha1 podgroups, scheduler-plugins' PodGroups (any name but \
             `volcano` and `kubernetes` means a scheduler-plugins scheduler, as upstream; is its \
             PodGroup CRD installed?); this cluster serves Kubernetes' own gang scheduling: use \
             --gang-scheduler-name kubernetes"
                .to_owned()
        )
    );
    assert_eq!(
        check("volcano", false).await,
        Err(
            "--gang-scheduler-name volcano: the API server does not serve \
             scheduling.volcano.sh/v1beta1 podgroups, volcano's PodGroups (is volcano installed?)"
                .to_owned()
        )
    );
    let native = check("kubernetes", false).await.expect_err("not served");
    assert!(
        native.starts_with(
            "--gang-scheduler-name kubernetes: the API server does not serve \
             scheduling.k8s.io/v1alpha2 podgroups and workloads, which Kubernetes' own gang \
             scheduling needs: it needs Kubernetes 1.36 or later with the feature gates \
             GenericWorkload=true,GangScheduling=true"
        ),
        "{native}"
    );
}
