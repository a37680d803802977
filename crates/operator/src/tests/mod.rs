//! Mock-API scenarios (controller-rs style): one reconcile against a tower-test API server, then
//! the exact requests it sent (method, path and query, content type, the bodies that matter).
//! The helpers shared by the scenarios are here, the scenarios in the submodules.

mod create;
mod gang;
mod hpa;
mod lifecycle;
mod mxnet;

use std::time::Duration;

use http::{Method, StatusCode};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::runtime::controller::Action;
use serde_json::{Value, json};
use trainctl_api::JobKind;
use trainctl_engine::build_objects;

use crate::fixtures::reconcile_at;
use crate::fixtures::{
    Answer, Sent, TF_JOB, children_holding, cluster, context, context_with, finish, in_phase, job,
    no_children, object, owned_pod, owned_service, render_options, serve, status_body, with_status,
};
use crate::reconcile::error::Error;
use crate::reconcile::job::JobObject;

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
