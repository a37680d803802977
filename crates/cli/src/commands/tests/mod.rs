//! The job commands in cluster mode against a mock API server (`trainctl-kube-recorder`): each
//! scenario runs a command line as `trainctl --kube ...` would, and asserts the exact requests
//! sent and the exact output.

mod errors;
mod jobs;
mod logs;
mod wait;
mod writes;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use http::Method;
use jiff::Timestamp;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use trainctl_kube_recorder::{Reply, Sent, received, serve};

use super::{on_backend, submit};
use crate::cli::{Cli, Command};
use crate::cluster::Cluster;

/// The URL messages name for the mock server.
const SERVER: &str = "https://cluster.test";

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
    answer: impl FnMut(&Sent) -> Reply + Send + 'static,
) -> (Cluster, JoinHandle<Vec<Sent>>) {
    let (client, handle) = trainctl_kube_recorder::client("default");
    let server = serve(handle, answer);
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
                    sent: received(server).await,
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
        sent: received(server).await,
    }
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
