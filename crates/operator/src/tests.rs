//! Mock-API scenarios (controller-rs style): one reconcile against a tower-test API server, then
//! the exact requests it sent (method, path and query, content type, the bodies that matter).

use std::time::Duration;

use http::{Method, StatusCode};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::runtime::controller::Action;
use serde_json::{Value, json};
use trainctl_api::JobKind;
use trainctl_engine::build_objects;

use crate::error::Error;
use crate::fixtures::{
    Answer, Sent, TF_JOB, children_holding, cluster, context, context_with, finish, in_phase, job,
    no_children, object, owned_pod, owned_service, render_options, serve, status_body, with_status,
};
use crate::job::JobObject;
use crate::reconcile_at;

const APPLY: &str = "?&force=true&fieldManager=trainctl";
const APPLY_PATCH: &str = "application/apply-patch+yaml";
const SLOTS: [&str; 3] = ["mnist-chief-0", "mnist-worker-0", "mnist-worker-1"];

fn now() -> Timestamp {
    "2025-01-01T00:00:00Z".parse().expect("a timestamp")
}

fn ago(seconds: i64) -> String {
    (now() - SignedDuration::from_secs(seconds)).to_string()
}

/// Runs one reconcile of `object`, which has no pods or services yet, against a server
/// answering with `answer`.
async fn reconcile_against(
    object: &JobObject,
    answer: impl FnMut(&Sent) -> Answer + Send + 'static,
) -> (Result<Action, Error>, Vec<Sent>, Vec<Sent>) {
    reconcile_among(object, vec![], vec![], answer).await
}

/// Runs one reconcile of `object`, whose children the caches hold as `pods` and `services`,
/// against a server answering with `answer`.
async fn reconcile_among(
    object: &JobObject,
    pods: Vec<Pod>,
    services: Vec<Service>,
    answer: impl FnMut(&Sent) -> Answer + Send + 'static,
) -> (Result<Action, Error>, Vec<Sent>, Vec<Sent>) {
    let (ctx, handle) = context();
    let server = serve(handle, answer);
    let children = children_holding(pods, services);
    let outcome = reconcile_at(JobKind::TFJob, object, &ctx, &children, now()).await;
    let (sent, events) = finish(ctx, server).await;
    (outcome, sent, events)
}

/// The creations of `resource` (`pods`, `services`), by name: a `POST` as our field manager,
/// as upstream creates them (a server-side apply would refuse templates that a create takes).
fn applied<'a>(sent: &'a [Sent], resource: &str) -> Vec<(&'a str, &'a Value)> {
    let collection = format!("/api/v1/namespaces/ml/{resource}");
    sent.iter()
        .filter(|s| s.path().starts_with(&collection))
        .filter(|s| s.method != Method::GET && s.method != Method::DELETE)
        .map(|s| {
            assert_eq!(s.method, Method::POST, "{} {}", s.method, s.uri);
            assert_eq!(s.uri, format!("{collection}?&fieldManager=trainctl"));
            assert_eq!(s.content_type.as_deref(), Some("application/json"));
            let name = s.body["metadata"]["name"].as_str().unwrap_or_default();
            (name, &s.body)
        })
        .collect()
}

fn names<'a>(applied: &[(&'a str, &Value)]) -> Vec<&'a str> {
    applied.iter().map(|(name, _)| *name).collect()
}

/// The status applied to the job, if one was.
fn applied_status(sent: &[Sent]) -> Option<&Value> {
    let status = sent
        .iter()
        .find(|s| s.path() == "/apis/kubeflow.org/v1/namespaces/ml/tfjobs/mnist/status")?;
    assert_eq!(status.method, Method::PATCH);
    assert_eq!(status.uri, format!("{}{APPLY}", status.path()));
    assert_eq!(status.content_type.as_deref(), Some(APPLY_PATCH));
    assert_eq!(status.body["apiVersion"], "kubeflow.org/v1");
    assert_eq!(status.body["kind"], "TFJob");
    Some(&status.body["status"])
}

/// `(reason, note)` of each event, in the order recorded.
fn event_notes(events: &[Sent]) -> Vec<(String, String)> {
    events
        .iter()
        .map(|event| {
            assert_eq!(event.method, Method::POST);
            assert_eq!(event.path(), "/apis/events.k8s.io/v1/namespaces/ml/events");
            assert_eq!(event.body["regarding"]["kind"], "TFJob");
            assert_eq!(event.body["regarding"]["uid"], "job-uid");
            let text = |key: &str| event.body[key].as_str().unwrap_or_default().to_owned();
            (text("reason"), text("note"))
        })
        .collect()
}

fn env_value<'a>(pod: &'a Value, name: &str) -> Option<&'a str> {
    pod["spec"]["containers"][0]["env"]
        .as_array()?
        .iter()
        .find(|var| var["name"] == name)?["value"]
        .as_str()
}

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

fn running_status() -> Value {
    json!({
        "conditions": [
            {"type": "Created", "status": "True", "reason": "TFJobCreated",
             "message": "TFJob mnist is created."},
            {"type": "Running", "status": "True", "reason": "TFJobRunning",
             "message": "TFJob ml/mnist is running."},
        ],
        "startTime": ago(600),
    })
}

fn succeeded_status(completed: &str) -> Value {
    json!({
        "conditions": [
            {"type": "Created", "status": "True", "reason": "TFJobCreated",
             "message": "TFJob mnist is created."},
            {"type": "Running", "status": "False", "reason": "TFJobRunning",
             "message": "TFJob ml/mnist is running."},
            {"type": "Succeeded", "status": "True", "reason": "TFJobSucceeded",
             "message": "TFJob ml/mnist successfully completed."},
        ],
        "startTime": ago(600),
        "completionTime": completed,
    })
}

fn all_services(job: &trainctl_api::TrainingJob) -> Vec<Service> {
    SLOTS.iter().map(|name| owned_service(job, name)).collect()
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

#[tokio::test]
async fn failed_reconcile_is_retried_soon() {
    let (ctx, _handle) = context();
    let error = Error::PatchStatus {
        job: "ml/mnist".to_owned(),
        source: kube::Error::Api(kube::core::Status::failure("boom", "InternalError").boxed()),
    };
    assert_eq!(error.metric_label(), "patch_status");
    let action = crate::controller::error_policy(std::sync::Arc::new(object(TF_JOB)), &error, ctx);
    assert_eq!(action, Action::requeue(crate::controller::RETRY_AFTER));
}

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

/// The selector of the pods of `mnist`'s replica type `type_` (lowercase).
fn selector(type_: &str) -> String {
    format!(
        "training.kubeflow.org/job-name=mnist,training.kubeflow.org/operator-name=tfjob-controller,training.kubeflow.org/replica-type={type_}"
    )
}

/// A TFJob `runPolicy` line added to [`TF_JOB`].
fn with_run_policy(run_policy: &str) -> String {
    TF_JOB.replace(
        "spec:\n  tfReplicaSpecs:",
        &format!("spec:\n  runPolicy: {run_policy}\n  tfReplicaSpecs:"),
    )
}

/// The requests, as `METHOD path`.
fn requests(sent: &[Sent]) -> Vec<String> {
    sent.iter()
        .map(|s| format!("{} {}", s.method, s.path()))
        .collect()
}

/// The deletions of every slot's service, then of every slot's pod.
fn deletions_of_every_slot() -> Vec<String> {
    ["services", "pods"]
        .iter()
        .flat_map(|resource| {
            SLOTS
                .iter()
                .map(move |name| format!("DELETE /api/v1/namespaces/ml/{resource}/{name}"))
        })
        .collect()
}

fn running_pods(job: &trainctl_api::TrainingJob) -> Vec<Pod> {
    SLOTS
        .iter()
        .map(|name| in_phase(owned_pod(job, name), "Running"))
        .collect()
}

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
