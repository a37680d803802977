//! The mock API server, spoken to by a real `kube::Client` (`Config::new(url)`): the shapes of
//! kube's requests and of the answers it decodes.

use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PartialObjectMeta,
    Patch, PatchParams, PostParams,
};
use kube::runtime::watcher::{self, Event, watcher};
use kube::{Client, Config, ResourceExt as _};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use trainctl_mock_apiserver::{Fault, Method, MockApiServer, Settings, StatusCode, Verb};

const WAIT: Duration = Duration::from_secs(5);

async fn start(settings: Settings) -> (MockApiServer, Client) {
    let server = MockApiServer::start(settings).await.expect("a free port");
    let url = server.url().parse().expect("a URL");
    let client = Client::try_from(Config::new(url)).expect("a client");
    (server, client)
}

fn pod(name: &str, labels: &Value) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }))
    .expect("a pod")
}

fn phase(pod: &Pod) -> Option<&str> {
    pod.status.as_ref()?.phase.as_deref()
}

fn status_of(error: kube::Error) -> kube::core::Status {
    match error {
        kube::Error::Api(status) => *status,
        other => panic!("expected a Status from the server, got {other:?}"),
    }
}

#[tokio::test]
async fn objects_round_trip_through_a_kube_client() {
    let (server, client) = start(Settings::default()).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "ml");
    let created = pods
        .create(&PostParams::default(), &pod("a", &json!({"app": "x"})))
        .await
        .expect("created");
    assert_eq!(created.resource_version().as_deref(), Some("2"));
    assert!(created.uid().is_some_and(|uid| uid.len() == 36));
    assert!(created.metadata.creation_timestamp.is_some());
    assert_eq!(created.namespace().as_deref(), Some("ml"));
    pods.create(&PostParams::default(), &pod("b", &json!({"app": "y"})))
        .await
        .expect("created");
    Api::<Pod>::namespaced(client.clone(), "other")
        .create(&PostParams::default(), &pod("c", &json!({"app": "x"})))
        .await
        .expect("created");

    let again = pods
        .create(&PostParams::default(), &pod("a", &json!({})))
        .await
        .expect_err("a exists");
    assert!(status_of(again).is_already_exists());

    let got = pods.get("a").await.expect("found");
    assert_eq!(got.metadata, created.metadata);
    let selected = pods
        .list(&ListParams::default().labels("app=x"))
        .await
        .expect("listed");
    assert_eq!(names(&selected.items), ["a"]);
    assert_eq!(selected.metadata.resource_version.as_deref(), Some("4"));

    let everywhere: Api<Pod> = Api::all(client);
    let first = everywhere
        .list(&ListParams::default().limit(2))
        .await
        .expect("listed");
    assert_eq!(names(&first.items), ["a", "b"]);
    let token = first.metadata.continue_.clone().expect("a next page");
    let second = everywhere
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await
        .expect("listed");
    assert_eq!(names(&second.items), ["c"]);
    assert_eq!(second.metadata.continue_, None);

    let deleted = pods
        .delete("a", &DeleteParams::default())
        .await
        .expect("deleted");
    assert_eq!(
        deleted
            .left()
            .expect("the deleted pod")
            .resource_version()
            .as_deref(),
        Some("5")
    );
    assert!(status_of(pods.get("a").await.expect_err("gone")).is_not_found());
    assert_eq!(server.calls(Verb::Get, "/api/v1/namespaces/ml/pods/a"), 2);
    assert_eq!(server.total_calls(Verb::Create), 4);
}

fn names(objects: &[impl kube::Resource]) -> Vec<String> {
    objects.iter().map(kube::ResourceExt::name_any).collect()
}

#[tokio::test]
async fn server_side_apply_creates_then_merges_and_keeps_the_status_apart() {
    let (server, client) = start(Settings::default()).await;
    let pods: Api<Pod> = Api::namespaced(client, "ml");
    let apply = PatchParams::apply("trainctl").force();
    let mut applied = serde_json::to_value(pod("a", &json!({"x": "1"}))).expect("JSON");
    applied["status"] = json!({"phase": "Running"});
    let created = pods
        .patch("a", &apply, &Patch::Apply(&applied))
        .await
        .expect("created by apply");
    assert_eq!(
        created.status, None,
        "a new object's status is the server's"
    );

    let kubelet = PatchParams::apply("kubelet").force();
    let status = json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Running"}});
    let running = pods
        .patch_status("a", &kubelet, &Patch::Apply(&status))
        .await
        .expect("status applied");
    assert_eq!(phase(&running), Some("Running"));
    assert_eq!(running.labels()["x"], "1");

    let relabelled = pods
        .patch(
            "a",
            &apply,
            &Patch::Apply(&serde_json::to_value(pod("a", &json!({"y": "2"}))).expect("JSON")),
        )
        .await
        .expect("merged");
    assert_eq!(relabelled.labels().len(), 2, "{:?}", relabelled.labels());
    assert_eq!(
        phase(&relabelled),
        Some("Running"),
        "applying the object leaves the status alone"
    );
    let version = relabelled.resource_version();

    let unchanged = pods
        .patch(
            "a",
            &apply,
            &Patch::Apply(&serde_json::to_value(pod("a", &json!({"y": "2"}))).expect("JSON")),
        )
        .await
        .expect("a no-op");
    assert_eq!(unchanged.resource_version(), version, "nothing changed");

    let annotated = pods
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {"note": "kept"}, "labels": {"x": null}}}),
            ),
        )
        .await
        .expect("merge-patched");
    assert_eq!(annotated.annotations()["note"], "kept");
    assert!(!annotated.labels().contains_key("x"));
    assert_eq!(server.calls(Verb::Patch, "/api/v1/namespaces/ml/pods/a"), 4);
    assert_eq!(
        server.calls(Verb::Patch, "/api/v1/namespaces/ml/pods/a/status"),
        1
    );
}

#[tokio::test]
async fn replacing_with_a_stale_version_conflicts() {
    let (_server, client) = start(Settings::default()).await;
    let leases: Api<Lease> = Api::namespaced(client, "ml");
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": "trainctl"}, "spec": {"holderIdentity": "one"},
    }))
    .expect("a lease");
    let created = leases
        .create(&PostParams::default(), &lease)
        .await
        .expect("created");
    let mut taken = created.clone();
    taken.spec.as_mut().expect("a spec").holder_identity = Some("two".to_owned());
    let replaced = leases
        .replace("trainctl", &PostParams::default(), &taken)
        .await
        .expect("replaced at the current version");
    assert_eq!(
        replaced
            .spec
            .and_then(|spec| spec.holder_identity)
            .as_deref(),
        Some("two")
    );
    let stale = leases
        .replace("trainctl", &PostParams::default(), &created)
        .await
        .expect_err("the version moved on");
    let status = status_of(stale);
    assert!(status.is_conflict(), "{status:?}");
    assert_eq!(status.code, 409);
}

/// Runs a watcher of the pods labelled `app=x` in `ml`, sending what it yields.
fn watch_pods(client: Client) -> mpsc::UnboundedReceiver<String> {
    let (sender, receiver) = mpsc::unbounded_channel();
    let pods: Api<Pod> = Api::namespaced(client, "ml");
    let stream = watcher(pods, watcher::Config::default().labels("app=x"));
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            let line = match event {
                Ok(Event::Init) => "Init".to_owned(),
                Ok(Event::InitApply(pod)) => format!("InitApply {}", pod.name_any()),
                Ok(Event::InitDone) => "InitDone".to_owned(),
                Ok(Event::Apply(pod)) => format!("Apply {}", pod.name_any()),
                Ok(Event::Delete(pod)) => format!("Delete {}", pod.name_any()),
                Err(error) => format!("Error {error}"),
            };
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    receiver
}

async fn next(events: &mut mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(WAIT, events.recv())
        .await
        .expect("an event in time")
        .expect("the watcher runs")
}

async fn label(pods: &Api<Pod>, name: &str, labels: Value) {
    pods.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": labels}})),
    )
    .await
    .expect("labelled");
}

#[tokio::test]
async fn a_watcher_resumes_from_its_version_after_the_streams_drop() {
    let (server, client) = start(Settings::default()).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "ml");
    pods.create(&PostParams::default(), &pod("a", &json!({"app": "x"})))
        .await
        .expect("created");
    pods.create(&PostParams::default(), &pod("other", &json!({"app": "y"})))
        .await
        .expect("created");
    let mut events = watch_pods(client);
    for expected in ["Init", "InitApply a", "InitDone"] {
        assert_eq!(next(&mut events).await, expected);
    }
    pods.create(&PostParams::default(), &pod("b", &json!({"app": "x"})))
        .await
        .expect("created");
    assert_eq!(next(&mut events).await, "Apply b");

    server.drop_watches();
    label(&pods, "a", json!({"changed": "after-the-drop"})).await;
    assert_eq!(next(&mut events).await, "Apply a");
    pods.delete("b", &DeleteParams::default())
        .await
        .expect("deleted");
    assert_eq!(next(&mut events).await, "Delete b");
    let path = "/api/v1/namespaces/ml/pods";
    assert_eq!(
        server.calls(Verb::List, path),
        1,
        "resumed, not listed again"
    );
    assert_eq!(server.calls(Verb::Watch, path), 2);
}

#[tokio::test]
async fn a_watcher_lists_again_when_its_version_expired() {
    let (server, client) = start(Settings::default()).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "ml");
    pods.create(&PostParams::default(), &pod("a", &json!({"app": "x"})))
        .await
        .expect("created");
    let mut events = watch_pods(client);
    for expected in ["Init", "InitApply a", "InitDone"] {
        assert_eq!(next(&mut events).await, expected);
    }
    // A change the watch does not see moves the version on; then the history is compacted.
    label(&pods, "a", json!({"app": "z"})).await;
    assert_eq!(next(&mut events).await, "Delete a");
    pods.create(&PostParams::default(), &pod("unseen", &json!({"app": "y"})))
        .await
        .expect("created");
    server.forget_history();
    server.drop_watches();

    let expired = next(&mut events).await;
    assert!(
        expired.starts_with("Error ")
            && expired.ends_with("too old resource version: 3 (4): Expired"),
        "{expired}"
    );
    let mut relisted = Vec::new();
    while relisted.last().is_none_or(|last| last != "InitDone") {
        relisted.push(next(&mut events).await);
    }
    assert_eq!(
        relisted,
        ["Init", "InitDone"],
        "nothing is labelled app=x now"
    );
    pods.create(&PostParams::default(), &pod("c", &json!({"app": "x"})))
        .await
        .expect("created");
    assert_eq!(next(&mut events).await, "Apply c");
    assert_eq!(server.calls(Verb::List, "/api/v1/namespaces/ml/pods"), 2);
}

#[tokio::test]
async fn metadata_lists_and_watches_carry_partial_objects() {
    let (_server, client) = start(Settings::default()).await;
    let pods: Api<Pod> = Api::namespaced(client, "ml");
    pods.create(&PostParams::default(), &pod("a", &json!({"app": "x"})))
        .await
        .expect("created");
    let listed = pods
        .list_metadata(&ListParams::default())
        .await
        .expect("listed");
    let only = &listed.items[0];
    assert_eq!(only.name_any(), "a");
    assert_eq!(
        only.types.as_ref().map(|types| types.kind.as_str()),
        Some("PartialObjectMetadata")
    );
    let metadata: Api<PartialObjectMeta<Pod>> = Api::namespaced(pods.clone().into_client(), "ml");
    let stream = watcher(metadata, watcher::Config::default());
    let mut stream = std::pin::pin!(stream);
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let event = tokio::time::timeout(WAIT, stream.next())
            .await
            .expect("in time")
            .expect("a stream")
            .expect("no error");
        seen.push(match event {
            Event::InitApply(meta) | Event::Apply(meta) => meta.name_any(),
            _ => continue,
        });
        if seen.len() == 1 {
            pods.create(&PostParams::default(), &pod("b", &json!({})))
                .await
                .expect("created");
        }
        if seen.len() == 2 {
            label(&pods, "a", json!({"more": "1"})).await;
        }
    }
    assert_eq!(seen, ["a", "b", "a"]);
}

#[tokio::test]
async fn injected_faults_meet_the_next_calls_only() {
    let (server, client) = start(Settings::default()).await;
    let pods: Api<Pod> = Api::namespaced(client, "ml");
    let path = "/api/v1/namespaces/ml/pods/a";
    server.inject(
        Method::PATCH,
        path,
        1,
        Fault::Fail(StatusCode::INTERNAL_SERVER_ERROR),
    );
    server.inject(Method::PATCH, path, 1, Fault::Fail(StatusCode::CONFLICT));
    let apply = PatchParams::apply("trainctl").force();
    let body = serde_json::to_value(pod("a", &json!({}))).expect("JSON");
    let failed = status_of(
        pods.patch("a", &apply, &Patch::Apply(&body))
            .await
            .expect_err("injected"),
    );
    assert_eq!(
        (failed.code, failed.reason.as_str()),
        (500, "InternalError")
    );
    let conflict = status_of(
        pods.patch("a", &apply, &Patch::Apply(&body))
            .await
            .expect_err("injected"),
    );
    assert!(conflict.is_conflict());
    assert!(server.get(path).is_none(), "failed calls change nothing");
    pods.patch("a", &apply, &Patch::Apply(&body))
        .await
        .expect("the third call is served");
    assert_eq!(server.calls(Verb::Patch, path), 3);
}

#[tokio::test]
async fn every_call_waits_the_latency() {
    let latency = Duration::from_millis(40);
    let (_server, client) = start(Settings {
        latency,
        ..Settings::default()
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(client, "ml");
    let started = Instant::now();
    pods.list(&ListParams::default()).await.expect("listed");
    assert!(started.elapsed() >= latency, "{:?}", started.elapsed());
}

#[tokio::test]
async fn deleting_an_owner_deletes_what_it_owns() {
    let (server, client) = start(Settings::default()).await;
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kubeflow.org", "v1", "TFJob"),
        "tfjobs",
    );
    let jobs: Api<DynamicObject> = Api::namespaced_with(client.clone(), "ml", &resource);
    let job: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "mnist"}, "spec": {},
    }))
    .expect("a job");
    let job = jobs
        .create(&PostParams::default(), &job)
        .await
        .expect("created");
    let mut owned = pod("mnist-worker-0", &json!({}));
    owned.metadata.owner_references = Some(vec![
        serde_json::from_value(json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist",
            "uid": job.uid().expect("a uid"), "controller": true,
        }))
        .expect("an owner reference"),
    ]);
    let pods: Api<Pod> = Api::namespaced(client, "ml");
    pods.create(&PostParams::default(), &owned)
        .await
        .expect("created");
    pods.create(&PostParams::default(), &pod("unowned", &json!({})))
        .await
        .expect("created");
    jobs.delete("mnist", &DeleteParams::background())
        .await
        .expect("deleted");
    assert_eq!(
        names(
            &pods
                .list(&ListParams::default())
                .await
                .expect("listed")
                .items
        ),
        ["unowned"]
    );
    assert!(
        server
            .get("/apis/kubeflow.org/v1/namespaces/ml/tfjobs/mnist")
            .is_none()
    );
}
