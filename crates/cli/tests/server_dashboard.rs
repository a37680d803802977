//! The API behind the dashboard, on a real server: every job in one line (a crash-looping one
//! saying so, its alike events counted as one), the machine, a job's curves from its event files,
//! the event streams that carry each of them live, the token they all need, and `trainctl
//! dashboard`.

use std::time::Duration;

use serde_json::Value;
use trainctl_cli_harness::manifest::{Replicas, tfjob};
use trainctl_cli_harness::server::{Server, state};
use trainctl_cli_harness::sse::EventStream;
use trainctl_cli_harness::trainctl;
use trainctl_events::EventWriter;

const SOON: Duration = Duration::from_secs(20);

fn submit(server: &Server, manifest: &str) {
    let (status, body) = server.request("POST", "/api/v1/jobs", Some(manifest));
    assert_eq!(status, 201, "{body}");
}

fn summaries(server: &Server) -> Vec<Value> {
    let (status, body) = server.request("GET", "/api/v1/job-summaries", None);
    assert_eq!(status, 200, "{body}");
    body["items"].as_array().expect("items").clone()
}

fn named<'a>(items: &'a [Value], name: &str) -> &'a Value {
    items
        .iter()
        .find(|item| item["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {items:?}"))
}

/// One worker asking for a whole CPU, sleeping.
fn sleeper(name: &str) -> String {
    tfjob(
        name,
        "",
        &[Replicas::workers(1, "sleep 60").resources("{requests: {cpu: 1}}")],
    )
}

#[test]
fn each_job_is_one_line_with_its_replicas_queue_place_and_reason() {
    let server = Server::start(&["--cpus", "1"]);
    submit(&server, &sleeper("first"));
    server.wait_for("first", "running", |view| state(view) == "Running");
    submit(&server, &sleeper("second"));
    server.wait_for("second", "queued", |view| !view["waiting"].is_null());

    let items = summaries(&server);
    let first = named(&items, "first");
    assert_eq!(first["kind"], "TFJob");
    assert_eq!(first["plural"], "tfjobs");
    assert_eq!(first["namespace"], "default");
    assert_eq!(first["state"], "Running");
    assert_eq!(first["replicasReady"], 1);
    assert_eq!(first["replicasTotal"], 1);
    assert_eq!(first["restarts"], 0);
    assert_eq!(first["queuePosition"], Value::Null);
    assert!(first["started"].is_string(), "{first}");
    assert_eq!(first["finishedAt"], Value::Null);
    let second = named(&items, "second");
    assert_eq!(second["state"], "Pending");
    assert_eq!(second["queuePosition"], 1);
    assert_eq!(second["replicasReady"], 0);
    assert!(
        second["waiting"]
            .as_str()
            .is_some_and(|why| !why.is_empty()),
        "{second}"
    );

    let (status, machine) = server.request("GET", "/api/v1/machine", None);
    assert_eq!(status, 200, "{machine}");
    assert_eq!(machine["capacity"]["cpuMillis"], 1000);
    assert_eq!(machine["held"]["cpuMillis"], 1000);
    assert_eq!(machine["holders"][0]["name"], "first");
    assert_eq!(machine["holders"][0]["cpuMillis"], 1000);
    assert_eq!(machine["queue"][0]["position"], 1);
    assert_eq!(machine["queue"][0]["name"], "second");
    assert_eq!(machine["queue"][0]["plural"], "tfjobs");
    assert_eq!(machine["queue"][0]["reason"], second["waiting"]);
}

#[test]
fn a_crash_looping_job_says_so_in_its_line_and_its_alike_events_are_one_counted() {
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
    let exits = |view: &Value| -> Vec<Value> {
        view["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|event| event["reason"] == "ExitedWithCode")
            .cloned()
            .collect()
    };
    let view = server.wait_for("looping", "three exits", |view| {
        exits(view)
            .iter()
            .any(|event| event["count"].as_u64().is_some_and(|count| count >= 3))
    });
    let [exited] = exits(&view).try_into().expect("one ExitedWithCode event");
    assert_eq!(
        (&exited["type"], &exited["message"]),
        (
            &Value::from("Normal"),
            &Value::from("Pod: default.looping-worker-0 exited with code 3")
        ),
        "{view}"
    );
    let time = |field: &str| -> jiff::Timestamp {
        exited[field]
            .as_str()
            .and_then(|time| time.parse().ok())
            .unwrap_or_else(|| panic!("{field} in {exited}"))
    };
    assert!(time("firstTimestamp") < time("time"), "{exited}");
    let deadline = std::time::Instant::now() + SOON;
    loop {
        let items = summaries(&server);
        let looping = named(&items, "looping");
        if looping["reason"] == "CrashLoopBackOff" {
            assert_eq!(looping["state"], "Running", "{looping}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never CrashLoopBackOff: {looping}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_machine_says_which_replica_holds_each_gpu() {
    let server = Server::start(&["--gpus", "2"]);
    let manifest = tfjob(
        "gpu-user",
        "",
        &[Replicas::workers(1, "sleep 60").resources("{limits: {nvidia.com/gpu: 1}}")],
    );
    submit(&server, &manifest);
    server.wait_for("gpu-user", "running", |view| state(view) == "Running");
    let (status, machine) = server.request("GET", "/api/v1/machine", None);
    assert_eq!(status, 200, "{machine}");
    assert_eq!(machine["capacity"]["gpus"], 2);
    assert_eq!(machine["held"]["gpus"], 1);
    let gpus = machine["gpus"].as_array().expect("gpus");
    assert_eq!(gpus.len(), 2, "{machine}");
    let held: Vec<&Value> = gpus.iter().filter(|gpu| !gpu["holder"].is_null()).collect();
    assert_eq!(held.len(), 1, "{machine}");
    assert_eq!(held[0]["holder"]["name"], "gpu-user");
    assert_eq!(held[0]["holder"]["replica"], "worker-0");
    assert_eq!(named(&summaries(&server), "gpu-user")["gpus"], 1);
}

#[test]
fn the_jobs_stream_sends_the_list_at_once_then_each_change() {
    let server = Server::start(&[]);
    let stream = EventStream::open(
        &format!("{}/api/v1/watch/job-summaries", server.url),
        server.token(),
    );
    assert_eq!(stream.content_type, "text/event-stream");
    let first = stream.next(SOON).expect("a first event");
    assert_eq!(first.name, "jobs");
    assert_eq!(first.data, serde_json::json!({ "items": [] }));

    submit(
        &server,
        &tfjob("quick", "", &[Replicas::workers(2, "sleep 1")]),
    );
    let listed = stream.until("listing quick", SOON, |event| {
        event.name == "jobs" && event.data["items"][0]["name"] == "quick"
    });
    assert_eq!(listed.data["items"][0]["replicasTotal"], 2);
    let done = stream.until("saying quick succeeded", SOON, |event| {
        event.data["items"][0]["state"] == "Succeeded"
    });
    assert!(
        done.data["items"][0]["finishedAt"].is_string(),
        "{:?}",
        done.data
    );
}

#[test]
fn a_job_stream_follows_the_job_and_ends_when_it_is_deleted() {
    let server = Server::start(&[]);
    submit(
        &server,
        &tfjob("watched", "", &[Replicas::workers(1, "sleep 60")]),
    );
    let stream = EventStream::open(
        &format!(
            "{}/api/v1/watch/namespaces/default/tfjobs/watched",
            server.url
        ),
        server.token(),
    );
    let first = stream.next(SOON).expect("a first event");
    assert_eq!(first.name, "job");
    assert_eq!(first.data["name"], "watched");
    stream.until("running", SOON, |event| event.data["state"] == "Running");

    let (status, body) =
        server.request("DELETE", "/api/v1/namespaces/default/tfjobs/watched", None);
    assert_eq!(status, 200, "{body}");
    stream.until("deleted", SOON, |event| event.name == "deleted");
    assert!(
        stream.next(SOON).is_none(),
        "the stream ends after `deleted`"
    );
}

#[test]
fn watching_a_job_that_does_not_exist_is_404() {
    let server = Server::start(&[]);
    for path in [
        "/api/v1/watch/namespaces/default/tfjobs/nothing",
        "/api/v1/watch/namespaces/default/tfjobs/nothing/scalars",
        "/api/v1/namespaces/default/tfjobs/nothing/scalars",
    ] {
        let (status, body) = server.request("GET", path, None);
        assert_eq!(status, 404, "{path}: {body}");
        assert_eq!(body["error"], "TFJob default/nothing not found", "{path}");
    }
}

/// The uid of the TFJob `name`.
fn uid(server: &Server, name: &str) -> String {
    let (_, view) = server.job(name);
    view["uid"].as_str().expect("uid").to_owned()
}

#[test]
fn curves_come_from_the_jobs_event_files_downsampled_and_follow_them() {
    let server = Server::start(&[]);
    submit(
        &server,
        &tfjob("curvy", "", &[Replicas::workers(1, "sleep 60")]),
    );
    let dir = server
        .state_dir()
        .join("tensorboard")
        .join(uid(&server, "curvy"));
    let path = "/api/v1/namespaces/default/tfjobs/curvy/scalars";

    let (status, empty) = server.request("GET", path, None);
    assert_eq!(status, 200, "{empty}");
    assert_eq!(empty["series"], serde_json::json!([]));
    assert_eq!(empty["env"], "TRAINCTL_TENSORBOARD_DIR");
    assert_eq!(empty["roots"][0], dir.to_str().expect("UTF-8"));

    let mut writer = EventWriter::create(&dir.join("train")).expect("an event file");
    for step in 0..5_000_u16 {
        let value = 1.0 / (f32::from(step) + 1.0);
        writer
            .scalar("loss", step.into(), 1e9 + f64::from(step), value)
            .expect("write");
    }
    writer.flush().expect("flush");

    let (status, curves) = server.request("GET", &format!("{path}?points=100"), None);
    assert_eq!(status, 200, "{curves}");
    let series = &curves["series"][0];
    assert_eq!(series["run"], "train");
    assert_eq!(series["tag"], "loss");
    assert_eq!(series["total"], 5_000);
    let points = series["points"].as_array().expect("points");
    assert_eq!(points.len(), 100);
    // Downsampling keeps the ends.
    assert_eq!(points[0], serde_json::json!([0.0, 1e9, 1.0]));
    assert_eq!(points[99][0], 4_999.0);

    let stream = EventStream::open(
        &format!(
            "{}/api/v1/watch/namespaces/default/tfjobs/curvy/scalars?points=100",
            server.url
        ),
        server.token(),
    );
    let first = stream.next(SOON).expect("a first event");
    assert_eq!(first.name, "scalars");
    assert_eq!(first.data["series"][0]["total"], 5_000);
    for step in 5_000..5_010_u16 {
        writer
            .scalar("loss", step.into(), 1e9 + f64::from(step), 0.5)
            .expect("write");
    }
    writer.flush().expect("flush");
    stream.until("with the points appended", SOON, |event| {
        event.data["series"][0]["total"] == 5_010
    });
}

#[test]
fn no_dashboard_data_without_the_token_and_the_page_holds_none() {
    let server = Server::start(&[]);
    submit(
        &server,
        &tfjob("secret-name", "", &[Replicas::workers(1, "sleep 60")]),
    );
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    for path in [
        "/api/v1/dashboard",
        "/api/v1/job-summaries",
        "/api/v1/machine",
        "/api/v1/watch/job-summaries",
        "/api/v1/watch/machine",
        "/api/v1/watch/namespaces/default/tfjobs/secret-name",
        "/api/v1/watch/namespaces/default/tfjobs/secret-name/scalars",
        "/api/v1/namespaces/default/tfjobs/secret-name/scalars",
    ] {
        for token in [None, Some("Bearer wrong")] {
            let mut request = agent.get(&format!("{}{path}", server.url));
            if let Some(token) = token {
                request = request.header("Authorization", token);
            }
            let response = request.call().expect("the server answers");
            assert_eq!(response.status().as_u16(), 401, "{path} with {token:?}");
            let body = response.into_body().read_to_string().expect("body");
            assert!(!body.contains("secret-name"), "{path}: {body}");
        }
    }
    let response = agent
        .get(&format!("{}/", server.url))
        .call()
        .expect("the page");
    assert_eq!(response.status().as_u16(), 200);
    let page = response.into_body().read_to_string().expect("page");
    assert!(page.contains("<div id=\"app\">"), "{page}");
    assert!(!page.contains("secret-name"), "{page}");
}

/// Exchanges a login code for the token: the status and the body.
fn login(server: &Server, code: &str) -> (u16, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let response = agent
        .post(&format!("{}/api/v1/dashboard/login", server.url))
        .header("Content-Type", "application/json")
        .send(serde_json::json!({ "code": code }).to_string())
        .expect("the server answers");
    let status = response.status().as_u16();
    let body = response.into_body().read_to_string().expect("body");
    (status, serde_json::from_str(&body).expect("JSON"))
}

#[test]
fn trainctl_dashboard_prints_an_address_with_a_login_code_good_once() {
    let server = Server::start(&[]);
    let state = server.state_dir().to_str().expect("UTF-8").to_owned();
    let printed = trainctl(&["--state-dir", &state, "dashboard", "--no-browser"]);
    assert_eq!(printed.code, Some(0), "{}", printed.stderr);
    let prefix = format!("{}/#code=", server.url);
    let code = printed
        .stdout
        .strip_prefix(&prefix)
        .and_then(|rest| rest.strip_suffix('\n'))
        .unwrap_or_else(|| panic!("{prefix}CODE expected: {}", printed.stdout));
    assert_eq!(code.len(), 64, "{code}");
    assert!(
        !printed.stdout.contains(server.token()),
        "the token is in no address"
    );
    assert!(
        printed.stderr.contains("Open that address"),
        "{}",
        printed.stderr
    );

    let (status, body) = login(&server, code);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["token"], server.token());
    let (status, body) = login(&server, code);
    assert_eq!(status, 401, "{body}");
    let refused = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .new_agent()
        .post(&format!("{}/api/v1/dashboard/login", server.url))
        .send("not JSON")
        .expect("the server answers");
    assert_eq!(refused.status().as_u16(), 400);
    assert_eq!(
        body["error"],
        "this login code is unknown, used or expired: `trainctl dashboard` gives a new address"
    );

    drop(server);
    let none = trainctl(&["--state-dir", &state, "dashboard", "--no-browser"]);
    assert_eq!(none.code, Some(1), "{}", none.stdout);
    assert!(
        none.stderr
            .contains("no trainctl server is running for state directory"),
        "{}",
        none.stderr
    );
}

#[test]
fn the_server_prints_a_login_link_at_its_start_not_its_token() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let state = tempfile::tempdir().expect("temp dir");
    let mut child = Command::new(trainctl_cli_harness::binary())
        .arg("--state-dir")
        .arg(state.path())
        .args(["server", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the server");
    let stderr = child.stderr.take().expect("piped");
    let line = BufReader::new(stderr)
        .lines()
        .map(|line| line.expect("the server's log"))
        .find(|line| line.starts_with("dashboard: "))
        .expect("a dashboard line");
    let token = std::fs::read_to_string(state.path().join("server.token")).expect("token");
    assert!(!line.contains(token.trim()), "{line}");
    let code = line
        .split("#code=")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("a login code in {line}"))
        .to_owned();
    assert!(line.contains("one use within 15 minutes"), "{line}");
    let address: Value = serde_json::from_slice(
        &std::fs::read(state.path().join("server.json")).expect("server.json"),
    )
    .expect("JSON");
    let url = address["url"].as_str().expect("url");
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let response = agent
        .post(&format!("{url}/api/v1/dashboard/login"))
        .header("Content-Type", "application/json")
        .send(serde_json::json!({ "code": code }).to_string())
        .expect("the server answers");
    assert_eq!(response.status().as_u16(), 200);
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let _ = child.wait();
}
