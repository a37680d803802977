//! The whole process against a mock API server: start, readiness, leadership, stop.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tower_test::mock;
use trainctl_api::JobKind;
use trainctl_engine::BuildOptions;

use super::*;
use crate::fixtures::Sent;
use crate::runtime::leader::LeaseSettings;
use crate::runtime::leader::tests::{Stored, fake_api, held_by, lease};
use crate::runtime::rate_limit::RateLimits;
use crate::runtime::settings::BindAddress;

const LEASES: &str = "/apis/coordination.k8s.io/";

/// One TFJob controller in namespace `ml`, every endpoint on one free loopback port.
fn settings(leader_election: bool) -> Settings {
    let loopback = BindAddress::Listen("127.0.0.1:0".parse().expect("an address"));
    Settings {
        kinds: vec![JobKind::TFJob],
        kinds_where_installed: vec![],
        namespaces: vec!["ml".to_owned()],
        build: BuildOptions::default(),
        controller_threads: 2,
        api_limits: RateLimits::default(),
        leader_election: leader_election.then(|| LeaseSettings {
            // Quick tries, and deadlines generous enough for a loaded machine.
            lease_duration: Duration::from_secs(10),
            renew_deadline: Duration::from_secs(5),
            retry_period: Duration::from_millis(100),
            ..LeaseSettings::new(
                "kubeflow".to_owned(),
                "trainctl-operator".to_owned(),
                "operator-0_8f1c".to_owned(),
            )
        }),
        metrics_address: loopback,
        health_address: loopback,
    }
}

/// What the mock API server holds besides the lease.
#[derive(Default)]
struct World {
    /// The TFJobs in `ml`.
    jobs: Vec<Value>,
    /// Keep creations of pods and services unanswered until `release` is notified (a
    /// reconcile in flight).
    hold_creations: bool,
    /// Never answer a list (of jobs, pods or services): caches that have not had their first
    /// list.
    hold_lists: bool,
    /// What discovery of `kubeflow.org/v1` lists (`None`: the group version is not served).
    kubeflow_resources: Option<&'static [&'static str]>,
}

/// A mock API server: the lease as [`fake_api`] keeps it, the world's jobs, empty lists for
/// everything else, echoes of applies and creations, and watches that stay open without
/// events. `held` hears of each held creation. Returns what was sent.
fn cluster(
    mut handle: mock::Handle<Request<Body>, Response<Body>>,
    world: World,
    stored: Stored,
    failing: Arc<Mutex<bool>>,
    held: tokio::sync::mpsc::UnboundedSender<()>,
    release: Arc<tokio::sync::Notify>,
) -> JoinHandle<Vec<Sent>> {
    tokio::spawn(async move {
        let mut lease = fake_api(stored, failing);
        let mut open_watches = Vec::new();
        let mut held_creations = Vec::new();
        let mut sent = Vec::new();
        let answer =
            |respond: mock::SendResponse<Response<Body>>, status: StatusCode, reply: &Value| {
                respond.send_response(
                    Response::builder()
                        .status(status)
                        .body(Body::from(serde_json::to_vec(reply).expect("JSON")))
                        .expect("a response"),
                );
            };
        let list = |items: &[Value]| {
            json!({"apiVersion": "v1", "kind": "List",
                   "metadata": {"resourceVersion": "1"}, "items": items})
        };
        loop {
            let next = tokio::select! {
                next = handle.next_request() => next,
                () = release.notified() => {
                    for (respond, created) in held_creations.drain(..) {
                        answer(respond, StatusCode::CREATED, &created);
                    }
                    continue;
                }
            };
            let Some((request, respond)) = next else {
                break;
            };
            let (parts, body) = request.into_parts();
            let bytes = body.collect_bytes().await.expect("a request body");
            let request = Sent {
                method: parts.method,
                uri: parts.uri.to_string(),
                content_type: None,
                body: if bytes.is_empty() {
                    Value::Null
                } else {
                    serde_json::from_slice(&bytes).expect("a JSON body")
                },
            };
            let path = request.path().to_owned();
            let (status, reply) = if request.uri.contains("watch=true") {
                sent.push(request);
                open_watches.push(respond);
                continue;
            } else if path.starts_with(LEASES) {
                lease(&request)
            } else if path == "/apis/kubeflow.org/v1" {
                discovery(world.kubeflow_resources)
            } else if world.hold_lists && request.method == Method::GET {
                sent.push(request);
                open_watches.push(respond);
                continue;
            } else if request.method == Method::GET && path.ends_with("/tfjobs") {
                (StatusCode::OK, list(&world.jobs))
            } else if world.hold_creations
                && request.method == Method::POST
                && (path.ends_with("/pods") || path.ends_with("/services"))
            {
                held_creations.push((respond, request.body.clone()));
                sent.push(request);
                let _ = held.send(());
                continue;
            } else if request.method == Method::GET {
                (StatusCode::OK, list(&[]))
            } else if request.method == Method::PATCH && path.ends_with("/status") {
                (StatusCode::OK, world.jobs[0].clone())
            } else if matches!(request.method, Method::PATCH | Method::POST) {
                (StatusCode::OK, request.body.clone())
            } else {
                (
                    StatusCode::NOT_FOUND,
                    crate::fixtures::status_body(404, "NotFound"),
                )
            };
            sent.push(request);
            answer(respond, status, &reply);
        }
        drop(open_watches);
        sent
    })
}

/// The answer to discovery of `kubeflow.org/v1`: these resources, or a 404 as kube-apiserver
/// gives for a group version it does not serve (plain text, not a Status).
fn discovery(resources: Option<&[&str]>) -> (StatusCode, Value) {
    let Some(resources) = resources else {
        return (StatusCode::NOT_FOUND, json!("404 page not found"));
    };
    let resources: Vec<Value> = resources
        .iter()
        .map(|name| {
            json!({"name": name, "singularName": "", "namespaced": true, "kind": "Job",
                   "verbs": ["get", "list", "watch"]})
        })
        .collect();
    let list = json!({"kind": "APIResourceList", "apiVersion": "v1",
                      "groupVersion": "kubeflow.org/v1", "resources": resources});
    (StatusCode::OK, list)
}

/// The operator running against [`cluster`].
struct Running {
    stop: tokio::sync::mpsc::UnboundedSender<()>,
    observability: Observability,
    address: SocketAddr,
    operator: JoinHandle<Result<(), RunError>>,
    server: JoinHandle<Vec<Sent>>,
    stored: Stored,
    failing: Arc<Mutex<bool>>,
    held: tokio::sync::mpsc::UnboundedReceiver<()>,
    release: Arc<tokio::sync::Notify>,
}

async fn start(settings: Settings, initial_lease: Option<Value>, world: World) -> Running {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(service, "default");
    let stored = Arc::new(Mutex::new(initial_lease));
    let failing = Arc::new(Mutex::new(false));
    let (held_sender, held) = tokio::sync::mpsc::unbounded_channel();
    let release = Arc::new(tokio::sync::Notify::new());
    let server = cluster(
        handle,
        world,
        Arc::clone(&stored),
        Arc::clone(&failing),
        held_sender,
        Arc::clone(&release),
    );
    let (stop, requests) = StopRequests::channel();
    let observability = Observability::default();
    let (bound, addresses) = oneshot::channel();
    let operator = tokio::spawn(run(
        settings,
        client,
        requests,
        observability.clone(),
        move |addresses: &[(&'static str, SocketAddr)]| {
            let _ = bound.send(addresses.to_vec());
        },
    ));
    let addresses = tokio::time::timeout(Duration::from_secs(5), addresses)
        .await
        .expect("binds in time")
        .expect("binds");
    assert_eq!(
        addresses.len(),
        1,
        "one listener for one address: {addresses:?}"
    );
    assert_eq!(addresses[0].0, "/metrics, /healthz and /readyz");
    Running {
        stop,
        observability,
        address: addresses[0].1,
        operator,
        server,
        stored,
        failing,
        held,
        release,
    }
}

/// The TFJob `ml/mnist` as the API server lists it.
fn stored_job() -> Value {
    let mut job =
        serde_json::to_value(crate::fixtures::object(crate::fixtures::TF_JOB)).expect("serializes");
    job["metadata"]["resourceVersion"] = json!("5");
    job
}

impl Running {
    async fn reach(&self, phase: Phase) {
        let mut phases = self.observability.health.subscribe();
        tokio::time::timeout(
            Duration::from_secs(10),
            phases.wait_for(|now| *now == phase),
        )
        .await
        .unwrap_or_else(|_| panic!("reaches {phase:?}"))
        .expect("the health state lives");
    }

    /// `GET path`: the status and body.
    async fn get(&self, path: &str) -> (u16, String) {
        let (status, _, body) =
            crate::runtime::http::tests::get(format!("http://{}{path}", self.address)).await;
        (status, body)
    }

    /// Waits for the operator to end; its outcome and the requests the API server saw.
    async fn end(self) -> (Result<(), RunError>, Vec<Sent>) {
        let outcome = tokio::time::timeout(Duration::from_secs(10), self.operator)
            .await
            .expect("the operator stops in time")
            .expect("the operator does not panic");
        let sent = tokio::time::timeout(Duration::from_secs(5), self.server)
            .await
            .expect("the server stops once the client is gone")
            .expect("the server does not panic");
        (outcome, sent)
    }
}

fn lease_requests(sent: &[Sent]) -> Vec<(Method, Value)> {
    sent.iter()
        .filter(|sent| sent.path().starts_with(LEASES))
        .map(|sent| {
            (
                sent.method.clone(),
                sent.body["spec"]["holderIdentity"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_leader_syncs_serves_and_releases_the_lease_when_stopped() {
    let running = start(settings(true), None, World::default()).await;
    running.reach(Phase::Running).await;
    assert_eq!(running.get("/readyz").await, (200, "ok\n".to_owned()));
    assert_eq!(running.get("/healthz").await, (200, "ok\n".to_owned()));
    let metrics = running.get("/metrics").await.1;
    assert!(
        metrics.lines().any(|line| line == "trainctl_leader 1"),
        "{metrics}"
    );
    assert!(
        metrics
            .lines()
            .any(|line| line == "trainctl_queue_depth{kind=\"TFJob\"} 0"),
        "{metrics}"
    );
    running.stop.send(()).expect("the operator listens");
    let stored = Arc::clone(&running.stored);
    let (outcome, sent) = running.end().await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let leases = lease_requests(&sent);
    let me = json!("operator-0_8f1c");
    assert_eq!(
        leases[..2],
        [(Method::GET, Value::Null), (Method::POST, me)]
    );
    assert_eq!(
        leases[leases.len() - 2..],
        [(Method::GET, Value::Null), (Method::PUT, Value::Null)],
        "released: the holder is cleared"
    );
    let released = stored.lock().expect("a lock").clone().expect("the lease");
    assert_eq!(released["spec"]["leaseDurationSeconds"], 1);
    let mut watched: Vec<&str> = sent
        .iter()
        .filter(|sent| !sent.path().starts_with(LEASES))
        .map(Sent::path)
        .collect();
    watched.sort_unstable();
    watched.dedup();
    assert_eq!(
        watched,
        [
            "/api/v1/namespaces/ml/pods",
            "/api/v1/namespaces/ml/services",
            "/apis/kubeflow.org/v1/namespaces/ml/tfjobs",
        ]
    );
}

#[tokio::test]
async fn a_standby_is_ready_runs_no_controller_and_leaves_the_lease_alone() {
    let running = start(
        settings(true),
        Some(lease(&held_by("other", 0, 3), 7)),
        World::default(),
    )
    .await;
    running.reach(Phase::Standby).await;
    assert_eq!(running.get("/readyz").await, (200, "ok\n".to_owned()));
    let metrics = running.get("/metrics").await.1;
    assert!(
        metrics.lines().any(|line| line == "trainctl_leader 0"),
        "{metrics}"
    );
    running.stop.send(()).expect("the operator listens");
    let (outcome, sent) = running.end().await;
    assert!(outcome.is_ok(), "{outcome:?}");
    assert!(
        sent.iter()
            .all(|sent| sent.method == Method::GET && sent.path().starts_with(LEASES)),
        "only reads of the lease: {sent:?}"
    );
}

#[tokio::test]
async fn a_leader_that_cannot_renew_stops_with_an_error() {
    let mut settings = settings(true);
    if let Some(lease) = settings.leader_election.as_mut() {
        lease.renew_deadline = Duration::from_millis(400);
    }
    let running = start(settings, None, World::default()).await;
    running.reach(Phase::Running).await;
    *running.failing.lock().expect("a lock") = true;
    let (outcome, _) = running.end().await;
    let error = outcome.expect_err("the lease is lost");
    assert!(
        error.to_string().starts_with(
            "lost leadership (could not renew the lease kubeflow/trainctl-operator within 400ms: "
        ),
        "{error}"
    );
}

impl Running {
    /// Waits until a reconcile is in flight (a creation held).
    async fn reconcile_in_flight(&mut self) {
        tokio::time::timeout(Duration::from_secs(10), self.held.recv())
            .await
            .expect("a reconcile starts")
            .expect("the server runs");
    }
}

#[tokio::test]
async fn a_stop_lets_the_reconcile_in_flight_finish_and_counts_its_transition() {
    let world = World {
        jobs: vec![stored_job()],
        hold_creations: true,
        ..World::default()
    };
    let mut running = start(settings(false), None, world).await;
    running.reconcile_in_flight().await;
    let metrics = running.get("/metrics").await.1;
    assert!(
        metrics.lines().any(|line| line == "trainctl_leader 1"),
        "{metrics}"
    );
    running.stop.send(()).expect("the operator listens");
    running.reach(Phase::Stopping).await;
    assert_eq!(
        running.get("/readyz").await,
        (503, "shutting down\n".to_owned())
    );
    running.release.notify_one();
    let metrics = Arc::clone(&running.observability.metrics);
    let (outcome, sent) = running.end().await;
    assert!(outcome.is_ok(), "{outcome:?}");
    assert!(
        sent.iter().any(|sent| sent.method == Method::PATCH
            && sent.path() == "/apis/kubeflow.org/v1/namespaces/ml/tfjobs/mnist/status"),
        "the reconcile ran to its status: {sent:?}"
    );
    let text = metrics.encode();
    for line in [
        "training_operator_jobs_created_total{job_namespace=\"ml\",framework=\"tensorflow\"} 1",
        "trainctl_reconcile_duration_seconds_count{kind=\"TFJob\"} 1",
        "trainctl_queue_depth{kind=\"TFJob\"} 0",
        "trainctl_leader 0",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "{line} missing from:\n{text}"
        );
    }
    assert!(lease_requests(&sent).is_empty());
}

/// Stopped before its caches had their first list (a rollout right after a start), the
/// operator stops at once: no reconcile can be in flight. kube's runner waits for the job cache
/// before running any, and would wait for ever once the stop has ended its watch; so would the
/// wait for the children's caches.
#[tokio::test]
async fn a_stop_before_the_first_lists_stops_at_once() {
    let world = World {
        hold_lists: true,
        ..World::default()
    };
    let running = start(settings(false), None, world).await;
    running.reach(Phase::Syncing).await;
    running.stop.send(()).expect("the operator listens");
    let (outcome, _) = running.end().await;
    assert!(outcome.is_ok(), "{outcome:?}");
}

#[tokio::test]
async fn a_second_stop_does_not_wait_for_the_reconcile_in_flight() {
    let world = World {
        jobs: vec![stored_job()],
        hold_creations: true,
        ..World::default()
    };
    let mut running = start(settings(false), None, world).await;
    running.reconcile_in_flight().await;
    running.stop.send(()).expect("the operator listens");
    running.reach(Phase::Stopping).await;
    running.stop.send(()).expect("the operator listens");
    let (outcome, sent) = running.end().await;
    assert!(matches!(outcome, Err(RunError::Forced)), "{outcome:?}");
    assert!(
        !sent.iter().any(|sent| sent.method == Method::PATCH),
        "the reconcile did not go on: {sent:?}"
    );
}

#[tokio::test]
async fn a_busy_address_fails_the_start_with_its_address() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
    let address = taken.local_addr().expect("bound");
    let mut settings = settings(false);
    settings.health_address = BindAddress::Listen(address);
    let (service, _handle) = mock::pair::<Request<Body>, Response<Body>>();
    let outcome = run(
        settings,
        kube::Client::new(service, "default"),
        StopRequests::channel().1,
        Observability::default(),
        |_| {},
    )
    .await;
    let error = outcome.expect_err("the port is taken");
    assert_eq!(
        error.to_string().split(" (os error").next(),
        Some(
            format!("cannot listen on {address} for /healthz and /readyz: Address already in use")
                .as_str()
        )
    );
}

#[tokio::test]
async fn a_kind_watched_where_installed_is_watched_only_where_its_crd_is() {
    for (served, watched) in [
        (Some(&["tfjobs", "mxjobs"][..]), true),
        (Some(&["tfjobs"][..]), false),
        (None, false),
    ] {
        let settings = Settings {
            kinds_where_installed: vec![JobKind::MXJob],
            ..settings(false)
        };
        let world = World {
            kubeflow_resources: served,
            ..World::default()
        };
        let running = start(settings, None, world).await;
        running.reach(Phase::Running).await;
        assert_eq!(
            running.get("/readyz").await,
            (200, "ok\n".to_owned()),
            "{served:?}"
        );
        let metrics = running.get("/metrics").await.1;
        assert_eq!(
            metrics
                .lines()
                .any(|line| line == "trainctl_queue_depth{kind=\"MXJob\"} 0"),
            watched,
            "{served:?}: {metrics}"
        );
        running.stop.send(()).expect("the operator listens");
        let (outcome, sent) = running.end().await;
        assert!(outcome.is_ok(), "{outcome:?}");
        assert_eq!(
            sent.iter()
                .any(|sent| sent.path() == "/apis/kubeflow.org/v1/namespaces/ml/mxjobs"),
            watched,
            "{served:?}"
        );
        assert!(
            sent.iter()
                .any(|sent| sent.path() == "/apis/kubeflow.org/v1/namespaces/ml/tfjobs"),
            "{served:?}: the other kinds are watched all the same"
        );
    }
}
