//! What the end-to-end tests share: they run against the control plane of `scripts/cluster`
//! (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, built from the Go
//! module proxy), where `scripts/e2e` installed the CRDs and `deploy/manifests` and runs
//! `trainctl operator` as the `trainctl-operator` service account.
//!
//! The tests are ignored by a plain `cargo test` (no control plane runs there); `scripts/e2e`
//! runs them. They reach the cluster through `KUBECONFIG`, as kubectl does, and each works in a
//! namespace of its own, deleted at the end whatever happened. Each wait for an object watches it
//! (kube-runtime's `await_condition`) under [`TIMEOUT`]; events are listed until they appear.
//!
//! kwok runs no process: a pod "runs" as its Stages say. A pod whose template carries the
//! annotation [`EXIT_CODE_ANNOTATION`] ends after [`RUN_SECONDS_ANNOTATION`] seconds (default 1)
//! with that exit code: `Succeeded` for 0; `Failed` under `restartPolicy: Never`; under
//! `OnFailure` and `Always` the container restarts in place. Other pods run until deleted.
//!
//! Every helper fails the test that calls it by panicking, with what went wrong.
#![expect(
    clippy::missing_panics_doc,
    reason = "test helpers fail the calling test by panicking; the module says so once"
)]

pub mod operator;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use futures_util::FutureExt as _;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{Condition, await_condition};
use kube::{Client, Resource};
use serde::Serialize;
use serde_json::{Value, json};
use trainctl_api::JobKind;
use trainctl_operator::job;

/// How long any one wait may take: kwok starts and ends pods within a second or two.
pub const TIMEOUT: Duration = Duration::from_secs(90);

/// Where `deploy/manifests` installs the operator.
pub const OPERATOR_NAMESPACE: &str = "kubeflow";

/// The pod annotation that makes kwok end the pod's containers with this exit code.
pub const EXIT_CODE_ANNOTATION: &str = "trainctl.test/exit-code";

/// The pod annotation that says how many seconds the containers run before they exit.
pub const RUN_SECONDS_ANNOTATION: &str = "trainctl.test/run-seconds";

/// An image name for the test jobs' containers (kwok pulls nothing).
pub const IMAGE: &str = "busybox:1.36";

/// The repository's root.
#[must_use]
pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Waits for `what` under [`TIMEOUT`]. The future is boxed: kube-runtime's watches are large.
pub fn within<T>(what: &str, future: impl Future<Output = T>) -> impl Future<Output = T> {
    let future = Box::pin(future);
    let what = what.to_owned();
    async move {
        tokio::time::timeout(TIMEOUT, future)
            .await
            .unwrap_or_else(|_| panic!("timed out after {TIMEOUT:?} waiting for {what}"))
    }
}

/// A client from `KUBECONFIG`.
pub async fn client() -> Client {
    Client::try_default()
        .await
        .expect("a kubeconfig for the e2e control plane (KUBECONFIG; scripts/e2e sets it)")
}

/// Runs `test` in a fresh namespace `e2e-<name>-<millis>`, deleted afterwards even when the
/// test panics (the panic is then resumed).
pub async fn in_namespace<F, T>(name: &str, test: F)
where
    F: FnOnce(Client, String) -> T,
    T: Future<Output = ()>,
{
    let client = client().await;
    let namespace = format!("e2e-{name}-{}", jiff::Timestamp::now().as_millisecond());
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let object: Namespace =
        serde_json::from_value(json!({"metadata": {"name": namespace}})).expect("a namespace");
    namespaces
        .create(&PostParams::default(), &object)
        .await
        .expect("namespace created");
    let outcome = AssertUnwindSafe(Box::pin(test(client, namespace.clone())))
        .catch_unwind()
        .await;
    namespaces
        .delete(&namespace, &DeleteParams::background())
        .await
        .expect("namespace deleted");
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// The API of `kind`'s jobs in `namespace`.
#[must_use]
pub fn jobs(client: &Client, namespace: &str, kind: JobKind) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, &job::api_resource(kind))
}

/// Creates the job of `manifest` (YAML) in `namespace`.
pub async fn create_job(client: &Client, namespace: &str, manifest: &str) -> DynamicObject {
    let object: DynamicObject = serde_saphyr::from_str(manifest).expect("a job manifest");
    let kind: JobKind = object
        .types
        .as_ref()
        .and_then(|types| types.kind.parse().ok())
        .expect("a job kind");
    jobs(client, namespace, kind)
        .create(&PostParams::default(), &object)
        .await
        .expect("the API server accepts the job")
}

/// Runs `kubectl ARGS` (the one `scripts/cluster` built, first on `PATH` under `scripts/e2e`);
/// its standard output, or a panic with what it printed when it failed.
#[must_use]
pub fn kubectl(args: &[&str]) -> String {
    let output = Command::new("kubectl")
        .args(args)
        .output()
        .expect("kubectl runs (scripts/cluster env puts it on PATH)");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "kubectl {}: {}\n{stdout}{}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The job's last condition, as `(type, status, reason, message)`.
#[must_use]
pub fn last_condition(job: &DynamicObject) -> Option<(String, String, String, String)> {
    let condition = job.data["status"]["conditions"].as_array()?.last()?;
    let text = |key: &str| condition[key].as_str().unwrap_or_default().to_owned();
    Some((
        text("type"),
        text("status"),
        text("reason"),
        text("message"),
    ))
}

/// Holds once the job's last condition is `type_` and true.
#[must_use]
pub fn last_condition_is(type_: &'static str) -> impl Condition<DynamicObject> {
    move |job: Option<&DynamicObject>| {
        job.and_then(last_condition)
            .is_some_and(|(last, status, _, _)| last == type_ && status == "True")
    }
}

/// Waits until `condition` holds for the job `name` of `kind`; the job then.
pub async fn await_job(
    client: &Client,
    namespace: &str,
    kind: JobKind,
    name: &str,
    what: &str,
    condition: impl Condition<DynamicObject>,
) -> DynamicObject {
    within(
        &format!("{kind} {name}: {what}"),
        await_condition(jobs(client, namespace, kind), name, condition),
    )
    .await
    .expect("the watch works")
    .expect("the job exists")
}

/// Waits until the last condition of the job `name` of `kind` is `type_` and true; the job
/// then.
pub async fn await_last_condition(
    client: &Client,
    namespace: &str,
    kind: JobKind,
    name: &str,
    type_: &'static str,
) -> DynamicObject {
    let what = format!("to be {type_}");
    await_job(
        client,
        namespace,
        kind,
        name,
        &what,
        last_condition_is(type_),
    )
    .await
}

/// Sets the job's `spec.runPolicy.suspend` to `on` (a merge patch, as `kubectl patch` sends);
/// when suspending, waits until the job's last condition is `Suspended`.
pub async fn set_suspend(client: &Client, namespace: &str, kind: JobKind, name: &str, on: bool) {
    jobs(client, namespace, kind)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"runPolicy": {"suspend": on}}})),
        )
        .await
        .unwrap_or_else(|error| panic!("{name}: suspend set to {on}: {error}"));
    if on {
        await_last_condition(client, namespace, kind, name, "Suspended").await;
    }
}

/// The pods of the job `job` in `namespace` (its `training.kubeflow.org/job-name` label), by name.
pub async fn pods_of_job(
    client: &Client,
    namespace: &str,
    job: &str,
) -> std::collections::BTreeMap<String, Pod> {
    let selector = format!("training.kubeflow.org/job-name={job}");
    Api::<Pod>::namespaced(client.clone(), namespace)
        .list(&ListParams::default().labels(&selector))
        .await
        .expect("pods listed")
        .items
        .into_iter()
        .map(|pod| (kube::ResourceExt::name_any(&pod), pod))
        .collect()
}

/// Waits until the object `name` exists; the object then.
pub async fn await_exists<K>(api: Api<K>, name: &str) -> K
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    within(
        &format!("{name} to exist"),
        await_condition(api, name, |object: Option<&K>| object.is_some()),
    )
    .await
    .expect("the watch works")
    .expect("it exists")
}

/// The value as JSON, for comparing what the cluster holds with what the engine renders.
#[must_use]
pub fn json_of<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("serializes")
}

/// The events about the job `name`, as `(type, reason, note)`, oldest first.
pub async fn job_events(
    client: &Client,
    namespace: &str,
    name: &str,
) -> Vec<(String, String, String)> {
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    let mut events: Vec<Event> = events
        .list(&ListParams::default())
        .await
        .expect("events listed")
        .items
        .into_iter()
        .filter(|event| event.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .collect();
    events.sort_by(|a, b| {
        let time = |event: &Event| event.event_time.as_ref().map(|time| time.0);
        time(a).cmp(&time(b))
    });
    events
        .into_iter()
        .map(|event| {
            (
                event.type_.unwrap_or_default(),
                event.reason.unwrap_or_default(),
                event.note.unwrap_or_default(),
            )
        })
        .collect()
}

/// Waits until the events about the job `name` satisfy `done` (events are written after the
/// status that a test waits for, so they may lag it); those events then. Events are listed
/// again every 200 ms: they are read, not watched, as `kubectl get events` reads them.
pub async fn await_events(
    client: &Client,
    namespace: &str,
    name: &str,
    what: &str,
    done: impl Fn(&[(String, String, String)]) -> bool,
) -> Vec<(String, String, String)> {
    within(&format!("the events of {name}: {what}"), async {
        loop {
            let events = job_events(client, namespace, name).await;
            if done(&events) {
                return events;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
}

/// Waits until the job `name` has events of each of these reasons.
pub async fn await_reasons(client: &Client, namespace: &str, name: &str, reasons: &[&str]) {
    let what = format!("events {}", reasons.join(", "));
    await_events(client, namespace, name, &what, |events| {
        reasons
            .iter()
            .all(|wanted| events.iter().any(|(_, reason, _)| reason == wanted))
    })
    .await;
}
