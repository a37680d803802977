//! Mock-API scenarios of the elector: a fake API server keeps one Lease (with resource versions
//! and conflicts, as Kubernetes does), and each scenario asserts the exact requests sent.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Method, StatusCode};
use jiff::{SignedDuration, Timestamp};
use kube::Client;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio::time::{Instant, advance};
use tower_test::mock;

use super::*;
use crate::fixtures::{Sent, serve, status_body};

const LEASE: &str = "/apis/coordination.k8s.io/v1/namespaces/kubeflow/leases/trainctl-operator";
const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/kubeflow/leases";
const ME: &str = "operator-0_8f1c";

fn start_time() -> Timestamp {
    "2025-01-01T00:00:00Z".parse().expect("a timestamp")
}

/// The time `seconds` after the start, as a lease records it.
fn at(seconds: i64) -> String {
    (start_time() + SignedDuration::from_secs(seconds))
        .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

/// A wall clock that starts at [`start_time`] and follows tokio's (paused) time.
fn clock() -> Clock {
    let started = Instant::now();
    Arc::new(move || {
        start_time() + SignedDuration::try_from(started.elapsed()).expect("a short test")
    })
}

/// The lease as the API server stores it.
pub(crate) fn lease(spec: &Value, resource_version: u32) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "trainctl-operator", "namespace": "kubeflow",
                     "resourceVersion": resource_version.to_string()},
        "spec": spec,
    })
}

/// Another process's record, renewed at `renewed` seconds.
pub(crate) fn held_by(holder: &str, renewed: i64, transitions: i32) -> Value {
    json!({"holderIdentity": holder, "leaseDurationSeconds": 15,
           "acquireTime": at(-100), "renewTime": at(renewed), "leaseTransitions": transitions})
}

/// The lease the fake API server holds (`None`: absent), shared with the test.
pub(crate) type Stored = Arc<Mutex<Option<Value>>>;

/// A fake API server keeping one lease: get, create (conflict if present), replace (conflict
/// unless the resource version matches); `failing` makes every request a 500.
pub(crate) fn fake_api(
    stored: Stored,
    failing: Arc<Mutex<bool>>,
) -> impl FnMut(&Sent) -> (StatusCode, Value) + Send + 'static {
    move |sent: &Sent| {
        if *failing.lock().expect("a lock") {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                status_body(500, "InternalError"),
            );
        }
        let mut stored = stored.lock().expect("a lock");
        let version = |lease: &Value| -> u32 {
            lease["metadata"]["resourceVersion"]
                .as_str()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        match (&sent.method, stored.as_ref()) {
            (&Method::GET, Some(lease)) => (StatusCode::OK, lease.clone()),
            (&Method::GET, None) => (StatusCode::NOT_FOUND, status_body(404, "NotFound")),
            (&Method::POST, Some(_)) => (StatusCode::CONFLICT, status_body(409, "AlreadyExists")),
            (&Method::POST, None) => {
                let mut created = sent.body.clone();
                created["metadata"]["resourceVersion"] = json!("1");
                *stored = Some(created.clone());
                (StatusCode::CREATED, created)
            }
            (&Method::PUT, Some(lease)) if version(lease) == version(&sent.body) => {
                let mut replaced = sent.body.clone();
                replaced["metadata"]["resourceVersion"] = json!((version(lease) + 1).to_string());
                *stored = Some(replaced.clone());
                (StatusCode::OK, replaced)
            }
            _ => (StatusCode::CONFLICT, status_body(409, "Conflict")),
        }
    }
}

/// An elector as `ME` against a fake API server starting with `initial`.
struct Scenario {
    elector: Elector,
    stored: Stored,
    failing: Arc<Mutex<bool>>,
    server: JoinHandle<Vec<Sent>>,
}

impl Scenario {
    fn new(initial: Option<Value>) -> Scenario {
        let (service, handle) = mock::pair();
        let client = Client::new(service, "default");
        let stored = Arc::new(Mutex::new(initial));
        let failing = Arc::new(Mutex::new(false));
        let server = serve(handle, fake_api(Arc::clone(&stored), Arc::clone(&failing)));
        let settings = LeaseSettings::new(
            "kubeflow".to_owned(),
            "trainctl-operator".to_owned(),
            ME.to_owned(),
        );
        Scenario {
            elector: Elector::with_clock(client, settings, clock()),
            stored,
            failing,
            server,
        }
    }

    /// The requests sent: method, path and query, body.
    async fn sent(self) -> Vec<(Method, String, Value)> {
        drop(self.elector);
        let sent = tokio::time::timeout(Duration::from_secs(5), self.server)
            .await
            .expect("the server stops once the client is gone")
            .expect("the server does not panic");
        sent.into_iter()
            .map(|sent| (sent.method, sent.uri, sent.body))
            .collect()
    }
}

fn get() -> (Method, String, Value) {
    (Method::GET, LEASE.to_owned(), Value::Null)
}

fn put(spec: &Value, resource_version: u32) -> (Method, String, Value) {
    (
        Method::PUT,
        format!("{LEASE}?"),
        lease(spec, resource_version),
    )
}

/// Our record: acquired at `acquired`, renewed at `renewed`.
fn ours(acquired: i64, renewed: i64, transitions: i32) -> Value {
    json!({"holderIdentity": ME, "leaseDurationSeconds": 15, "acquireTime": at(acquired),
           "renewTime": at(renewed), "leaseTransitions": transitions})
}

#[tokio::test(start_paused = true)]
async fn a_missing_lease_is_created_with_this_process_as_holder() {
    let mut scenario = Scenario::new(None);
    assert_eq!(
        scenario
            .elector
            .try_acquire_or_renew()
            .await
            .expect("acquires"),
        Attempt::Leader
    );
    assert!(scenario.elector.is_leader());
    let created = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "trainctl-operator", "namespace": "kubeflow"},
        "spec": ours(0, 0, 0),
    });
    assert_eq!(
        scenario.sent().await,
        [get(), (Method::POST, format!("{LEASES}?"), created)]
    );
}

#[tokio::test(start_paused = true)]
async fn a_live_lease_of_another_holder_is_left_alone() {
    let mut scenario = Scenario::new(Some(lease(&held_by("other", -1, 3), 7)));
    assert_eq!(
        scenario
            .elector
            .try_acquire_or_renew()
            .await
            .expect("a try"),
        Attempt::HeldBy("other".to_owned())
    );
    advance(Duration::from_secs(15)).await;
    assert_eq!(
        scenario
            .elector
            .try_acquire_or_renew()
            .await
            .expect("a try"),
        Attempt::HeldBy("other".to_owned()),
        "a lease duration has not passed *beyond* the first sight"
    );
    assert!(!scenario.elector.is_leader());
    assert_eq!(scenario.sent().await, [get(), get()]);
}

#[tokio::test(start_paused = true)]
async fn a_lease_unchanged_for_a_lease_duration_is_taken_over_with_one_more_transition() {
    // The holder's renewTime is recent by its clock; only this process's observation counts.
    let mut scenario = Scenario::new(Some(lease(&held_by("other", 0, 3), 7)));
    assert_eq!(
        scenario
            .elector
            .try_acquire_or_renew()
            .await
            .expect("a try"),
        Attempt::HeldBy("other".to_owned())
    );
    advance(Duration::from_secs(16)).await;
    assert_eq!(
        scenario
            .elector
            .try_acquire_or_renew()
            .await
            .expect("a try"),
        Attempt::Leader
    );
    assert!(scenario.elector.is_leader());
    assert_eq!(
        scenario.sent().await,
        [get(), get(), put(&ours(16, 16, 4), 7)]
    );
}

#[tokio::test(start_paused = true)]
async fn a_holder_that_keeps_renewing_is_never_taken_over() {
    let mut scenario = Scenario::new(Some(lease(&held_by("other", 0, 3), 7)));
    scenario
        .elector
        .try_acquire_or_renew()
        .await
        .expect("a try");
    advance(Duration::from_secs(10)).await;
    *scenario.stored.lock().expect("a lock") = Some(lease(&held_by("other", 10, 3), 8));
    scenario
        .elector
        .try_acquire_or_renew()
        .await
        .expect("a try");
    advance(Duration::from_secs(10)).await;
    assert_eq!(
        scenario
            .elector
            .try_acquire_or_renew()
            .await
            .expect("a try"),
        Attempt::HeldBy("other".to_owned()),
        "20 s since the first sight, but 10 s since the record changed"
    );
    assert_eq!(scenario.sent().await, [get(), get(), get()]);
}

#[tokio::test(start_paused = true)]
async fn a_released_lease_is_taken_at_the_first_try() {
    let released = json!({"leaseDurationSeconds": 1, "acquireTime": at(-5),
                          "renewTime": at(-5), "leaseTransitions": 2});
    let mut scenario = Scenario::new(Some(lease(&released, 4)));
    assert_eq!(
        scenario
            .elector
            .try_acquire_or_renew()
            .await
            .expect("a try"),
        Attempt::Leader
    );
    assert_eq!(scenario.sent().await, [get(), put(&ours(0, 0, 3), 4)]);
}

#[tokio::test(start_paused = true)]
async fn renewing_keeps_the_acquire_time_and_the_transitions() {
    let mut scenario = Scenario::new(None);
    scenario
        .elector
        .try_acquire_or_renew()
        .await
        .expect("acquires");
    advance(Duration::from_secs(2)).await;
    assert_eq!(
        scenario
            .elector
            .try_acquire_or_renew()
            .await
            .expect("renews"),
        Attempt::Leader
    );
    let sent = scenario.sent().await;
    assert_eq!(sent[2..], [get(), put(&ours(0, 2, 0), 1)]);
}

#[tokio::test(start_paused = true)]
async fn a_leader_renews_every_retry_period() {
    let mut scenario = Scenario::new(None);
    scenario
        .elector
        .try_acquire_or_renew()
        .await
        .expect("acquires");
    let held = tokio::time::timeout(Duration::from_secs(7), scenario.elector.hold()).await;
    assert!(held.is_err(), "still the leader after 7 s: {held:?}");
    let sent = scenario.sent().await;
    assert_eq!(
        sent[2..],
        [
            get(),
            put(&ours(0, 2, 0), 1),
            get(),
            put(&ours(0, 4, 0), 2),
            get(),
            put(&ours(0, 6, 0), 3),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_leader_that_cannot_renew_within_the_deadline_steps_down() {
    let mut scenario = Scenario::new(None);
    scenario
        .elector
        .try_acquire_or_renew()
        .await
        .expect("acquires");
    *scenario.failing.lock().expect("a lock") = true;
    let started = Instant::now();
    let lost = scenario.elector.hold().await;
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(10),
        "tries at 2, 4, 6, 8 and 10 s; the next would end past the 12 s deadline"
    );
    match lost {
        LostLease::RenewDeadline {
            lease,
            deadline,
            last_error,
        } => {
            assert_eq!(lease, "kubeflow/trainctl-operator");
            assert_eq!(deadline, Duration::from_secs(10));
            assert!(last_error.contains("InternalError"), "{last_error}");
        }
        other @ LostLease::TakenOver { .. } => panic!("{other:?}"),
    }
    assert_eq!(
        scenario.sent().await[2..],
        [get(), get(), get(), get(), get()]
    );
}

#[tokio::test(start_paused = true)]
async fn a_leader_that_finds_another_holder_steps_down_at_once() {
    let mut scenario = Scenario::new(None);
    scenario
        .elector
        .try_acquire_or_renew()
        .await
        .expect("acquires");
    *scenario.stored.lock().expect("a lock") = Some(lease(&held_by("usurper", 1, 1), 9));
    let lost = scenario.elector.hold().await;
    assert_eq!(
        lost,
        LostLease::TakenOver {
            lease: "kubeflow/trainctl-operator".to_owned(),
            holder: "usurper".to_owned()
        }
    );
    assert!(!scenario.elector.is_leader());
    assert_eq!(scenario.sent().await[2..], [get()]);
}

#[tokio::test(start_paused = true)]
async fn release_clears_the_holder_and_shortens_the_lease() {
    let mut scenario = Scenario::new(None);
    scenario
        .elector
        .try_acquire_or_renew()
        .await
        .expect("acquires");
    advance(Duration::from_secs(3)).await;
    assert!(scenario.elector.release().await.expect("releases"));
    assert!(!scenario.elector.is_leader());
    let released = json!({"leaseDurationSeconds": 1, "acquireTime": at(3),
                          "renewTime": at(3), "leaseTransitions": 0});
    assert_eq!(scenario.sent().await[2..], [get(), put(&released, 1)]);
}

#[tokio::test(start_paused = true)]
async fn a_standby_releases_nothing() {
    let mut scenario = Scenario::new(Some(lease(&held_by("other", 0, 3), 7)));
    scenario
        .elector
        .try_acquire_or_renew()
        .await
        .expect("a try");
    assert!(!scenario.elector.release().await.expect("nothing to do"));
    assert_eq!(scenario.sent().await, [get()]);
}

#[test]
fn an_identity_is_the_host_and_a_random_suffix() {
    let first = identity();
    let second = identity();
    assert_ne!(first, second);
    let (host, suffix) = first.rsplit_once('_').expect("host_suffix");
    assert!(!host.is_empty());
    assert!(uuid::Uuid::parse_str(suffix).is_ok(), "{first}");
}
