//! The dashboard's API over HTTP, against a mock API server (`trainctl-kube-recorder`): the
//! token, the errors' envelope and statuses, RBAC's answers, and what it reads of the cluster.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::watch;
use trainctl_kube_recorder::{Reply, Sent};

use super::test_objects::{JOB_UID, pod_object, running_since, tfjob_object};
use super::{Dashboard, Settings, router, serve};
use crate::cluster::Cluster;

const TOKEN: &str = "the-token";

/// A `Status` body, as the API server sends with an error; `name` is the object's when the
/// error is about one.
fn status(code: u16, message: &str, name: Option<&str>) -> Reply {
    let mut body = json!({
        "apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
        "message": message, "code": code,
    });
    if let Some(name) = name {
        body["details"] = json!({"name": name, "group": "kubeflow.org", "kind": "tfjobs"});
    }
    Reply::Json(code, body)
}

fn list(items: &[Value]) -> Reply {
    let body = json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "1"},
                      "items": items});
    Reply::Json(200, body)
}

/// The dashboard of namespace `ml` served on loopback, its API server a mock that answers with
/// `answer`; its address.
async fn dashboard(answer: impl Fn(&Sent) -> Reply + Send + 'static) -> String {
    let (client, handle) = trainctl_kube_recorder::client("ml");
    // The recorder serves until the dashboard's client is gone; what it records goes unread.
    drop(trainctl_kube_recorder::serve(handle, answer));
    let cluster = Cluster::new(client, "ml".to_owned(), "https://cluster.test".to_owned());
    // No change will come: each event stream sends its first event, then ends.
    let (_, changes) = watch::channel(0);
    let app = router(
        Dashboard {
            cluster,
            namespace: Some("ml".to_owned()),
            context: "test-context".to_owned(),
            changes,
        },
        TOKEN,
        Arc::default(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let address = listener.local_addr().expect("its address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}")
}

/// Sends `method path` to the dashboard at `base` (with the token unless `token` is `None`);
/// the status and the body.
async fn call(method: &str, url: String, token: Option<&str>) -> (u16, String) {
    let (method, token) = (method.to_owned(), token.map(str::to_owned));
    tokio::task::spawn_blocking(move || {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let bearer = format!("Bearer {}", token.unwrap_or_default());
        let answered = match method.as_str() {
            "GET" => agent.get(&url).header("Authorization", &bearer).call(),
            "DELETE" => agent.delete(&url).header("Authorization", &bearer).call(),
            "POST" => agent
                .post(&url)
                .header("Authorization", &bearer)
                .send_empty(),
            "PUT" => agent
                .put(&url)
                .header("Authorization", &bearer)
                .send_empty(),
            other => panic!("no such method here: {other}"),
        };
        let mut response = answered.expect("the dashboard answers");
        let body = response.body_mut().read_to_string().expect("a text body");
        (response.status().as_u16(), body)
    })
    .await
    .expect("the request ran")
}

/// `call` with the token; the status and the body as JSON.
async fn json_call(method: &str, url: String) -> (u16, Value) {
    let (status, body) = call(method, url, Some(TOKEN)).await;
    let json = serde_json::from_str(&body).unwrap_or_else(|_| panic!("JSON: {body}"));
    (status, json)
}

/// The API server of a namespace `ml` with the TFJob `mnist`, its chief running and ready and
/// its workers pending, and no other kind's CRD; RBAC allows `allowed` verbs on tfjobs.
fn cluster_with_mnist(allowed: &'static [&'static str]) -> impl Fn(&Sent) -> Reply + Send {
    move |sent| {
        let job = tfjob_object(&json!({"conditions": [
            {"type": "Created", "status": "True"}, {"type": "Running", "status": "True"},
        ]}));
        let chief = running_since("2026-01-02T03:01:00Z");
        let pods = vec![
            pod_object(("chief", 0), JOB_UID, "Running", &chief, true),
            pod_object(("worker", 0), JOB_UID, "Pending", &json!({}), false),
        ];
        match (sent.method.as_str(), sent.path()) {
            ("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews") => {
                let mut review = sent.body.clone();
                let verb = review["spec"]["resourceAttributes"]["verb"].clone();
                review["status"] = json!({"allowed": allowed.iter().any(|&ok| verb == ok)});
                Reply::Json(201, review)
            }
            ("GET", "/apis/kubeflow.org/v1/namespaces/ml/tfjobs") => list(&[job]),
            ("GET", "/apis/kubeflow.org/v1/namespaces/ml/tfjobs/mnist") => Reply::Json(200, job),
            ("PATCH", "/apis/kubeflow.org/v1/namespaces/ml/tfjobs/mnist") => status(
                403,
                "tfjobs.kubeflow.org \"mnist\" is forbidden: User \"dev\" cannot patch",
                Some("mnist"),
            ),
            ("GET", "/apis/kubeflow.org/v1/namespaces/ml/tfjobs/gone") => {
                status(404, "tfjobs.kubeflow.org \"gone\" not found", Some("gone"))
            }
            ("GET", "/api/v1/namespaces/ml/pods") => list(&pods),
            ("GET", "/apis/events.k8s.io/v1/namespaces/ml/events") => list(&[]),
            ("GET", "/api/v1/namespaces/ml/pods/mnist-chief-0/log") => {
                Reply::Text("step 1\nstep 2\n".to_owned())
            }
            ("GET", path) if path.starts_with("/apis/kubeflow.org/v1/namespaces/ml/") => status(
                404,
                "the server could not find the requested resource",
                None,
            ),
            _ => status(
                500,
                &format!("unexpected {} {}", sent.method, sent.path()),
                None,
            ),
        }
    }
}

#[tokio::test]
async fn the_api_needs_the_token_and_says_what_the_dashboard_may_do() {
    let base = dashboard(cluster_with_mnist(&["patch"])).await;
    let (status, body) = call("GET", format!("{base}/api/v1/dashboard"), None).await;
    assert_eq!(status, 401, "{body}");
    let (status, _) = call("GET", format!("{base}/healthz"), None).await;
    assert_eq!(status, 200);
    // RBAC allows patch, not delete: no actions.
    let (status, info) = json_call("GET", format!("{base}/api/v1/dashboard")).await;
    assert_eq!(status, 200);
    assert_eq!(
        info,
        json!({"source": "kube", "curves": false, "machine": false, "actions": false,
               "version": env!("CARGO_PKG_VERSION"), "context": "test-context",
               "namespace": "ml"})
    );
    let both = dashboard(cluster_with_mnist(&["patch", "delete"])).await;
    let (_, info) = json_call("GET", format!("{both}/api/v1/dashboard")).await;
    assert_eq!(info["actions"], true);
}

#[tokio::test]
async fn jobs_are_summed_up_and_shown_from_the_cluster() {
    let base = dashboard(cluster_with_mnist(&[])).await;
    let (status, listed) = json_call("GET", format!("{base}/api/v1/job-summaries")).await;
    assert_eq!(status, 200, "{listed}");
    let items = listed["items"].as_array().expect("items");
    assert_eq!(
        items.len(),
        1,
        "the kinds without a CRD are left out: {listed}"
    );
    let fields = [
        "kind",
        "plural",
        "state",
        "replicasReady",
        "replicasTotal",
        "restarts",
    ];
    let shown: Vec<&Value> = fields.iter().map(|field| &items[0][field]).collect();
    assert_eq!(
        shown,
        [
            &json!("TFJob"),
            &json!("tfjobs"),
            &json!("Running"),
            &json!(1),
            &json!(3),
            &json!(4)
        ]
    );
    let job = format!("{base}/api/v1/namespaces/ml/tfjobs/mnist");
    let (status, view) = json_call("GET", job.clone()).await;
    assert_eq!(status, 200, "{view}");
    let replicas: Vec<(&Value, &Value)> = view["replicas"]
        .as_array()
        .expect("replicas")
        .iter()
        .map(|replica| (&replica["name"], &replica["state"]))
        .collect();
    assert_eq!(
        replicas,
        [
            (&json!("chief-0"), &json!("Running")),
            (&json!("worker-0"), &json!("Pending"))
        ]
    );
    // The event stream: its first event, then (no change will come) its end.
    let (status, stream) = call(
        "GET",
        format!("{base}/api/v1/watch/job-summaries"),
        Some(TOKEN),
    )
    .await;
    assert_eq!(status, 200);
    let data = stream
        .strip_prefix("event: jobs\ndata: ")
        .and_then(|rest| rest.strip_suffix("\n\n"))
        .unwrap_or_else(|| panic!("one event `jobs`: {stream:?}"));
    assert_eq!(serde_json::from_str::<Value>(data).expect("JSON"), listed);
    let (status, scalars) = json_call("GET", format!("{job}/scalars")).await;
    assert_eq!((status, &scalars["series"]), (200, &json!([])));
    // Logs: the chief's container has started, the worker's has not; prefixes as wide as the
    // widest replica's name.
    let (status, logs) = call("GET", format!("{job}/logs"), Some(TOKEN)).await;
    assert_eq!(
        (status, logs.as_str()),
        (200, "chief-0  | step 1\nchief-0  | step 2\n")
    );
}

#[tokio::test]
async fn errors_come_in_the_envelope_with_a_fitting_status() {
    let base = dashboard(cluster_with_mnist(&[])).await;
    let jobs = format!("{base}/api/v1/namespaces");
    let cases = [
        ("GET", format!("{jobs}/ml/cronjobs/mnist"), 400, "cronjobs"),
        (
            "GET",
            format!("{jobs}/Not_A_Namespace/tfjobs/mnist"),
            400,
            "namespace",
        ),
        (
            "GET",
            format!("{jobs}/team-b/tfjobs/mnist"),
            404,
            "shows namespace \"ml\" only",
        ),
        (
            "GET",
            format!("{jobs}/ml/tfjobs/gone"),
            404,
            "tfjob \"gone\" not found in namespace \"ml\"",
        ),
        (
            "GET",
            format!("{jobs}/ml/tfjobs/mnist/logs?replica=ps-0"),
            404,
            "its replicas: chief-0, worker-0, worker-1",
        ),
        (
            "GET",
            format!("{jobs}/ml/tfjobs/mnist/logs?tailLines=many"),
            400,
            "query string",
        ),
        (
            "POST",
            format!("{jobs}/ml/tfjobs/mnist/suspend"),
            403,
            "forbidden: this user may not patch tfjobs.kubeflow.org in namespace \"ml\"",
        ),
        (
            "GET",
            format!("{base}/api/v1/machine"),
            404,
            "kubectl top nodes",
        ),
        ("GET", format!("{base}/api/v1/nothing"), 404, "no such path"),
        (
            "PUT",
            format!("{jobs}/ml/tfjobs/mnist"),
            405,
            "PUT is not allowed",
        ),
    ];
    for (method, url, expected, said) in cases {
        let (status, body) = json_call(method, url.clone()).await;
        assert_eq!(status, expected, "{method} {url}: {body}");
        let message = body["error"].as_str().expect("an error message");
        assert!(message.contains(said), "{method} {url}: {message}");
        assert_eq!(body["details"], json!([]), "{method} {url}");
    }
    // The cluster fails: 502, with its message.
    let failing = dashboard(|_: &Sent| status(500, "etcdserver: request timed out", None)).await;
    let (status, body) = json_call("GET", format!("{failing}/api/v1/job-summaries")).await;
    assert_eq!(status, 502, "{body}");
    let message = body["error"].as_str().expect("an error message");
    assert!(
        message.contains("etcdserver: request timed out"),
        "{message}"
    );
}

#[tokio::test]
async fn a_non_loopback_address_is_refused_unless_allowed() {
    let (client, _handle) = trainctl_kube_recorder::client("ml");
    let cluster = Cluster::new(client, "ml".to_owned(), "https://cluster.test".to_owned());
    let settings = Settings {
        namespace: None,
        context: None,
        listen: "0.0.0.0:0".parse().expect("an address"),
        allow_non_loopback: false,
    };
    let refused = serve(cluster, settings, |_| panic!("it does not listen"))
        .await
        .expect_err("refused");
    assert_eq!(
        refused.to_string(),
        "refusing to listen on 0.0.0.0:0: not a loopback address (pass --allow-non-loopback to \
         accept it)"
    );
}
