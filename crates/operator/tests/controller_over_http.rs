//! The whole operator (`controller::run`: every kind's controller, its watches, its
//! reconciles) against the mock API server over real HTTP, through a real `kube::Client`: a
//! job's life, and API faults (`409`, `500`, a call that never answers, watches that drop)
//! after which the state converges without duplicate pods.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Client, Config};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use trainctl_api::JobKind;
use trainctl_engine::BuildOptions;
use trainctl_mock_apiserver::{Fault, Method, MockApiServer, Settings, StatusCode, Verb};
use trainctl_operator::connect;
use trainctl_operator::controller::{self, Scope};
use trainctl_operator::health::Health;
use trainctl_operator::rate_limit::RateLimits;
use trainctl_operator::{Context, job};

/// Long enough for any state in these tests to be reached on a loaded machine.
const WAIT: Duration = Duration::from_secs(20);
const SLOTS: [&str; 3] = ["mnist-chief-0", "mnist-worker-0", "mnist-worker-1"];
const TF_JOBS: &str = "/apis/kubeflow.org/v1/namespaces/ml/tfjobs";
const JOB: &str = "/apis/kubeflow.org/v1/namespaces/ml/tfjobs/mnist";
const PODS: &str = "/api/v1/namespaces/ml/pods";
const SERVICES: &str = "/api/v1/namespaces/ml/services";
/// Every kind's controller watches its jobs, their pods and their services.
const WATCHES: usize = 3 * JobKind::ALL.len();

/// The mock API server with the operator running against it, scoped to namespace `ml`.
struct Cluster {
    server: MockApiServer,
    client: Client,
    operator: JoinHandle<()>,
    /// Kept: the controllers stop when it is dropped.
    _running: watch::Sender<bool>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.operator.abort();
    }
}

/// Starts the server and the operator, whose client gives up on a call after `timeout`, and
/// waits until every controller watches.
async fn start(timeout: Duration) -> Cluster {
    start_with(Settings::default(), RateLimits::default(), timeout).await
}

/// [`start`] with the server's `settings` and the client's `limits`.
async fn start_with(settings: Settings, limits: RateLimits, timeout: Duration) -> Cluster {
    let server = MockApiServer::start(settings).await.expect("a free port");
    run_against(server, limits, timeout).await
}

/// Starts the operator against `server`, as [`start_with`] does.
async fn run_against(server: MockApiServer, limits: RateLimits, timeout: Duration) -> Cluster {
    let config = Config::new(server.url().parse().expect("a URL"));
    let client = connect::client(config, limits, timeout).expect("a client");
    let ctx = Arc::new(Context::new(client.clone(), BuildOptions::default()));
    let scope = Scope {
        kinds: JobKind::ALL.to_vec(),
        namespaces: vec!["ml".to_owned()],
        threads: 16,
    };
    let (running, stopping) = watch::channel(false);
    let operator = tokio::spawn(async move {
        controller::run(ctx, &scope, stopping, Arc::new(Health::default())).await;
    });
    let cluster = Cluster {
        server,
        client,
        operator,
        _running: running,
    };
    cluster
        .until("every controller watches", |server| {
            (server.open_watches() == WATCHES).then_some(())
        })
        .await;
    cluster
}

impl Cluster {
    /// Waits until `check` finds what it looks for; fails the test naming `what` otherwise.
    async fn until<T>(&self, what: &str, check: impl FnMut(&MockApiServer) -> Option<T>) -> T {
        self.server
            .wait_until(WAIT, check)
            .await
            .unwrap_or_else(|| panic!("timed out waiting until {what}"))
    }

    /// Creates the TFJob `ml/mnist`: a chief and two workers.
    async fn create_job(&self) {
        self.create_job_of(2).await;
    }

    /// Creates the TFJob `ml/mnist`: a chief and `workers` workers.
    async fn create_job_of(&self, workers: u32) {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "mnist", "namespace": "ml"},
            "spec": {"tfReplicaSpecs": {
                "Chief": {"template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}},
                "Worker": {"replicas": workers, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}},
            }},
        }))
        .expect("a job");
        Api::<DynamicObject>::namespaced_with(
            self.client.clone(),
            "ml",
            &job::api_resource(JobKind::TFJob),
        )
        .create(&PostParams::default(), &object)
        .await
        .expect("the job is created");
    }

    /// Waits until the job's pods and services all exist and its status says `Created`.
    async fn until_created(&self) -> Value {
        self.until(
            "the pods and services exist and the job is Created",
            |server| {
                let status = server.get(JOB)?.get("status")?.clone();
                let created = status["conditions"][0]["type"] == "Created";
                (created && names(server, PODS) == SLOTS && names(server, SERVICES) == SLOTS)
                    .then_some(status)
            },
        )
        .await
    }

    /// Sets the phase of `pod`, as the kubelet does.
    async fn set_phase(&self, pod: &str, phase: &str) {
        let status = json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": phase}});
        Api::<Pod>::namespaced(self.client.clone(), "ml")
            .patch_status(pod, &PatchParams::apply("kubelet"), &Patch::Apply(&status))
            .await
            .expect("the pod's status is written");
    }

    /// Waits until the job's last condition is `type_`=True; its status then.
    async fn until_condition(&self, type_: &str) -> Value {
        self.until(&format!("the job is {type_}"), |server| {
            let status = server.get(JOB)?.get("status")?.clone();
            let conditions = status["conditions"].as_array()?;
            let last = conditions.last()?;
            (last["type"] == type_ && last["status"] == "True").then_some(status)
        })
        .await
    }

    /// Waits until the job is Running with every replica active (Running needs only the chief;
    /// the workers' pods may be seen running later).
    async fn until_all_running(&self) -> Value {
        let all = replica_statuses(1, 2);
        self.until("every replica runs", |server| {
            let status = server.get(JOB)?.get("status")?.clone();
            let last = status["conditions"].as_array()?.last()?.clone();
            let running = last["type"] == "Running" && last["status"] == "True";
            (running && status["replicaStatuses"] == all).then_some(status)
        })
        .await
    }

    /// How many times the operator created each slot's pod and service.
    fn creations(&self) -> Vec<(u64, u64)> {
        SLOTS
            .iter()
            .map(|name| {
                (
                    self.server.calls(Verb::Create, &format!("{PODS}/{name}")),
                    self.server
                        .calls(Verb::Create, &format!("{SERVICES}/{name}")),
                )
            })
            .collect()
    }
}

fn names(server: &MockApiServer, collection: &str) -> Vec<String> {
    server
        .list(collection)
        .iter()
        .filter_map(|object| object["metadata"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// `(type, status, reason, message)` of each condition.
fn conditions(status: &Value) -> Vec<(String, String, String, String)> {
    let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
    status["conditions"]
        .as_array()
        .map(|conditions| {
            conditions
                .iter()
                .map(|c| {
                    (
                        text(&c["type"]),
                        text(&c["status"]),
                        text(&c["reason"]),
                        text(&c["message"]),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> (String, String, String, String) {
    (
        type_.to_owned(),
        status.to_owned(),
        reason.to_owned(),
        message.to_owned(),
    )
}

fn created() -> (String, String, String, String) {
    condition("Created", "True", "TFJobCreated", "TFJob mnist is created.")
}

fn running(status: &str) -> (String, String, String, String) {
    condition(
        "Running",
        status,
        "TFJobRunning",
        "TFJob ml/mnist is running.",
    )
}

/// The replica statuses the job shows with `chief` and `workers` active.
fn replica_statuses(chief: u32, workers: u32) -> Value {
    let selector = |type_: &str| {
        format!(
            "training.kubeflow.org/job-name=mnist,training.kubeflow.org/operator-name=tfjob-controller,training.kubeflow.org/replica-type={type_}"
        )
    };
    json!({
        "Chief": {"active": chief, "selector": selector("chief")},
        "Worker": {"active": workers, "selector": selector("worker")},
    })
}

/// How many deletions the operator made of pods and services.
fn deletions(server: &MockApiServer) -> u64 {
    server.total_calls(Verb::Delete)
}

#[tokio::test]
async fn a_tfjob_gets_each_pod_and_service_once_and_its_status_follows_the_pods() {
    let cluster = start(connect::REQUEST_TIMEOUT).await;
    cluster.create_job().await;

    let status = cluster.until_created().await;
    assert_eq!(conditions(&status), [created()]);
    assert!(status["startTime"].is_string(), "{status}");
    assert_eq!(cluster.creations(), [(1, 1); 3]);

    for pod in SLOTS {
        cluster.set_phase(pod, "Running").await;
    }
    let status = cluster.until_all_running().await;
    assert_eq!(conditions(&status), [created(), running("True")]);

    cluster.set_phase("mnist-chief-0", "Succeeded").await;
    let status = cluster.until_condition("Succeeded").await;
    assert_eq!(
        conditions(&status),
        [
            created(),
            running("False"),
            condition(
                "Succeeded",
                "True",
                "TFJobSucceeded",
                "TFJob ml/mnist successfully completed."
            ),
        ]
    );
    assert!(status["completionTime"].is_string(), "{status}");
    // cleanPodPolicy None: the workers still running are left alone.
    assert_eq!(names(&cluster.server, PODS), SLOTS);
    assert_eq!(
        cluster.creations(),
        [(1, 1); 3],
        "nothing was created twice"
    );
    assert_eq!(deletions(&cluster.server), 0);
}

#[tokio::test]
async fn pod_creations_failing_with_500_and_409_converge_without_duplicates() {
    let cluster = start(connect::REQUEST_TIMEOUT).await;
    let fail = |pod: &str, code: StatusCode| {
        cluster
            .server
            .inject(Method::POST, &format!("{PODS}/{pod}"), 1, Fault::Fail(code));
    };
    fail("mnist-worker-0", StatusCode::INTERNAL_SERVER_ERROR);
    fail("mnist-worker-1", StatusCode::CONFLICT);
    cluster.create_job().await;

    let status = cluster.until_created().await;
    assert_eq!(conditions(&status), [created()]);
    assert_eq!(
        cluster.creations(),
        [(1, 1), (2, 1), (2, 1)],
        "each failed pod created once more, nothing else"
    );
    assert_eq!(deletions(&cluster.server), 0);
    // Events are written in the background, after the reconcile.
    let failures: Vec<String> = cluster
        .until("both FailedCreatePod events", |server| {
            let failures: Vec<String> = server
                .list("/apis/events.k8s.io/v1/namespaces/ml/events")
                .iter()
                .filter(|event| event["reason"] == "FailedCreatePod")
                .map(|event| event["note"].as_str().unwrap_or_default().to_owned())
                .collect();
            (failures.len() >= 2).then_some(failures)
        })
        .await;
    assert_eq!(failures.len(), 2, "{failures:?}");
    assert!(
        failures.iter().any(|note| note.contains("InternalError")),
        "{failures:?}"
    );
    assert!(
        failures.iter().any(|note| note.contains("Conflict")),
        "{failures:?}"
    );
}

#[tokio::test]
async fn the_client_never_has_more_calls_in_flight_than_its_bound() {
    // One reconcile creates 32 objects at a time; the server takes 20 ms a call.
    let settings = Settings {
        latency: Duration::from_millis(20),
        ..Settings::default()
    };
    let limits = RateLimits {
        max_in_flight: 4,
        ..RateLimits::default()
    };
    let cluster = start_with(settings, limits, connect::REQUEST_TIMEOUT).await;
    cluster.create_job_of(40).await;

    cluster
        .until("the 41 pods and services exist", |server| {
            (server.list(PODS).len() == 41 && server.list(SERVICES).len() == 41).then_some(())
        })
        .await;
    assert_eq!(cluster.server.peak_in_flight(), 4);
}

#[tokio::test]
async fn a_call_that_never_answers_times_out_and_converges() {
    let timeout = Duration::from_millis(500);
    let cluster = start(timeout).await;
    cluster.server.inject(
        Method::POST,
        &format!("{PODS}/mnist-worker-1"),
        1,
        Fault::Hold(Duration::from_secs(3600)),
    );
    cluster.create_job().await;

    let status = cluster.until_created().await;
    assert_eq!(conditions(&status), [created()]);
    assert_eq!(cluster.creations(), [(1, 1), (1, 1), (2, 1)]);
    assert_eq!(deletions(&cluster.server), 0);
}

/// Drops every watch (after forgetting the history of pods, if `compact`), changes the pods'
/// phases, and checks that the job still follows.
async fn pods_run_after_the_watches_drop(cluster: &Cluster, compact: bool) {
    cluster.create_job().await;
    cluster.until_created().await;
    if compact {
        // The pods' watch cache starts afresh: every watch of pods must list them again.
        assert!(cluster.server.forget_history_of(PODS));
    }
    cluster.server.drop_watches();
    for pod in SLOTS {
        cluster.set_phase(pod, "Running").await;
    }
    let status = cluster.until_all_running().await;
    assert_eq!(conditions(&status), [created(), running("True")]);
    cluster
        .until("every controller watches again", |server| {
            (server.open_watches() == WATCHES).then_some(())
        })
        .await;
    assert_eq!(cluster.creations(), [(1, 1); 3]);
}

#[tokio::test]
async fn a_pod_change_after_the_watches_drop_is_seen_when_they_resume() {
    let cluster = start(connect::REQUEST_TIMEOUT).await;
    pods_run_after_the_watches_drop(&cluster, false).await;
    // Every kind's controller watches pods and services; only the TFJob controller, TFJobs.
    let kinds = JobKind::ALL.len() as u64;
    for (collection, watchers) in [(PODS, kinds), (SERVICES, kinds), (TF_JOBS, 1)] {
        assert_eq!(
            cluster.server.calls(Verb::Watch, collection),
            2 * watchers,
            "{collection}: each watch resumed once"
        );
    }
    assert_eq!(
        cluster.server.calls(Verb::List, TF_JOBS),
        1,
        "resumed, not listed again"
    );
}

#[tokio::test]
async fn watches_that_resume_too_late_list_again_and_still_converge() {
    let cluster = start(connect::REQUEST_TIMEOUT).await;
    pods_run_after_the_watches_drop(&cluster, true).await;
    let kinds = JobKind::ALL.len() as u64;
    assert_eq!(
        cluster.server.calls(Verb::Watch, PODS),
        3 * kinds,
        "each watch of pods was refused once (410 Gone), then started anew after a list"
    );
    assert_eq!(
        cluster.server.calls(Verb::Watch, SERVICES),
        2 * kinds,
        "resumed"
    );
    assert_eq!(cluster.server.calls(Verb::Watch, TF_JOBS), 2, "resumed");
    assert_eq!(
        cluster.server.calls(Verb::List, TF_JOBS),
        1,
        "not listed again"
    );
}

#[tokio::test]
async fn the_pods_are_listed_a_hundred_at_a_time() {
    let server = MockApiServer::start(Settings::default())
        .await
        .expect("a free port");
    // Pods of the TFJob controller that no job owns: listed, then left alone.
    let config = Config::new(server.url().parse().expect("a URL"));
    let pods: Api<Pod> = Api::namespaced(Client::try_from(config).expect("a client"), "ml");
    for index in 0..150 {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": format!("orphan-{index}"),
                "labels": {"training.kubeflow.org/operator-name": "tfjob-controller"}},
            "spec": {"containers": [{"name": "tensorflow", "image": "tf"}]},
        }))
        .expect("a pod");
        pods.create(&PostParams::default(), &pod)
            .await
            .expect("the pod is created");
    }
    let cluster = run_against(server, RateLimits::default(), connect::REQUEST_TIMEOUT).await;
    let kinds = JobKind::ALL.len() as u64;
    assert_eq!(
        cluster.server.calls(Verb::List, PODS),
        kinds + 1,
        "the TFJob controller's 150 pods in two pages, each other kind's none in one"
    );
}
