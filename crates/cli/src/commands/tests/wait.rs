//! `wait` on a cluster: it watches the job; exit codes as on this machine.

use super::*;

/// Answers the GET and the list of the TFJob `mnist` with `first` (other kinds have no job of
/// that name), then its watch with `changes` (a body of watch events), and leaves the next
/// watch open.
fn watched(first: Value, changes: Reply) -> impl FnMut(&Sent) -> Reply + Send + 'static {
    let mut changes = Some(changes);
    move |sent| {
        if sent.is_watch() {
            changes.take().unwrap_or(Reply::Hang)
        } else if sent.path().ends_with("/tfjobs/mnist") {
            Reply::Json(200, first.clone())
        } else if sent.path().ends_with("/mnist") {
            status(404, "NotFound", "not found", Some("mnist"))
        } else {
            list(vec![first.clone()])
        }
    }
}

fn succeeded() -> Value {
    let mut job = tfjob(conditions(&[
        ("Created", "True", "TFJob mnist is created."),
        ("Running", "False", "TFJob default/mnist is running."),
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
async fn wait_ends_when_the_watched_job_meets_the_condition() {
    let outcome = trainctl(
        &[
            "wait",
            "tfjob",
            "mnist",
            "--for",
            "condition=Succeeded",
            "--timeout",
            "1m",
        ],
        watched(tfjob(running()), events(&[("MODIFIED", succeeded())])),
    )
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::SUCCESS));
    assert_eq!(outcome.stdout, "tfjob.kubeflow.org/mnist condition met\n");
    assert_eq!(
        requests(&outcome.sent)[..3],
        [
            "GET /apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist",
            "GET /apis/kubeflow.org/v1/namespaces/default/tfjobs?&fieldSelector=metadata.name%3Dmnist&limit=500",
            "GET /apis/kubeflow.org/v1/namespaces/default/tfjobs?&watch=true&timeoutSeconds=290&fieldSelector=metadata.name%3Dmnist&allowWatchBookmarks=true&resourceVersion=100",
        ]
    );
}

#[tokio::test]
async fn wait_for_success_of_a_job_that_failed_says_why_it_never_will() {
    let failed = tfjob(conditions(&[
        ("Running", "False", ""),
        (
            "Failed",
            "True",
            "TFJob default/mnist has failed because 1 Worker replica(s) failed.",
        ),
    ]));
    let outcome = trainctl(
        &["wait", "mnist", "--for", "condition=Succeeded"],
        watched(tfjob(running()), events(&[("MODIFIED", failed)])),
    )
    .await;
    assert_eq!(
        outcome.code,
        Err(
            "tfjobs/mnist finished with condition Failed (TFJob default/mnist has failed \
             because 1 Worker replica(s) failed.), so condition=Succeeded will never be met"
                .to_owned()
        )
    );
}

#[tokio::test]
async fn wait_times_out_when_nothing_changes() {
    let outcome = trainctl(
        &[
            "wait",
            "tfjob",
            "mnist",
            "--for",
            "condition=Succeeded",
            "--timeout",
            "200ms",
        ],
        watched(tfjob(running()), Reply::Hang),
    )
    .await;
    assert_eq!(
        outcome.code,
        Err("timed out waiting for the condition on tfjobs/mnist".to_owned())
    );
}

#[tokio::test]
async fn wait_with_zero_timeout_looks_once() {
    let outcome = trainctl(
        &[
            "wait",
            "tfjob",
            "mnist",
            "--for",
            "condition=Running",
            "--timeout",
            "0s",
        ],
        watched(tfjob(running()), Reply::Hang),
    )
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::SUCCESS));
    assert_eq!(
        requests(&outcome.sent),
        ["GET /apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist"]
    );
}

#[tokio::test]
async fn wait_for_delete_ends_when_the_job_is_deleted() {
    let outcome = trainctl(
        &[
            "wait",
            "tfjob",
            "mnist",
            "--for",
            "delete",
            "--timeout",
            "1m",
        ],
        watched(tfjob(running()), events(&[("DELETED", tfjob(running()))])),
    )
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::SUCCESS));
    assert_eq!(outcome.stdout, "tfjob.kubeflow.org/mnist condition met\n");
}

#[tokio::test]
async fn wait_for_a_condition_of_a_job_replaced_by_another_of_its_name_never_ends_well() {
    let mut other = tfjob(running());
    other["metadata"]["uid"] = json!("uid-new");
    let outcome = trainctl(
        &[
            "wait",
            "tfjob",
            "mnist",
            "--for",
            "condition=Succeeded",
            "--timeout",
            "1m",
        ],
        watched(tfjob(running()), events(&[("ADDED", other)])),
    )
    .await;
    assert_eq!(
        outcome.code,
        Err("tfjobs/mnist was deleted while waiting".to_owned())
    );
}
