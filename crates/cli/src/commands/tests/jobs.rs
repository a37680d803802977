//! `get` and `describe` on a cluster: the local mode's tables, from the jobs' status, pods and
//! events.

use super::*;

/// A PyTorchJob `default/bert` that succeeded, created 10 minutes ago.
fn pytorchjob() -> Value {
    json!({
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": "bert", "namespace": "default", "uid": "uid-bert",
                     "creationTimestamp": ago(600)},
        "spec": {"pytorchReplicaSpecs": {"Master": {"template": {"spec": {
            "containers": [{"name": "pytorch", "image": "pt"}]}}}}},
        "status": {
            "conditions": [
                {"type": "Created", "status": "True", "reason": "PyTorchJobCreated"},
                {"type": "Succeeded", "status": "True", "reason": "PyTorchJobSucceeded"},
            ],
            "startTime": ago(590), "completionTime": ago(470),
        },
    })
}

#[tokio::test]
async fn get_lists_every_installed_kind_oldest_first() {
    let outcome = trainctl(&["get"], |sent| match sent.path() {
        "/apis/kubeflow.org/v1/namespaces/default/tfjobs" => list(vec![tfjob(running())]),
        "/apis/kubeflow.org/v1/namespaces/default/pytorchjobs" => list(vec![pytorchjob()]),
        // No JAXJob CRD: that kind is left out, not an error.
        "/apis/kubeflow.org/v1/namespaces/default/jaxjobs" => status(
            404,
            "NotFound",
            "the server could not find the requested resource",
            None,
        ),
        _ => list(Vec::new()),
    })
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::SUCCESS));
    assert_eq!(
        outcome.stdout,
        "\
NAME              STATE       AGE
pytorchjob/bert   Succeeded   10m
tfjob/mnist       Running     5m
"
    );
    assert_eq!(
        sorted(&outcome.sent),
        [
            "GET /apis/kubeflow.org/v1/namespaces/default/jaxjobs?",
            "GET /apis/kubeflow.org/v1/namespaces/default/mpijobs?",
            "GET /apis/kubeflow.org/v1/namespaces/default/mxjobs?",
            "GET /apis/kubeflow.org/v1/namespaces/default/paddlejobs?",
            "GET /apis/kubeflow.org/v1/namespaces/default/pytorchjobs?",
            "GET /apis/kubeflow.org/v1/namespaces/default/tfjobs?",
            "GET /apis/kubeflow.org/v1/namespaces/default/xgboostjobs?",
        ]
    );
}

#[tokio::test]
async fn get_wide_counts_restarts_of_the_pods_and_of_those_replaced() {
    let mut job = tfjob(running());
    job["metadata"]["annotations"] = json!({"training.kubeflow.org/retired-restarts": "2"});
    let pods = vec![
        pod("chief", 0, "node-a", running_since(200), 0),
        pod("worker", 0, "node-b", running_since(100), 1),
    ];
    let outcome = trainctl(&["get", "tfjobs", "-o", "wide"], move |sent| {
        match sent.path() {
            "/apis/kubeflow.org/v1/namespaces/default/tfjobs" => list(vec![job.clone()]),
            "/api/v1/namespaces/default/pods" => list(pods.clone()),
            _ => status(404, "NotFound", "unexpected", None),
        }
    })
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::SUCCESS));
    assert_eq!(
        outcome.stdout,
        "\
NAME    STATE     AGE   REPLICAS           RESTARTS   DURATION   REASON   PROGRESS
mnist   Running   5m    Chief:1 Worker:2   3          4m         -        -
"
    );
    assert_eq!(
        requests(&outcome.sent),
        [
            "GET /apis/kubeflow.org/v1/namespaces/default/tfjobs?",
            "GET /api/v1/namespaces/default/pods?&labelSelector=training.kubeflow.org%2Fjob-name",
        ]
    );
}

#[tokio::test]
async fn get_all_namespaces_adds_the_namespace_column() {
    let mut other = tfjob(running());
    other["metadata"]["namespace"] = json!("team-a");
    other["metadata"]["uid"] = json!("uid-other");
    other["metadata"]["creationTimestamp"] = json!(ago(7_200));
    let outcome = trainctl(&["get", "tfjob", "-A"], move |_| {
        list(vec![tfjob(running()), other.clone()])
    })
    .await;
    assert_eq!(
        outcome.stdout,
        "\
NAMESPACE   NAME    STATE     AGE
team-a      mnist   Running   2h
default     mnist   Running   5m
"
    );
    assert_eq!(
        requests(&outcome.sent),
        ["GET /apis/kubeflow.org/v1/tfjobs?"]
    );
}

#[tokio::test]
async fn get_one_job_prints_the_stored_object_without_managed_fields() {
    let outcome = trainctl(&["get", "tfjob", "mnist", "-n", "ml", "-o", "json"], |_| {
        let mut job = tfjob(running());
        job["metadata"]["namespace"] = json!("ml");
        Reply::Json(200, job)
    })
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::SUCCESS));
    let printed: Value = serde_json::from_str(&outcome.stdout).expect("JSON");
    let mut expected = tfjob(running());
    expected["metadata"]["namespace"] = json!("ml");
    expected["metadata"]
        .as_object_mut()
        .expect("metadata")
        .remove("managedFields");
    assert_eq!(printed, expected);
    assert_eq!(
        requests(&outcome.sent),
        ["GET /apis/kubeflow.org/v1/namespaces/ml/tfjobs/mnist"]
    );
}

#[tokio::test]
async fn get_a_job_that_does_not_exist_exits_1() {
    let outcome = trainctl(&["get", "tfjob", "nope"], |_| {
        status(
            404,
            "NotFound",
            "tfjobs.kubeflow.org \"nope\" not found",
            Some("nope"),
        )
    })
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::FAILURE));
    assert_eq!(outcome.stdout, "");
}

#[tokio::test]
async fn get_names_a_job_that_does_not_fit_the_types_and_lists_the_others() {
    let mut broken = tfjob(running());
    broken["metadata"]["name"] = json!("broken");
    broken["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = json!("two");
    let outcome = trainctl(&["get", "tfjobs"], move |_| {
        list(vec![tfjob(running()), broken.clone()])
    })
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::SUCCESS));
    assert_eq!(
        outcome.stdout,
        "NAME    STATE     AGE\nmnist   Running   5m\n"
    );
}

/// The job's events: one recorded once, one repeated (a series).
fn job_events() -> Vec<Value> {
    vec![
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
               "metadata": {"name": "mnist.2", "namespace": "default"},
               "eventTime": ago(290), "type": "Warning", "reason": "TFJobRestarting",
               "note": "TFJob mnist is restarting because 1 Worker replica(s) failed.",
               "series": {"count": 2, "lastObservedTime": ago(60)},
               "regarding": {"kind": "TFJob", "name": "mnist", "uid": "uid-mnist"}}),
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
               "metadata": {"name": "mnist.1", "namespace": "default"},
               "eventTime": ago(295), "type": "Normal", "reason": "SuccessfulCreatePod",
               "note": "Created pod: mnist-chief-0",
               "regarding": {"kind": "TFJob", "name": "mnist", "uid": "uid-mnist"}}),
    ]
}

/// The pods `describe` finds for `mnist`: a chief running, a worker that failed and one not
/// placed yet, and another job's pod with the same labels.
fn mnist_pods() -> Vec<Value> {
    let mut worker_0 = pod("worker", 0, "node-b", exited(137, 120), 2);
    worker_0["spec"]["containers"][0]["resources"] = json!({"limits": {"nvidia.com/gpu": "2"}});
    let mut worker_1 = pod(
        "worker",
        1,
        "node-b",
        json!({"waiting": {"reason": "ContainerCreating"}}),
        0,
    );
    worker_1["spec"]
        .as_object_mut()
        .expect("spec")
        .remove("nodeName");
    vec![
        worker_1,
        pod("chief", 0, "node-a", running_since(200), 0),
        worker_0,
        // Another job's pod with the same labels (an orphan): not this job's.
        {
            let mut orphan = pod("worker", 2, "node-c", running_since(9), 0);
            orphan["metadata"]["ownerReferences"][0]["uid"] = json!("uid-older");
            orphan
        },
    ]
}

#[tokio::test]
async fn describe_shows_the_pods_as_replicas_and_the_events_regarding_the_job() {
    let pods = mnist_pods();
    let job = tfjob(running());
    let outcome = trainctl(&["describe", "mnist"], move |sent| match sent.path() {
        "/apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist" => Reply::Json(200, job.clone()),
        "/api/v1/namespaces/default/pods" => list(pods.clone()),
        "/apis/events.k8s.io/v1/namespaces/default/events" => list(job_events()),
        path => {
            let name = path.rsplit('/').next().unwrap_or_default();
            status(404, "NotFound", "not found", Some(name))
        }
    })
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::SUCCESS), "{}", outcome.stdout);
    let expected = format!(
        "\
Name:       mnist
Namespace:  default
Kind:       TFJob
UID:        uid-mnist
State:      Running
Created:    {created} (5m ago)
Started:    {started}
Spec:
  Chief:
    Replicas:        1
    Restart Policy:  Never
    Container:       tensorflow
    Image:           tf
    Command:         python train.py
  Worker:
    Replicas:        2
    Restart Policy:  OnFailure
    Container:       tensorflow
    Image:           tf
    Command:         python train.py
  Run Policy:
    Clean Pod Policy:            None
    Backoff Limit:               3
    Active Deadline Seconds:     <unset>
    TTL Seconds After Finished:  <unset>
    Suspend:                     false
    Priority Class:              <unset>
Replicas:
  REPLICA    STATE     EXIT   RESTARTS   NODE     PORT   GPUS   STARTED
  chief-0    Running   -      0          node-a   2222   -      {chief_started}
  worker-0   Failed    137    2          node-b   2222   2      {worker_started}
  worker-1   Pending   -      0          -        2222   -      -
Conditions:
  TYPE      STATUS   REASON         MESSAGE                           LAST TRANSITION
  Created   True     TFJobCreated   TFJob mnist is created.           {started}
  Running   True     TFJobRunning   TFJob default/mnist is running.   {started}
Events:
  AGE                TYPE      REASON                MESSAGE
  4m                 Normal    SuccessfulCreatePod   Created pod: mnist-chief-0
  60s (x2 over 4m)   Warning   TFJobRestarting       TFJob mnist is restarting because 1 Worker replica(s) failed.
",
        created = ago(300),
        started = ago(240),
        chief_started = ago(200),
        worker_started = ago(120),
    );
    assert_eq!(outcome.stdout, expected);
    let mut expected_requests = vec![
        "GET /api/v1/namespaces/default/pods?&labelSelector=training.kubeflow.org%2Fjob-name%3Dmnist%2Ctraining.kubeflow.org%2Foperator-name%3Dtfjob-controller".to_owned(),
        "GET /apis/events.k8s.io/v1/namespaces/default/events?&fieldSelector=regarding.uid%3Duid-mnist".to_owned(),
    ];
    expected_requests.extend(
        [
            "jaxjobs",
            "mpijobs",
            "mxjobs",
            "paddlejobs",
            "pytorchjobs",
            "tfjobs",
            "xgboostjobs",
        ]
        .map(|plural| format!("GET /apis/kubeflow.org/v1/namespaces/default/{plural}/mnist")),
    );
    expected_requests.sort();
    assert_eq!(sorted(&outcome.sent), expected_requests);
}

#[tokio::test]
async fn describe_a_name_that_several_kinds_have_asks_which() {
    let outcome = trainctl(&["describe", "mnist"], |sent| {
        match sent.path().split('/').nth(6) {
            Some("tfjobs") => Reply::Json(200, tfjob(running())),
            Some("pytorchjobs") => {
                let mut job = pytorchjob();
                job["metadata"]["name"] = json!("mnist");
                Reply::Json(200, job)
            }
            _ => status(404, "NotFound", "not found", Some("mnist")),
        }
    })
    .await;
    assert_eq!(
        outcome.code,
        Err(
            "several jobs are named \"mnist\" (tfjob, pytorchjob); say which: \
             `trainctl --kube describe KIND mnist`"
                .to_owned()
        )
    );
}
