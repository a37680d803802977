//! The job commands in cluster mode against a mock API server (tower-test): each scenario runs a
//! command line as `trainctl --kube ...` would, and asserts the exact requests sent and the exact
//! output.

mod errors;
mod jobs;
mod logs;
mod wait;
mod writes;

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use http::{Method, Request, Response};
use jiff::Timestamp;
use kube::Client;
use kube::client::Body;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tower_test::mock;

use super::{on_backend, submit};
use crate::cli::{Cli, Command};
use crate::cluster::Cluster;

/// The URL messages name for the mock server.
const SERVER: &str = "https://cluster.test";

/// One request the CLI sent.
#[derive(Debug, Clone)]
struct Sent {
    method: Method,
    /// Path and query, as sent (percent-encoded).
    uri: String,
    content_type: Option<String>,
    /// The body: JSON, or `Null` when empty.
    body: Value,
}

impl Sent {
    fn path(&self) -> &str {
        self.uri.split('?').next().unwrap_or_default()
    }

    fn is_watch(&self) -> bool {
        self.uri.contains("watch=true")
    }
}

/// How the mock answers a request.
enum Reply {
    /// A JSON body with this HTTP status.
    Json(u16, Value),
    /// A plain body (a log, a stream of watch events) with status 200.
    Text(String),
    /// No answer: the request stays open (a watch with nothing to say).
    Hang,
    /// No answer yet: the request waits under this name for a [`Reply::Release`].
    Held(&'static str),
    /// The first reply to this request, and the second to the request held under the name.
    Release(Box<Reply>, &'static str, Box<Reply>),
}

/// How the mock answers one request.
type Responder = tower_test::mock::SendResponse<Response<Body>>;

/// Sends `reply` through `respond`, or keeps `respond` open.
fn send(
    respond: Responder,
    reply: Reply,
    open: &mut Vec<Responder>,
    held: &mut HashMap<&'static str, Responder>,
) {
    let (code, body) = match reply {
        Reply::Json(code, value) => (code, serde_json::to_vec(&value).expect("JSON")),
        Reply::Text(text) => (200, text.into_bytes()),
        Reply::Hang => return open.push(respond),
        Reply::Held(name) => {
            held.insert(name, respond);
            return;
        }
        Reply::Release(this, name, that) => {
            let waiting = held.remove(name).expect("a request held under that name");
            send(waiting, *that, open, held);
            return send(respond, *this, open, held);
        }
    };
    respond.send_response(
        Response::builder()
            .status(code)
            .body(Body::from(body))
            .expect("a response"),
    );
}

/// A `Status` body, as the API server sends with an error; `name` is the object's when the
/// error is about one.
fn status(code: u16, reason: &str, message: &str, name: Option<&str>) -> Reply {
    let mut body = json!({
        "apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
        "reason": reason, "code": code, "message": message,
    });
    if let Some(name) = name {
        body["details"] = json!({"name": name, "group": "kubeflow.org", "kind": "tfjobs"});
    }
    Reply::Json(code, body)
}

/// A list of `items`.
fn list(items: Vec<Value>) -> Reply {
    let mut body =
        json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "100"}});
    body["items"] = Value::Array(items);
    Reply::Json(200, body)
}

/// A cluster whose API server answers with `answer`; the handle returns what was sent once the
/// cluster is dropped.
fn mock_cluster(
    mut answer: impl FnMut(&Sent) -> Reply + Send + 'static,
) -> (Cluster, JoinHandle<Vec<Sent>>) {
    let (service, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
    let server = tokio::spawn(async move {
        let mut sent = Vec::new();
        let mut open = Vec::new();
        let mut held = HashMap::new();
        while let Some((request, respond)) = handle.next_request().await {
            let (parts, body) = request.into_parts();
            let bytes = body.collect_bytes().await.expect("a request body");
            let request = Sent {
                method: parts.method,
                uri: parts.uri.to_string(),
                content_type: parts
                    .headers
                    .get(http::header::CONTENT_TYPE)
                    .and_then(|value| value.to_str().ok())
                    .map(str::to_owned),
                body: if bytes.is_empty() {
                    Value::Null
                } else {
                    serde_json::from_slice(&bytes).expect("a JSON body")
                },
            };
            let reply = answer(&request);
            sent.push(request);
            send(respond, reply, &mut open, &mut held);
        }
        sent
    });
    let client = Client::new(service, "default");
    let cluster = Cluster::new(client, "default".to_owned(), SERVER.to_owned());
    (cluster, server)
}

/// What a command did.
#[derive(Debug)]
struct Outcome {
    /// Its exit code, or the error `main` prints (exit 1).
    code: Result<ExitCode, String>,
    /// Its standard output.
    stdout: String,
    /// The requests it sent, in order.
    sent: Vec<Sent>,
}

/// Runs `trainctl --kube ARGS...` against a mock API server answering with `answer`.
async fn trainctl(args: &[&str], answer: impl FnMut(&Sent) -> Reply + Send + 'static) -> Outcome {
    let cli = Cli::try_parse_from(["trainctl", "--kube"].iter().chain(args))
        .unwrap_or_else(|error| panic!("{args:?} parses: {error}"));
    let (cluster, server) = mock_cluster(answer);
    let checked = match &cli.command {
        Command::Submit(args) => match submit::check(args) {
            Ok(checked) => Some(checked),
            Err(code) => {
                drop(cluster);
                return Outcome {
                    code: Ok(code),
                    stdout: String::new(),
                    sent: stop(server).await,
                };
            }
        },
        _ => None,
    };
    let mut stdout = Vec::new();
    let command = on_backend(cli.command, checked, &cluster, &mut stdout);
    let code = tokio::time::timeout(Duration::from_secs(10), command)
        .await
        .expect("the command ends")
        .map_err(|error| format!("{error:#}"));
    drop(cluster);
    Outcome {
        code,
        stdout: String::from_utf8(stdout).expect("UTF-8 output"),
        sent: stop(server).await,
    }
}

/// What the mock server received, once the client is gone.
async fn stop(server: JoinHandle<Vec<Sent>>) -> Vec<Sent> {
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("the mock server stops once the client is gone")
        .expect("the mock server does not panic")
}

/// The requests as `METHOD URI`, sorted (for requests sent concurrently).
fn sorted(sent: &[Sent]) -> Vec<String> {
    let mut requests: Vec<String> = sent
        .iter()
        .map(|sent| format!("{} {}", sent.method, sent.uri))
        .collect();
    requests.sort();
    requests
}

/// The requests as `METHOD URI`, in order.
fn requests(sent: &[Sent]) -> Vec<String> {
    sent.iter()
        .map(|sent| format!("{} {}", sent.method, sent.uri))
        .collect()
}

/// A time `seconds` before now, to the second, as the API server writes times.
fn ago(seconds: i64) -> String {
    Timestamp::from_second(Timestamp::now().as_second() - seconds)
        .expect("a time after 1970")
        .to_string()
}

/// The TFJob `default/mnist` (a chief and two workers) as the API server stores it, created
/// 5 minutes ago, with `status`.
fn tfjob(status: Value) -> Value {
    let mut job = json!({
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {
            "name": "mnist", "namespace": "default", "uid": "uid-mnist",
            "resourceVersion": "7", "creationTimestamp": ago(300),
            "managedFields": [{"manager": "kubectl", "operation": "Update"}],
        },
        "spec": {
            "runPolicy": {"backoffLimit": 3},
            "tfReplicaSpecs": {
                "Chief": {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {
                    "containers": [{"name": "tensorflow", "image": "tf",
                                    "command": ["python", "train.py"]}]}}},
                "Worker": {"replicas": 2, "restartPolicy": "OnFailure", "template": {"spec": {
                    "containers": [{"name": "tensorflow", "image": "tf",
                                    "command": ["python", "train.py"]}]}}},
            },
        },
    });
    job["status"] = status;
    job
}

/// A status with these `(type, status, message)` conditions, started 4 minutes ago.
fn conditions(conditions: &[(&str, &str, &str)]) -> Value {
    let conditions: Vec<Value> = conditions
        .iter()
        .map(|(type_, status, message)| {
            json!({"type": type_, "status": status, "reason": format!("TFJob{type_}"),
                   "message": message, "lastTransitionTime": ago(240), "lastUpdateTime": ago(240)})
        })
        .collect();
    json!({"conditions": conditions, "startTime": ago(240)})
}

/// The status of a running job.
fn running() -> Value {
    conditions(&[
        ("Created", "True", "TFJob mnist is created."),
        ("Running", "True", "TFJob default/mnist is running."),
    ])
}

/// The pod of `mnist`'s replica `replica_type`-`index`, on `node`, with the framework
/// container's `state` and restart count.
fn pod(replica_type: &str, index: u32, node: &str, state: Value, restarts: i32) -> Value {
    let phase = if state.get("running").is_some() {
        "Running"
    } else if state["terminated"]["exitCode"] == 0 {
        "Succeeded"
    } else if state.get("terminated").is_some() {
        "Failed"
    } else {
        "Pending"
    };
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("mnist-{replica_type}-{index}"), "namespace": "default",
            "uid": format!("uid-{replica_type}-{index}"),
            "labels": {
                "training.kubeflow.org/job-name": "mnist",
                "training.kubeflow.org/operator-name": "tfjob-controller",
                "training.kubeflow.org/replica-type": replica_type,
                "training.kubeflow.org/replica-index": index.to_string(),
            },
            "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                                 "name": "mnist", "uid": "uid-mnist", "controller": true}],
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "tensorflow", "image": "tf",
                            "ports": [{"name": "tfjob-port", "containerPort": 2222}]}],
        },
        "status": {
            "phase": phase,
            "containerStatuses": [{"name": "tensorflow", "image": "tf", "imageID": "",
                                   "ready": phase == "Running", "restartCount": restarts}],
        },
    });
    pod["status"]["containerStatuses"][0]["state"] = state;
    pod
}

/// A container running since `seconds` ago.
fn running_since(seconds: i64) -> Value {
    json!({"running": {"startedAt": ago(seconds)}})
}

/// A container that exited with `code`, started `seconds` ago.
fn exited(code: i32, seconds: i64) -> Value {
    json!({"terminated": {"exitCode": code, "startedAt": ago(seconds), "finishedAt": ago(10)}})
}

/// A watch event body: one JSON event a line.
fn events(events: &[(&str, Value)]) -> Reply {
    let mut body = String::new();
    for (type_, object) in events {
        body.push_str(&json!({"type": type_, "object": object}).to_string());
        body.push('\n');
    }
    Reply::Text(body)
}
