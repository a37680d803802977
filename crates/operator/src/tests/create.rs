//! A new job: its pods and services created as `render` prints them (MPI's RBAC and hostfile
//! first), a creation that failed retried without duplicates, and an invalid or unreadable job
//! failed with the reason.

use super::*;
use crate::reconcile::children::Written;
use crate::reconcile::decide_and_apply;

#[tokio::test]
async fn new_tfjob_applies_services_and_pods_then_writes_created() {
    let job = job(TF_JOB);
    let (outcome, sent, events) = reconcile_against(&object(TF_JOB), cluster(&job)).await;

    assert_eq!(outcome.expect("reconciled"), Action::await_change());
    assert_eq!(sent.len(), 7, "{sent:#?}");

    let services = applied(&sent[..3], "services");
    assert_eq!(names(&services), SLOTS);
    for (name, service) in &services {
        assert_eq!(service["kind"], "Service");
        assert_eq!(service["spec"]["clusterIP"], "None");
        assert_eq!(
            service["metadata"]["labels"]["training.kubeflow.org/job-name"],
            "mnist"
        );
        assert_eq!(service["spec"]["selector"], service["metadata"]["labels"]);
        assert_eq!(
            service["spec"]["ports"],
            json!([{"name": "tfjob-port", "port": 2222}])
        );
        assert_eq!(service["metadata"]["name"], *name);
    }

    let pods = applied(&sent[3..6], "pods");
    assert_eq!(names(&pods), SLOTS);
    for (name, pod) in &pods {
        let (type_, index) = name["mnist-".len()..].split_once('-').expect("type-index");
        let labels = &pod["metadata"]["labels"];
        assert_eq!(labels["training.kubeflow.org/job-name"], "mnist");
        assert_eq!(
            labels["training.kubeflow.org/operator-name"],
            "tfjob-controller"
        );
        assert_eq!(labels["training.kubeflow.org/replica-type"], type_);
        assert_eq!(labels["training.kubeflow.org/replica-index"], index);
        assert_eq!(
            pod["metadata"]["ownerReferences"],
            json!([{
                "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist",
                "uid": "job-uid", "controller": true, "blockOwnerDeletion": true,
            }])
        );
        assert_eq!(pod["spec"]["restartPolicy"], "Never");
    }
    assert_eq!(
        pods[0].1["metadata"]["labels"]["training.kubeflow.org/job-role"],
        "master"
    );
    assert_eq!(
        env_value(pods[2].1, "TF_CONFIG"),
        Some(
            r#"{"cluster":{"chief":["mnist-chief-0.ml.svc:2222"],"worker":["mnist-worker-0.ml.svc:2222","mnist-worker-1.ml.svc:2222"]},"task":{"type":"worker","index":1},"environment":"cloud"}"#
        )
    );

    let status = applied_status(&sent[6..]).expect("a status");
    assert_eq!(
        status["conditions"],
        json!([{
            "type": "Created", "status": "True", "reason": "TFJobCreated",
            "message": "TFJob mnist is created.",
            "lastUpdateTime": "2025-01-01T00:00:00Z", "lastTransitionTime": "2025-01-01T00:00:00Z",
        }])
    );
    assert_eq!(status["startTime"], "2025-01-01T00:00:00Z");

    let notes = event_notes(&events);
    assert_eq!(notes.len(), 6);
    assert!(notes.contains(&(
        "SuccessfulCreatePod".to_owned(),
        "Created pod: mnist-worker-1".to_owned()
    )));
    assert!(notes.contains(&(
        "SuccessfulCreateService".to_owned(),
        "Created service: mnist-chief-0".to_owned()
    )));
}

#[tokio::test]
async fn each_creation_is_noted_with_the_uid_the_api_server_gave_it() {
    let job = job(TF_JOB);
    let (ctx, handle) = context();
    let server = serve(handle, cluster(&job));
    let mut written = Written::default();
    let outcome = decide_and_apply(
        JobKind::TFJob,
        &object(TF_JOB),
        &ctx,
        &no_children(),
        now(),
        &mut written,
    )
    .await;
    finish(ctx, server).await;
    outcome.expect("reconciled");
    // The uid is what the cache must show before the reconcile ends (`Children::await_written`).
    let with_uids = SLOTS.map(|name| (name.to_owned(), Some(format!("uid-of-{name}"))));
    assert_eq!(written.created_services, with_uids);
    assert_eq!(written.created_pods, with_uids);
}

/// Kinds whose objects differ most: TF's qualified addresses, PyTorch's init container,
/// XGBoost's worker addresses, MPI's hostfile mount and kubectl delivery.
const RENDERED: [(JobKind, &str); 4] = [
    (JobKind::TFJob, TF_JOB),
    (
        JobKind::PyTorchJob,
        r"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: mnist, namespace: ml, uid: job-uid}
spec:
  runPolicy: {cleanPodPolicy: Running}
  pytorchReplicaSpecs:
    master:
      template: {spec: {containers: [{name: pytorch, image: torch, ports: [{name: extra, containerPort: 8080}]}]}}
    worker:
      replicas: 3
      restartPolicy: ExitCode
      template:
        metadata: {labels: {team: ml}, annotations: {note: kept}}
        spec: {containers: [{name: pytorch, image: torch, resources: {limits: {nvidia.com/gpu: 1}}}]}
",
    ),
    (
        JobKind::XGBoostJob,
        r"
apiVersion: kubeflow.org/v1
kind: XGBoostJob
metadata: {name: mnist, namespace: ml, uid: job-uid}
spec:
  xgbReplicaSpecs:
    Master:
      template: {spec: {containers: [{name: xgboost, image: xgb}]}}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: xgboost, image: xgb}]}}
",
    ),
    (
        JobKind::MPIJob,
        r"
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: mnist, namespace: ml, uid: job-uid}
spec:
  slotsPerWorker: 2
  mpiReplicaSpecs:
    Launcher:
      template: {spec: {containers: [{name: launcher, image: mpi, command: [mpirun, python, train.py]}]}}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: worker, image: mpi}]}}
",
    ),
];

#[tokio::test]
async fn applied_objects_are_what_render_prints() {
    for (kind, manifest) in RENDERED {
        let rendered = build_objects(&job(manifest), &render_options());
        let (ctx, handle) = context();
        let server = serve(handle, cluster(&job(manifest)));
        reconcile_at(kind, &object(manifest), &ctx, &no_children(), now())
            .await
            .expect("reconciled");
        let (sent, _) = finish(ctx, server).await;
        let bodies = |resource: &str| -> Vec<Value> {
            applied(&sent, resource)
                .into_iter()
                .map(|(_, body)| body.clone())
                .collect()
        };
        let expected = |objects: Value| objects.as_array().cloned().unwrap_or_default();
        assert_eq!(
            bodies("pods"),
            expected(serde_json::to_value(&rendered.pods).unwrap()),
            "{kind} pods"
        );
        assert_eq!(
            bodies("services"),
            expected(serde_json::to_value(&rendered.services).unwrap()),
            "{kind} services"
        );
    }
}

#[tokio::test]
async fn invalid_job_fails_with_the_validation_message_and_creates_nothing() {
    let manifest = format!(
        "{TF_JOB}    Evaluator:\n      template: {{spec: {{containers: [{{name: tensorflow}}]}}}}\n"
    );
    let job = job(TF_JOB);
    let (outcome, sent, events) = reconcile_against(&object(&manifest), cluster(&job)).await;

    assert_eq!(outcome.expect("refused"), Action::await_change());
    assert_eq!(sent.len(), 1, "only the status is written: {sent:#?}");
    let status = applied_status(&sent).expect("a status");
    let failed = &status["conditions"][0];
    assert_eq!(failed["type"], "Failed");
    assert_eq!(failed["status"], "True");
    assert_eq!(failed["reason"], "TFJobFailed");
    let message = failed["message"].as_str().expect("a message");
    assert!(
        message.starts_with(
            "TFJob ml/mnist is invalid: spec.tfReplicaSpecs[Evaluator].template.spec.containers[0].image: "
        ),
        "{message}"
    );
    assert_eq!(status["completionTime"], "2025-01-01T00:00:00Z");
    assert_eq!(
        event_notes(&events),
        [("TFJobFailed".to_owned(), message.to_owned())]
    );

    // Refused once: the next reconcile of the failed job sends nothing.
    let refused = with_status(object(&manifest), &status.clone());
    let (outcome, sent, events) = reconcile_against(&refused, cluster(&job)).await;
    assert_eq!(outcome.expect("refused"), Action::await_change());
    assert!(
        sent.is_empty() && events.is_empty(),
        "{sent:#?} {events:#?}"
    );
}

#[tokio::test]
async fn unreadable_job_fails_naming_the_field() {
    let manifest = TF_JOB.replace("replicas: 2", "replicas: two");
    let (outcome, sent, _) = reconcile_against(&object(&manifest), cluster(&job(TF_JOB))).await;
    assert_eq!(outcome.expect("refused"), Action::await_change());
    assert_eq!(sent.len(), 1, "{sent:#?}");
    let message = applied_status(&sent).expect("a status")["conditions"][0]["message"]
        .as_str()
        .expect("a message")
        .to_owned();
    assert!(
        message.starts_with("TFJob ml/mnist is invalid: spec.tfReplicaSpecs.Worker.replicas: "),
        "{message}"
    );
}

/// Answers like [`cluster`], but fails the apply of pod `name` with `code`.
fn failing_pod(
    job: &trainctl_api::TrainingJob,
    name: &'static str,
    code: StatusCode,
) -> impl FnMut(&Sent) -> Answer + Send + 'static {
    let mut answer = cluster(job);
    move |sent: &Sent| {
        if sent.method == Method::POST
            && sent.path() == "/api/v1/namespaces/ml/pods"
            && sent.body["metadata"]["name"] == name
        {
            (code, status_body(code.as_u16(), "Boom"))
        } else {
            answer(sent)
        }
    }
}

#[tokio::test]
async fn failed_pod_creation_is_retried_without_duplicates() {
    for code in [StatusCode::CONFLICT, StatusCode::INTERNAL_SERVER_ERROR] {
        let job = job(TF_JOB);
        let (outcome, sent, events) =
            reconcile_against(&object(TF_JOB), failing_pod(&job, "mnist-worker-1", code)).await;

        match outcome {
            Err(Error::Apply {
                kind: "Pod", name, ..
            }) => assert_eq!(name, "mnist-worker-1"),
            other => panic!("{code}: expected the pod's apply to fail, got {other:?}"),
        }
        assert_eq!(names(&applied(&sent, "pods")), SLOTS, "{code}");
        let status = applied_status(&sent)
            .expect("the status is still written")
            .clone();
        assert!(
            event_notes(&events)
                .iter()
                .any(|(reason, note)| reason == "FailedCreatePod" && note.contains("Boom")),
            "{code}: {events:#?}"
        );

        // The retry sees what the first reconcile created, and creates only what is missing.
        let created: Vec<Pod> = applied(&sent, "pods")
            .into_iter()
            .filter(|(name, _)| *name != "mnist-worker-1")
            .map(|(_, body)| serde_json::from_value(body.clone()).expect("a pod"))
            .collect();
        let retry = with_status(object(TF_JOB), &status);
        let (outcome, sent, _) =
            reconcile_among(&retry, created, all_services(&job), cluster(&job)).await;
        assert_eq!(
            outcome.expect("converged"),
            Action::await_change(),
            "{code}"
        );
        assert_eq!(names(&applied(&sent, "pods")), ["mnist-worker-1"], "{code}");
        assert!(applied(&sent, "services").is_empty(), "{code}");
    }
}

#[tokio::test]
async fn mpi_job_gets_launcher_rbac_and_hostfile_before_its_pods() {
    let (kind, manifest) = RENDERED[3];
    let job = job(manifest);
    let mut answer = cluster(&job);
    // The user brought the service account: it is left alone.
    let answer = move |sent: &Sent| {
        if sent.method == Method::POST && sent.path().ends_with("/serviceaccounts") {
            (StatusCode::CONFLICT, status_body(409, "AlreadyExists"))
        } else {
            answer(sent)
        }
    };
    let (ctx, handle) = context();
    let server = serve(handle, answer);
    let outcome = reconcile_at(kind, &object(manifest), &ctx, &no_children(), now()).await;
    let (sent, _) = finish(ctx, server).await;

    assert_eq!(outcome.expect("reconciled"), Action::await_change());
    let requests: Vec<String> = sent
        .iter()
        .map(|s| match s.body["metadata"]["name"].as_str() {
            Some(name) if s.method == Method::POST && s.path().ends_with("/pods") => {
                format!("{} {} {name}", s.method, s.path())
            }
            _ => format!("{} {}", s.method, s.path()),
        })
        .collect();
    assert_eq!(
        requests,
        [
            "POST /api/v1/namespaces/ml/serviceaccounts",
            "PATCH /apis/rbac.authorization.k8s.io/v1/namespaces/ml/roles/mnist-launcher",
            "PATCH /apis/rbac.authorization.k8s.io/v1/namespaces/ml/rolebindings/mnist-launcher",
            "PATCH /api/v1/namespaces/ml/configmaps/mnist-config",
            "POST /api/v1/namespaces/ml/pods mnist-worker-0",
            "POST /api/v1/namespaces/ml/pods mnist-worker-1",
            "POST /api/v1/namespaces/ml/pods mnist-launcher",
            "PATCH /apis/kubeflow.org/v1/namespaces/ml/mpijobs/mnist/status",
        ]
    );
    let rendered = build_objects(&job, &render_options());
    assert_eq!(
        sent[0].body,
        serde_json::to_value(&rendered.service_accounts[0]).unwrap()
    );
    assert_eq!(
        sent[3].body,
        serde_json::to_value(&rendered.config_maps[0]).unwrap()
    );
}
