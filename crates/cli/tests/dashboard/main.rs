//! The dashboard in a real browser (headless Chromium through chromedriver, [`browser`]) against
//! a real `trainctl server`: the Jobs page follows three jobs and says which one crash loops, the
//! Job page shows replicas, the conditions' timeline, live logs and alike events counted as one,
//! suspend from the page suspends, the Curves page draws what a real TensorFlow job's
//! `TensorBoard` callback wrote and its smoothing, log axis and comparison of jobs work
//! ([`curves`]), the Machine page shows who holds each GPU, and a page
//! without the token shows nothing. Each test saves screenshots of the pages it saw
//! (`browser::screenshots_dir`). Beside them, `trainctl tensorboard` starts the real TensorBoard
//! on two jobs ([`tensorboard`]).
//!
//! Ignored by a plain `cargo test`: they need Chromium and chromedriver (`scripts/browser-env`
//! installs them), and the TensorFlow curves test and the TensorBoard one need the examples'
//! environment (`TRAINCTL_EXAMPLES_PATH`, as the examples);
//! `./scripts/test` runs them. By hand:
//!
//! ```sh
//! scripts/browser-env && TRAINCTL_EXAMPLES_PATH=$(scripts/python-env) \
//!     cargo test -p trainctl --test dashboard -- --ignored --test-threads 1
//! ```

mod browser;
mod curves;
mod failures;
mod tensorboard;

use std::path::{Path, PathBuf};
use std::time::Duration;

use browser::Browser;
use serde_json::{Value, json};
use trainctl_cli_harness::manifest::{Replicas, tfjob};
use trainctl_cli_harness::server::{Server, state};

fn submit(server: &Server, manifest: &str) {
    let (status, body) = server.request("POST", "/api/v1/jobs", Some(manifest));
    assert_eq!(status, 201, "{body}");
}

/// The page's address with the token, at `route` (`#/machine`).
fn address(server: &Server, route: &str) -> String {
    format!(
        "{}/#token={}{}",
        server.url,
        server.token(),
        route.trim_start_matches('#')
    )
}

/// `tr[data-job="default/tfjobs/NAME"] td.state`.
fn job_state(name: &str) -> String {
    format!("tr[data-job=\"default/tfjobs/{name}\"] td.state")
}

/// A file the test creates when its job may go on: the shell of [`Gate::wait`] in a replica's
/// script waits for it.
struct Gate {
    dir: tempfile::TempDir,
}

impl Gate {
    fn new() -> Gate {
        Gate {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// The shell that waits for the gate to open.
    fn wait(&self) -> String {
        let path = self.dir.path().join("open");
        format!("while [ ! -e {} ]; do sleep 0.1; done", path.display())
    }

    fn open(&self) {
        std::fs::write(self.dir.path().join("open"), "").expect("open the gate");
    }
}

#[tokio::test]
#[ignore = "needs chromium and chromedriver: run through ./scripts/test"]
async fn the_jobs_page_lists_jobs_in_their_states_and_follows_one_that_finishes() {
    let server = Server::start(&[]);
    let gate = Gate::new();
    submit(&server, &tfjob("done", "", &[Replicas::workers(1, "true")]));
    submit(
        &server,
        &tfjob("broken", "", &[Replicas::workers(1, "exit 3")]),
    );
    let running = gate.wait();
    submit(
        &server,
        &tfjob("running", "", &[Replicas::workers(2, &running)]),
    );
    server.wait_for("done", "succeeded", |view| state(view) == "Succeeded");
    server.wait_for("broken", "failed", |view| state(view) == "Failed");
    server.wait_for("running", "running", |view| state(view) == "Running");

    let browser = Browser::start().await;
    browser.open(&address(&server, "#/")).await;
    browser.wait_text(&job_state("done"), "Succeeded").await;
    browser.wait_text(&job_state("broken"), "Failed").await;
    browser.wait_text(&job_state("running"), "Running").await;
    // The token left the address bar.
    let location = browser.until("the address", "return location.href;").await;
    assert!(!location.to_string().contains("token"), "{location}");
    browser.screenshot("jobs").await;

    // No reload: a mark left on the page is still there when the job has finished.
    browser
        .client
        .execute("window.stillHere = true;", Vec::new())
        .await
        .expect("mark the page");
    gate.open();
    browser.wait_text(&job_state("running"), "Succeeded").await;
    let still = browser
        .until("the mark", "return window.stillHere === true;")
        .await;
    assert_eq!(still, json!(true));
    browser.close().await;
}

#[tokio::test]
#[ignore = "needs chromium and chromedriver: run through ./scripts/test"]
async fn a_crash_loop_says_so_in_the_jobs_line_and_is_one_counted_line_of_events() {
    let server = Server::start(&[
        "--restart-backoff",
        "200ms",
        "--restart-backoff-max",
        "200ms",
    ]);
    submit(
        &server,
        &tfjob(
            "looping",
            "",
            &[Replicas::workers(1, "exit 3").policy("OnFailure")],
        ),
    );
    let browser = Browser::start().await;
    browser.open(&address(&server, "#/")).await;
    browser
        .wait_text(
            "tr[data-job=\"default/tfjobs/looping\"] td.waiting",
            "CrashLoopBackOff",
        )
        .await;
    browser.wait_text(&job_state("looping"), "Running").await;
    browser.screenshot("crash-loop-jobs").await;

    browser
        .open(&address(&server, "#/jobs/default/tfjobs/looping"))
        .await;
    // Every exit one row, counted: `(x3 over 1s)`, the count growing as it goes on.
    let exits = "table#events tr[data-reason=\"ExitedWithCode\"]";
    let counted = browser
        .until(
            "one ExitedWithCode row of three or more",
            &format!(
                "const rows = document.querySelectorAll('{exits}'); \
                 const count = rows.length === 1 && rows[0].querySelector('.count'); \
                 const said = count && /^\\(x(\\d+) over \\d+s\\)$/.exec(count.textContent); \
                 return said && Number(said[1]) >= 3 && rows[0].textContent;"
            ),
        )
        .await;
    let counted = counted.as_str().unwrap_or_default().to_owned();
    assert!(
        counted.contains("Pod: default.looping-worker-0 exited with code 3"),
        "{counted}"
    );
    let back_offs =
        "return document.querySelectorAll('table#events tr[data-reason=\"BackOff\"]').length;";
    assert_eq!(browser.until("the BackOff rows", back_offs).await, json!(1));
    browser
        .client
        .execute(
            "document.querySelector('table#events').scrollIntoView();",
            Vec::new(),
        )
        .await
        .expect("scroll to the events");
    browser.screenshot("crash-loop-events").await;
    browser.close().await;
}

#[tokio::test]
#[ignore = "needs chromium and chromedriver: run through ./scripts/test"]
async fn the_jobs_table_shows_fifty_jobs_a_page() {
    let server = Server::start(&[]);
    let manifest = (0..60)
        .map(|index| {
            tfjob(
                &format!("job-{index:02}"),
                "",
                &[Replicas::workers(1, "true")],
            )
            .replacen("spec:\n", "spec:\n  runPolicy: {suspend: true}\n", 1)
        })
        .collect::<Vec<_>>()
        .join("---\n");
    submit(&server, &manifest);
    let browser = Browser::start().await;
    browser.open(&address(&server, "#/")).await;
    browser.wait_text("#jobs-pages span", "1–50 of 60").await;
    let rows = "return document.querySelectorAll('table#jobs tr[data-job]').length;";
    assert_eq!(browser.until("the rows", rows).await, json!(50));
    browser.click("#page-next").await;
    browser.wait_text("#jobs-pages span", "51–60 of 60").await;
    assert_eq!(browser.until("the rows", rows).await, json!(10));
    browser.close().await;
}

#[tokio::test]
#[ignore = "needs chromium and chromedriver: run through ./scripts/test"]
async fn the_job_page_shows_replicas_the_timeline_and_live_logs() {
    let server = Server::start(&[]);
    let gate = Gate::new();
    let script = format!(
        "for i in 1 2 3; do echo \"line $i\"; done\n{}\necho \"after the gate\"\nsleep 60",
        gate.wait()
    );
    submit(
        &server,
        &tfjob("talker", "", &[Replicas::workers(2, &script)]),
    );
    server.wait_for("talker", "running", |view| state(view) == "Running");

    let browser = Browser::start().await;
    browser
        .open(&address(&server, "#/jobs/default/tfjobs/talker"))
        .await;
    for replica in ["worker-0", "worker-1"] {
        browser
            .wait_text(
                &format!("tr[data-replica=\"{replica}\"] td.state"),
                "Running",
            )
            .await;
    }
    for condition in ["Created", "Running"] {
        browser
            .text(&format!("ol#timeline li[data-condition=\"{condition}\"]"))
            .await;
    }
    browser.screenshot("job").await;

    browser
        .click("a[href=\"#/jobs/default/tfjobs/talker/logs\"]")
        .await;
    browser
        .until(
            "the first lines of both replicas",
            "const t = document.querySelector('pre#logs')?.textContent || ''; \
             return t.includes('worker-0 | line 3') && t.includes('worker-1 | line 3');",
        )
        .await;
    // Lines written after the page showed the first ones arrive without a reload.
    gate.open();
    browser
        .until(
            "the lines written after the gate opened",
            "const t = document.querySelector('pre#logs')?.textContent || ''; \
             return t.includes('worker-0 | after the gate') \
                 && t.includes('worker-1 | after the gate');",
        )
        .await;
    browser.screenshot("logs").await;
    browser.close().await;
}

#[tokio::test]
#[ignore = "needs chromium and chromedriver: run through ./scripts/test"]
async fn suspend_from_the_page_suspends_the_job() {
    let server = Server::start(&[]);
    submit(
        &server,
        &tfjob("pausable", "", &[Replicas::workers(1, "sleep 60")]),
    );
    server.wait_for("pausable", "running", |view| state(view) == "Running");

    let browser = Browser::start().await;
    browser
        .open(&address(&server, "#/jobs/default/tfjobs/pausable"))
        .await;
    browser.click("#action-suspend").await;
    browser.click("#confirm-yes").await;
    server.wait_for("pausable", "suspended", |view| state(view) == "Suspended");
    browser.text("#action-resume").await;
    browser.close().await;
}

#[tokio::test]
#[ignore = "needs chromium and chromedriver: run through ./scripts/test"]
async fn a_login_link_opens_the_page_once() {
    let server = Server::start(&[]);
    submit(
        &server,
        &tfjob("visible", "", &[Replicas::workers(1, "sleep 60")]),
    );
    let (status, issued) = server.request("POST", "/api/v1/dashboard/codes", None);
    assert_eq!(status, 201, "{issued}");
    let link = format!(
        "{}/#code={}",
        server.url,
        issued["code"].as_str().expect("a code")
    );

    let browser = Browser::start().await;
    browser.open(&link).await;
    browser.text(&job_state("visible")).await;
    let location = browser.until("the address", "return location.href;").await;
    assert!(!location.to_string().contains("code"), "{location}");
    browser.close().await;

    // Another browser (another profile: no token kept) cannot use the same link.
    let other = Browser::start().await;
    other.open(&link).await;
    let said = other.text("#auth-error").await;
    assert!(said.contains("used already or has expired"), "{said}");
    other.close().await;
}

#[tokio::test]
#[ignore = "needs chromium and chromedriver: run through ./scripts/test"]
async fn without_the_token_the_page_shows_no_data() {
    let server = Server::start(&[]);
    submit(
        &server,
        &tfjob("hidden", "", &[Replicas::workers(1, "sleep 60")]),
    );
    let browser = Browser::start().await;
    browser.open(&format!("{}/", server.url)).await;
    let said = browser.text("#auth-error").await;
    assert!(said.contains("trainctl dashboard"), "{said}");
    let body = browser
        .until(
            "the page's text",
            "return document.body.textContent || ' ';",
        )
        .await;
    assert!(!body.to_string().contains("hidden"), "{body}");
    browser.close().await;
}

#[tokio::test]
#[ignore = "needs chromium and chromedriver: run through ./scripts/test"]
async fn the_machine_page_shows_who_holds_each_gpu() {
    let server = Server::start(&["--gpus", "2", "--cpus", "2"]);
    let holder = tfjob(
        "gpu-holder",
        "",
        &[Replicas::workers(1, "sleep 60").resources("{limits: {nvidia.com/gpu: 1, cpu: 2}}")],
    );
    submit(&server, &holder);
    server.wait_for("gpu-holder", "running", |view| state(view) == "Running");
    submit(
        &server,
        &tfjob(
            "behind",
            "",
            &[Replicas::workers(1, "true").resources("{requests: {cpu: 1}}")],
        ),
    );
    let browser = Browser::start().await;
    browser.open(&address(&server, "#/machine")).await;
    let held = browser.text("table#gpus tr[data-gpu=\"0\"]").await;
    assert!(
        held.contains("gpu-holder") && held.contains("worker-0"),
        "{held}"
    );
    let free = browser.text("table#gpus tr[data-gpu=\"1\"]").await;
    assert!(free.contains("free"), "{free}");
    let queue = browser.text("table#queue").await;
    assert!(queue.contains("behind"), "{queue}");
    browser.screenshot("machine").await;
    browser.close().await;
}

/// The bin directory of the virtualenv with TensorFlow (`scripts/python-env`).
fn examples_path() -> PathBuf {
    PathBuf::from(std::env::var_os("TRAINCTL_EXAMPLES_PATH").unwrap_or_else(|| {
        panic!(
            "TRAINCTL_EXAMPLES_PATH is not set: it names the bin directory of a virtualenv with \
             TensorFlow (TRAINCTL_EXAMPLES_PATH=$(scripts/python-env))"
        )
    }))
}

#[tokio::test]
#[ignore = "needs chromium, chromedriver and TensorFlow: run through ./scripts/test"]
async fn the_curves_page_draws_what_a_tensorflow_job_wrote() {
    let python = examples_path().join("python");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/dashboard/keras_curves.py");
    let command = format!("EPOCHS=6 {} {}", python.display(), script.display());
    let server = Server::start(&[]);
    submit(
        &server,
        &tfjob("keras", "", &[Replicas::workers(1, &command)]),
    );
    let view = server.wait_for_within("keras", "finished", Duration::from_secs(180), |view| {
        view["finished"] == Value::Bool(true)
    });
    assert_eq!(state(&view), "Succeeded", "{view}");

    let browser = Browser::start().await;
    browser
        .open(&address(&server, "#/jobs/default/tfjobs/keras/curves"))
        .await;
    let drawn = browser
        .until(
            "the epoch_loss chart",
            "const e = document.querySelector('div.chart[data-tag=\"epoch_loss\"]'); \
             return e && e.dataset.points;",
        )
        .await;
    let drawn: Value = serde_json::from_str(drawn.as_str().expect("text")).expect("JSON");
    assert_eq!(drawn, json!({ "train": 6, "validation": 6 }));
    browser.screenshot("curves").await;
    browser.close().await;
}
