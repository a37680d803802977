//! `logs` on a cluster: each pod's framework container, prefixed as on this machine.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

const POD_LIST: &str = "/api/v1/namespaces/default/pods";

/// The log of a pod, by name.
fn log_of(path: &str) -> Option<&'static str> {
    match path {
        "/api/v1/namespaces/default/pods/mnist-chief-0/log" => Some("step 1\nstep 2\n"),
        "/api/v1/namespaces/default/pods/mnist-worker-0/log" => Some("loss 0.5\nkilled"),
        _ => None,
    }
}

/// A chief that runs, a worker 0 that was killed, a worker 1 not started.
fn three_pods() -> Vec<Value> {
    vec![
        pod(
            "worker",
            1,
            "node-b",
            json!({"waiting": {"reason": "ContainerCreating"}}),
            0,
        ),
        pod("worker", 0, "node-b", exited(137, 120), 0),
        pod("chief", 0, "node-a", running_since(200), 0),
    ]
}

fn cluster_with_logs(sent: &Sent) -> Reply {
    if let Some(log) = log_of(sent.path()) {
        return Reply::Text(log.to_owned());
    }
    match sent.path() {
        "/apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist" => {
            Reply::Json(200, tfjob(running()))
        }
        POD_LIST => list(three_pods()),
        _ => status(404, "NotFound", "not found", Some("x")),
    }
}

#[tokio::test]
async fn logs_of_every_replica_are_prefixed_and_in_slot_order() {
    let outcome = trainctl(&["logs", "tfjob", "mnist"], cluster_with_logs).await;
    assert_eq!(outcome.code, Ok(ExitCode::SUCCESS));
    assert_eq!(
        outcome.stdout,
        "\
chief-0  | step 1
chief-0  | step 2
worker-0 | loss 0.5
worker-0 | killed
"
    );
    assert_eq!(
        requests(&outcome.sent),
        [
            "GET /apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist",
            "GET /api/v1/namespaces/default/pods?&labelSelector=training.kubeflow.org%2Fjob-name%3Dmnist%2Ctraining.kubeflow.org%2Foperator-name%3Dtfjob-controller",
            "GET /api/v1/namespaces/default/pods/mnist-chief-0/log?&container=tensorflow",
            "GET /api/v1/namespaces/default/pods/mnist-worker-0/log?&container=tensorflow",
        ]
    );
}

#[tokio::test]
async fn logs_of_one_replica_are_printed_as_they_are() {
    let outcome = trainctl(
        &["logs", "tfjob", "mnist", "--replica", "worker-0"],
        cluster_with_logs,
    )
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::SUCCESS));
    assert_eq!(outcome.stdout, "loss 0.5\nkilled");
}

#[tokio::test]
async fn logs_of_a_replica_the_job_does_not_have_list_those_it_has() {
    let outcome = trainctl(
        &["logs", "tfjob", "mnist", "--replica", "worker-7"],
        cluster_with_logs,
    )
    .await;
    assert_eq!(
        outcome.code,
        Err(
            "tfjob/mnist has no replica \"worker-7\" (it has: chief-0, worker-0, worker-1)"
                .to_owned()
        )
    );
}

#[tokio::test]
async fn followed_logs_stream_every_pod_until_the_job_finishes() {
    let lists = Arc::new(AtomicUsize::new(0));
    let finished = {
        let mut job = tfjob(conditions(&[
            ("Running", "False", ""),
            (
                "Succeeded",
                "True",
                "TFJob default/mnist successfully completed.",
            ),
        ]));
        job["metadata"]["resourceVersion"] = json!("8");
        job
    };
    let mut job_watched = false;
    let outcome = trainctl(&["logs", "tfjob", "mnist", "-f"], move |sent| {
        if let Some(log) = log_of(sent.path()) {
            return Reply::Text(log.to_owned());
        }
        let is_job = sent.path().contains("/tfjobs");
        match (is_job, sent.is_watch()) {
            (true, true) if !job_watched => {
                job_watched = true;
                events(&[("MODIFIED", finished.clone())])
            }
            (_, true) => Reply::Hang,
            (true, false) if sent.path().ends_with("/mnist") => Reply::Json(200, tfjob(running())),
            (true, false) => list(vec![tfjob(running())]),
            (false, false) => {
                // At first the chief runs; once the job has finished, it has exited too.
                if lists.fetch_add(1, Ordering::SeqCst) == 0 {
                    list(three_pods())
                } else {
                    list(vec![
                        pod("worker", 0, "node-b", exited(137, 120), 0),
                        pod("chief", 0, "node-a", exited(0, 200), 0),
                    ])
                }
            }
        }
    })
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::SUCCESS));
    let lines: Vec<&str> = outcome.stdout.lines().collect();
    let of = |prefix: &str| -> Vec<&str> {
        lines
            .iter()
            .copied()
            .filter(|line| line.starts_with(prefix))
            .collect()
    };
    assert_eq!(
        of("chief-0  | "),
        ["chief-0  | step 1", "chief-0  | step 2"]
    );
    assert_eq!(
        of("worker-0 | "),
        ["worker-0 | loss 0.5", "worker-0 | killed"]
    );
    assert_eq!(lines.len(), 4, "{}", outcome.stdout);
    let mut logs: Vec<&str> = outcome
        .sent
        .iter()
        .filter(|sent| sent.path().ends_with("/log"))
        .map(|sent| sent.uri.as_str())
        .collect();
    logs.sort_unstable();
    assert_eq!(
        logs,
        [
            "/api/v1/namespaces/default/pods/mnist-chief-0/log?&container=tensorflow&follow=true",
            "/api/v1/namespaces/default/pods/mnist-worker-0/log?&container=tensorflow&follow=true",
        ],
        "each container run is streamed once"
    );
}

/// `mnist` finished: Succeeded.
fn succeeded() -> Value {
    let mut job = tfjob(conditions(&[
        ("Running", "False", ""),
        (
            "Succeeded",
            "True",
            "TFJob default/mnist successfully completed.",
        ),
    ]));
    job["metadata"]["resourceVersion"] = json!("8");
    job
}

#[tokio::test]
async fn followed_logs_of_a_finished_job_print_every_log_to_its_end() {
    let outcome = trainctl(&["logs", "tfjob", "mnist", "-f"], |sent| {
        if let Some(log) = log_of(sent.path()) {
            return Reply::Text(log.to_owned());
        }
        match sent.path() {
            "/apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist" => {
                Reply::Json(200, succeeded())
            }
            POD_LIST => list(vec![
                pod("worker", 0, "node-b", exited(137, 120), 0),
                pod("chief", 0, "node-a", exited(0, 200), 0),
            ]),
            _ => status(404, "NotFound", "not found", Some("x")),
        }
    })
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::SUCCESS));
    let mut lines: Vec<&str> = outcome.stdout.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "chief-0  | step 1",
            "chief-0  | step 2",
            "worker-0 | killed",
            "worker-0 | loss 0.5",
        ]
    );
    // Nothing is watched: the job had finished already.
    assert!(
        !outcome.sent.iter().any(Sent::is_watch),
        "{:?}",
        outcome.sent
    );
}

#[tokio::test]
async fn followed_logs_stop_at_the_jobs_end_without_waiting_for_a_replica_left_running() {
    // The parameter server runs on after the job succeeded (cleanPodPolicy None); its log
    // stream would never end. The job's end is sent once that stream is open.
    let parameter_server = || pod("ps", 0, "node-c", running_since(200), 0);
    let outcome = trainctl(&["logs", "tfjob", "mnist", "-f"], move |sent| {
        let path = sent.path();
        if path == "/api/v1/namespaces/default/pods/mnist-ps-0/log" {
            return Reply::Release(
                Box::new(Reply::Hang),
                "job watch",
                Box::new(events(&[("MODIFIED", succeeded())])),
            );
        }
        if let Some(log) = log_of(path) {
            return Reply::Text(log.to_owned());
        }
        match (path.contains("/tfjobs"), sent.is_watch()) {
            (true, true) => Reply::Held("job watch"),
            (false, true) => Reply::Hang,
            (true, false) if path.ends_with("/mnist") => Reply::Json(200, tfjob(running())),
            (true, false) => list(vec![tfjob(running())]),
            (false, false) => list(vec![
                pod("chief", 0, "node-a", exited(0, 200), 0),
                parameter_server(),
            ]),
        }
    })
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::SUCCESS));
    assert_eq!(outcome.stdout, "chief-0  | step 1\nchief-0  | step 2\n");
}

#[tokio::test]
async fn logs_skip_a_pod_deleted_since_it_was_listed() {
    let outcome = trainctl(&["logs", "tfjob", "mnist"], |sent| {
        if sent.path() == "/api/v1/namespaces/default/pods/mnist-chief-0/log" {
            return status(
                404,
                "NotFound",
                "pods \"mnist-chief-0\" not found",
                Some("mnist-chief-0"),
            );
        }
        cluster_with_logs(sent)
    })
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::SUCCESS));
    assert_eq!(outcome.stdout, "worker-0 | loss 0.5\nworker-0 | killed\n");
}

#[tokio::test]
async fn the_flags_are_sent_as_the_pod_log_apis_parameters() {
    let outcome = trainctl(
        &[
            "logs",
            "tfjob",
            "mnist",
            "--replica",
            "worker-0",
            "--tail",
            "2",
            "--since",
            "5m",
            "--timestamps",
            "-p",
        ],
        cluster_with_logs,
    )
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::SUCCESS));
    assert_eq!(outcome.stdout, "loss 0.5\nkilled");
    assert_eq!(
        requests(&outcome.sent).last().map(String::as_str),
        Some(
            "GET /api/v1/namespaces/default/pods/mnist-worker-0/log?&container=tensorflow\
             &previous=true&sinceSeconds=300&tailLines=2&timestamps=true"
        )
    );
}

#[tokio::test]
async fn a_pods_name_is_its_job_and_replica_on_a_cluster_too() {
    let outcome = trainctl(&["logs", "mnist-worker-0"], |sent| {
        match (sent.path(), log_of(sent.path())) {
            (_, Some(log)) => Reply::Text(log.to_owned()),
            ("/api/v1/namespaces/default/pods/mnist-worker-0", None) => {
                Reply::Json(200, pod("worker", 0, "node-b", exited(137, 120), 0))
            }
            (path, None) if path.ends_with("/mnist-worker-0") => {
                status(404, "NotFound", "not found", Some("mnist-worker-0"))
            }
            _ => cluster_with_logs(sent),
        }
    })
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::SUCCESS));
    assert_eq!(outcome.stdout, "loss 0.5\nkilled");
    let asked: Vec<String> = requests(&outcome.sent)
        .into_iter()
        .filter(|request| !request.contains("/apis/kubeflow.org/v1/namespaces/default/pytorch"))
        .filter(|request| request.contains("tfjobs") || request.contains("/pods"))
        .collect();
    assert_eq!(
        asked,
        [
            "GET /apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist-worker-0",
            "GET /api/v1/namespaces/default/pods/mnist-worker-0",
            "GET /apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist",
            "GET /api/v1/namespaces/default/pods?&labelSelector=training.kubeflow.org%2Fjob-name%3Dmnist%2Ctraining.kubeflow.org%2Foperator-name%3Dtfjob-controller",
            "GET /api/v1/namespaces/default/pods/mnist-worker-0/log?&container=tensorflow",
        ]
    );
}

#[tokio::test]
async fn previous_of_a_container_that_did_not_restart_is_the_apis_refusal() {
    let refusal =
        "previous terminated container \"tensorflow\" in pod \"mnist-worker-0\" not found";
    let outcome = trainctl(
        &[
            "logs",
            "tfjob",
            "mnist",
            "--replica",
            "worker-0",
            "--previous",
        ],
        move |sent| {
            if sent.path().ends_with("/log") {
                return status(400, "BadRequest", refusal, None);
            }
            cluster_with_logs(sent)
        },
    )
    .await;
    assert_eq!(
        outcome.code,
        Err(format!(
            "cannot get pods/log in namespace \"default\": {refusal} (HTTP 400)"
        ))
    );
}

#[tokio::test]
async fn a_followed_container_that_restarts_is_printed_after_a_separator() {
    let restarted = {
        let mut worker = pod(
            "worker",
            0,
            "node-b",
            json!({"running": {"startedAt": "2026-11-26T10:00:05Z"}}),
            1,
        );
        worker["status"]["containerStatuses"][0]["lastState"] =
            json!({"terminated": {"exitCode": 1, "finishedAt": "2026-11-26T10:00:04Z"}});
        worker["metadata"]["resourceVersion"] = json!("9");
        worker
    };
    let logs = Arc::new(AtomicUsize::new(0));
    let lists = Arc::new(AtomicUsize::new(0));
    let pod_watches = Arc::new(AtomicUsize::new(0));
    let outcome = trainctl(
        &["logs", "tfjob", "mnist", "--replica", "worker-0", "-f"],
        {
            let restarted = restarted.clone();
            move |sent| {
                let path = sent.path();
                if path == "/api/v1/namespaces/default/pods/mnist-worker-0/log" {
                    return if logs.fetch_add(1, Ordering::SeqCst) == 0 {
                        Reply::Text("run 0\n".to_owned())
                    } else {
                        // The restarted container's log: then the job ends.
                        Reply::Release(
                            Box::new(Reply::Text("run 1\n".to_owned())),
                            "job watch",
                            Box::new(events(&[("MODIFIED", succeeded())])),
                        )
                    };
                }
                match (path.contains("/tfjobs"), sent.is_watch()) {
                    (true, true) => Reply::Held("job watch"),
                    // The container restarts.
                    (false, true) if pod_watches.fetch_add(1, Ordering::SeqCst) == 0 => {
                        events(&[("MODIFIED", restarted.clone())])
                    }
                    (false, true) => Reply::Hang,
                    (true, false) if path.ends_with("/mnist") => Reply::Json(200, tfjob(running())),
                    (true, false) => list(vec![tfjob(running())]),
                    // Listed by `logs`, then by the watch: the first run; once the job has
                    // finished: the second.
                    (false, false) => {
                        if lists.fetch_add(1, Ordering::SeqCst) < 2 {
                            list(vec![pod("worker", 0, "node-b", running_since(20), 0)])
                        } else {
                            list(vec![restarted.clone()])
                        }
                    }
                }
            }
        },
    )
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::SUCCESS));
    let mut lines: Vec<&str> = outcome.stdout.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "--- worker-0: restart 1 at 2026-11-26T10:00:05.000Z (the previous run exited with \
             code 1) ---",
            "run 0",
            "run 1",
        ],
        "{}",
        outcome.stdout
    );
}
