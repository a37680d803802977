//! Test fixtures: jobs loaded as manifests are, the objects the engine builds for them, and a
//! mock API server (`trainctl-kube-recorder`) that answers like Kubernetes and records every
//! request.

use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::runtime::controller::Action;
use kube::runtime::{reflector, watcher};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use trainctl_api::{JobKind, TrainingJob};
use trainctl_engine::{Addressing, BuildOptions, build_objects};
use trainctl_kube_recorder::{Handle, received};
pub(crate) use trainctl_kube_recorder::{Sent, serve};

use crate::reconcile::cached_pod::CachedPod;
use crate::reconcile::cached_service::CachedService;
use crate::reconcile::children::{Children, Written};
use crate::reconcile::context::Context;
use crate::reconcile::decide_and_apply;
use crate::reconcile::error::Error;
use crate::reconcile::job::JobObject;
use crate::reconcile::owners::Owners;

/// A TFJob `ml/mnist` (uid `job-uid`): a chief and two workers.
pub(crate) const TF_JOB: &str = r"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: mnist, namespace: ml, uid: job-uid}
spec:
  tfReplicaSpecs:
    Chief:
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
";

/// Loads the single job of a YAML manifest (parsed, defaulted, validated).
pub(crate) fn job(yaml: &str) -> TrainingJob {
    let manifests = trainctl_api::manifest::load_str("test.yaml", yaml);
    assert!(!manifests.has_errors(), "{:#?}", manifests.diagnostics);
    manifests.jobs.into_iter().next().expect("one job").job
}

/// A manifest as the API server sends it: not defaulted (there is no webhook).
pub(crate) fn object(yaml: &str) -> JobObject {
    let value: Value = serde_saphyr::from_str(yaml).expect("YAML");
    serde_json::from_value(value).expect("an object")
}

/// `object` with `status` recorded.
pub(crate) fn with_status(mut object: JobObject, status: &Value) -> JobObject {
    object.status = Some(serde_json::value::to_raw_value(status).expect("JSON"));
    object
}

/// The options `trainctl render` uses without flags (as `commands/render.rs` builds them).
pub(crate) fn render_options() -> BuildOptions {
    BuildOptions {
        addressing: Addressing::Cluster {
            cluster_domain: None,
        },
        gang_scheduler: None,
        ..BuildOptions::default()
    }
}

/// The pod named `name` that the engine builds for `job` (labels and owner reference included).
pub(crate) fn owned_pod(job: &TrainingJob, name: &str) -> Pod {
    build_objects(job, &render_options())
        .pods
        .into_iter()
        .find(|pod| pod.metadata.name.as_deref() == Some(name))
        .expect("the job has this pod")
}

/// The service named `name` that the engine builds for `job`.
pub(crate) fn owned_service(job: &TrainingJob, name: &str) -> Service {
    build_objects(job, &render_options())
        .services
        .into_iter()
        .find(|service| service.metadata.name.as_deref() == Some(name))
        .expect("the job has this service")
}

/// `pod` in `phase`.
pub(crate) fn in_phase(mut pod: Pod, phase: &str) -> Pod {
    pod.status = Some(k8s_openapi::api::core::v1::PodStatus {
        phase: Some(phase.to_owned()),
        ..Default::default()
    });
    pod
}

/// A context whose client talks to the returned mock API server.
pub(crate) fn context() -> (Arc<Context>, Handle) {
    context_with(render_options())
}

/// [`context`] building objects with `options`.
pub(crate) fn context_with(options: BuildOptions) -> (Arc<Context>, Handle) {
    let (client, handle) = trainctl_kube_recorder::client("default");
    (Arc::new(Context::new(client, options)), handle)
}

/// An answer: the HTTP status and the JSON body.
pub(crate) type Answer = (StatusCode, Value);

/// Drops the context (closing the client) and returns what the server received, events apart.
pub(crate) async fn finish(
    ctx: Arc<Context>,
    server: JoinHandle<Vec<Sent>>,
) -> (Vec<Sent>, Vec<Sent>) {
    drop(ctx);
    received(server)
        .await
        .into_iter()
        .partition(|request| !request.path().starts_with("/apis/events.k8s.io/"))
}

/// A Kubernetes `Status` body.
pub(crate) fn status_body(code: u16, reason: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Status", "metadata": {},
        "status": if code < 400 { "Success" } else { "Failure" },
        "reason": reason, "code": code, "message": reason,
    })
}

/// Answers like an API server holding `job`: applies and creations echo what was sent (with a
/// uid, as the API server gives one), deletions succeed. (The job's pods and services are in
/// the caches a reconcile reads: [`children_holding`].)
pub(crate) fn cluster(job: &TrainingJob) -> impl FnMut(&Sent) -> Answer + Send + 'static {
    let job = serde_json::to_value(job).expect("serializes");
    move |sent: &Sent| {
        let path = sent.path();
        match sent.method {
            Method::PATCH if path.starts_with("/apis/kubeflow.org/") => {
                (StatusCode::OK, job.clone())
            }
            Method::PATCH => (StatusCode::OK, sent.body.clone()),
            Method::POST => {
                let mut created = sent.body.clone();
                let name = created["metadata"]["name"].as_str().unwrap_or_default();
                created["metadata"]["uid"] = json!(format!("uid-of-{name}"));
                (StatusCode::CREATED, created)
            }
            Method::DELETE => (StatusCode::OK, status_body(200, "")),
            _ => (StatusCode::NOT_FOUND, status_body(404, "NotFound")),
        }
    }
}

/// `pod` as the children's cache holds it: decoded from its JSON, as from a watch, and slimmed.
pub(crate) fn cached(pod: &Pod) -> CachedPod {
    let mut cached: CachedPod =
        serde_json::from_value(serde_json::to_value(pod).expect("a pod serializes"))
            .expect("a pod reads as a cached pod");
    cached.slim();
    cached
}

/// `service` as the children's cache holds it, as [`cached`] for a pod.
pub(crate) fn cached_service(service: &Service) -> CachedService {
    let mut cached: CachedService =
        serde_json::from_value(serde_json::to_value(service).expect("a service serializes"))
            .expect("a service reads as a cached service");
    cached.slim();
    cached
}

/// Caches holding `pods` and `services` (slimmed, as the watches cache them), that show a
/// reconcile's writes only if they already hold them: [`Children::await_written`] does not wait.
pub(crate) fn children_holding(pods: Vec<Pod>, services: Vec<Service>) -> Children {
    // The first list, as a watch delivers it: what it holds, then the store is ready.
    let (pod_store, mut pod_writer) = reflector::store();
    let (service_store, mut service_writer) = reflector::store();
    let (pod_owners, service_owners) = (Owners::default(), Owners::default());
    let mut pod_event = |event| {
        pod_writer.apply_watcher_event(&event);
        pod_owners.observe(&event);
    };
    let mut service_event = |event| {
        service_writer.apply_watcher_event(&event);
        service_owners.observe(&event);
    };
    pod_event(watcher::Event::Init);
    service_event(watcher::Event::Init);
    for pod in pods {
        pod_event(watcher::Event::InitApply(cached(&pod)));
    }
    for service in services {
        service_event(watcher::Event::InitApply(cached_service(&service)));
    }
    pod_event(watcher::Event::InitDone);
    service_event(watcher::Event::InitDone);
    // Both stores had their first list.
    let ready = [(); 2].map(|()| tokio::sync::watch::channel(true).1);
    Children::new(
        (pod_store, pod_owners),
        (service_store, service_owners),
        ready,
        Duration::ZERO,
    )
}

/// Caches that hold no pods and no services.
pub(crate) fn no_children() -> Children {
    children_holding(vec![], vec![])
}

/// Reconciles one job of `kind` as of `now`: read and validate, fetch (from `children`),
/// observe, decide, apply, and wait until `children` shows what was created and deleted.
pub(crate) async fn reconcile_at(
    kind: JobKind,
    object: &JobObject,
    ctx: &Context,
    children: &Children,
    now: Timestamp,
) -> Result<Action, Error> {
    let mut written = Written::default();
    let outcome = decide_and_apply(kind, object, ctx, children, now, &mut written).await;
    children.await_written(&written).await;
    outcome
}
