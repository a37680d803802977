//! Failures in the dashboard: the Jobs page says why a job failed, a failed job's page carries
//! a banner with the cause, and a replica that trainctl stopped when its job ended shows its
//! exit code plainly, where one that failed by itself has it marked.

use serde_json::Value;
use trainctl_cli_harness::manifest::{Replicas, tfjob};
use trainctl_cli_harness::server::{Server, state};

use super::browser::Browser;
use super::{address, job_state, submit};

#[tokio::test]
#[ignore = "needs chromium and chromedriver: run through ./scripts/test"]
async fn a_failed_job_says_why_in_the_list_and_on_its_page() {
    let server = Server::start(&[]);
    submit(
        &server,
        &tfjob(
            "broken",
            "",
            &[Replicas::workers(1, "exit 3").policy("Never")],
        ),
    );
    // The chief ends the job; the worker, still running, is stopped by trainctl.
    submit(
        &server,
        &tfjob(
            "chiefdone",
            "",
            &[
                Replicas::chief("sleep 0.5"),
                Replicas::workers(1, "sleep 60"),
            ],
        ),
    );
    let broken = server.wait_for("broken", "failed", |view| state(view) == "Failed");
    assert_eq!(broken["failure"], "worker-0 exited with code 3", "{broken}");
    server.wait_for("chiefdone", "succeeded with its worker stopped", |view| {
        state(view) == "Succeeded" && stopped_worker(view).is_some()
    });

    let browser = Browser::start().await;
    browser.open(&address(&server, "#/")).await;
    browser.wait_text(&job_state("broken"), "Failed").await;
    browser
        .wait_text(
            "tr[data-job=\"default/tfjobs/broken\"] td.reason",
            "worker-0 exited with code 3",
        )
        .await;
    browser.screenshot("failed-in-list").await;

    browser
        .open(&address(&server, "#/jobs/default/tfjobs/broken"))
        .await;
    browser
        .wait_text("p.failure-note", "Failed: worker-0 exited with code 3")
        .await;
    let marked = browser
        .until(
            "the failed replica's exit code",
            "const c = document.querySelector('tr[data-replica=\"worker-0\"] td.exit'); \
             return c && c.textContent.trim() === '3' ? c.classList.contains('bad') : null;",
        )
        .await;
    assert_eq!(marked, Value::Bool(true), "a failure's exit code is marked");
    browser.screenshot("failed-job").await;

    browser
        .open(&address(&server, "#/jobs/default/tfjobs/chiefdone"))
        .await;
    let stopped = browser
        .until(
            "the stopped worker's exit code",
            "const c = document.querySelector('tr[data-replica=\"worker-0\"] td.exit'); \
             return c && c.textContent.trim() !== '' \
                 ? { bad: c.classList.contains('bad'), title: c.title } : null;",
        )
        .await;
    assert_eq!(stopped["bad"], Value::Bool(false), "{stopped}");
    assert_eq!(
        stopped["title"], "stopped by trainctl when the job ended",
        "{stopped}"
    );
    let banner = browser
        .until(
            "the page without a failure banner",
            "return document.querySelector('nav.tabs') ? !document.querySelector('p.failure-note') : null;",
        )
        .await;
    assert_eq!(
        banner,
        Value::Bool(true),
        "a succeeded job has no failure banner"
    );
    browser.close().await;
}

/// The worker of `view` that trainctl stopped, with an exit code.
fn stopped_worker(view: &Value) -> Option<&Value> {
    view["replicas"].as_array()?.iter().find(|replica| {
        replica["name"] == "worker-0"
            && replica["state"] == "Stopped"
            && !replica["exitCode"].is_null()
    })
}
