//! The server says what it does: one line per transition of a job on its log, with the fields
//! `job`, `event` and the event's own (`docs/server.md`, "What the server logs").

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A server whose log (stderr) goes to a file; stopped with `SIGTERM` when dropped.
struct LoggingServer {
    child: Child,
    url: String,
    token: String,
    log: std::path::PathBuf,
    _state: tempfile::TempDir,
    _logs: tempfile::TempDir,
}

impl LoggingServer {
    fn start(extra: &[&str]) -> LoggingServer {
        let state = tempfile::tempdir().expect("tempdir");
        let logs = tempfile::tempdir().expect("tempdir");
        let log = logs.path().join("server.log");
        let child = Command::new(trainctl_cli_harness::binary())
            .arg("--state-dir")
            .arg(state.path())
            .arg("server")
            .args(extra)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("create the log file"))
            .spawn()
            .expect("start the server");
        let address = state.path().join("server.json");
        let started = Instant::now();
        while !address.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "no server.json"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let json: Value = serde_json::from_slice(&std::fs::read(&address).expect("read"))
            .expect("server.json is JSON");
        let token = std::fs::read_to_string(state.path().join("server.token")).expect("token");
        LoggingServer {
            child,
            url: json["url"].as_str().expect("url").to_owned(),
            token,
            log,
            _state: state,
            _logs: logs,
        }
    }

    fn request(&self, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let url = format!("{}{path}", self.url);
        let auth = format!("Bearer {}", self.token);
        let response = match (method, body) {
            ("POST", Some(body)) => agent.post(&url).header("Authorization", &auth).send(body),
            ("POST", None) => agent.post(&url).header("Authorization", &auth).send_empty(),
            ("DELETE", _) => agent.delete(&url).header("Authorization", &auth).call(),
            _ => agent.get(&url).header("Authorization", &auth).call(),
        }
        .expect("the server answers");
        let status = response.status().as_u16();
        let text = response.into_body().read_to_string().expect("body");
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// Polls the TFJob `name` until `done` holds for its view.
    fn wait_for(&self, name: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let started = Instant::now();
        loop {
            let (status, view) = self.request(
                "GET",
                &format!("/api/v1/namespaces/default/tfjobs/{name}"),
                None,
            );
            if status == 200 && done(&view) {
                return view;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{name}: never {what}; last {status} {view}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The job transitions on the log so far, as their fields.
    fn transitions(&self) -> Vec<BTreeMap<String, String>> {
        std::fs::read_to_string(&self.log)
            .expect("read the log")
            .lines()
            .filter_map(fields)
            .collect()
    }

    /// The job transitions on the log once there are `count` of them (at most 10 s later).
    fn transitions_when(&self, count: usize) -> Vec<BTreeMap<String, String>> {
        let started = Instant::now();
        loop {
            let transitions = self.transitions();
            if transitions.len() >= count || started.elapsed() > Duration::from_secs(10) {
                return transitions;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The `event` of each transition.
fn events(transitions: &[BTreeMap<String, String>]) -> Vec<&str> {
    transitions
        .iter()
        .map(|fields| fields["event"].as_str())
        .collect()
}

impl Drop for LoggingServer {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// The fields of a log line about a job transition (one with an `event` field), from the text
/// format (`... job="tfjob/default/x" event="queued" priority=0`) or the JSON one; `None` for
/// other lines.
fn fields(line: &str) -> Option<BTreeMap<String, String>> {
    if line.starts_with('{') {
        let json: serde_json::Map<String, Value> = serde_json::from_str(line).ok()?;
        json.get("event")?;
        return Some(
            json.into_iter()
                .map(|(key, value)| match value {
                    Value::String(text) => (key, text),
                    other => (key, other.to_string()),
                })
                .collect(),
        );
    }
    let start = line.find(" job=\"")? + 1;
    let mut rest = &line[start..];
    let mut fields = BTreeMap::new();
    while let Some((key, after)) = rest.split_once('=') {
        let (value, next) = if let Some(quoted) = after.strip_prefix('"') {
            let end = closing_quote(quoted)?;
            let value: String = serde_json::from_str(&format!("\"{}\"", &quoted[..end])).ok()?;
            (value, &quoted[end + 1..])
        } else {
            let end = after.find(' ').unwrap_or(after.len());
            (after[..end].to_owned(), &after[end..])
        };
        fields.insert(key.trim().to_owned(), value);
        rest = next.trim_start();
    }
    fields.contains_key("event").then_some(fields)
}

/// Where the quoted text that `quoted` begins ends (its closing `"`, escapes skipped).
fn closing_quote(quoted: &str) -> Option<usize> {
    let mut escaped = false;
    for (at, character) in quoted.char_indices() {
        match character {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => return Some(at),
            _ => escaped = false,
        }
    }
    None
}

/// Only `keys` of a transition's fields.
fn only(fields: &BTreeMap<String, String>, keys: &[&str]) -> Vec<(String, String)> {
    keys.iter()
        .map(|key| {
            (
                (*key).to_owned(),
                fields
                    .get(*key)
                    .cloned()
                    .unwrap_or_else(|| "<none>".to_owned()),
            )
        })
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect()
}

/// A TFJob whose worker fails with code 3 the first time (`OnFailure` restarts it in place),
/// then succeeds.
fn flaky(name: &str, mark: &Path) -> String {
    let mark = mark.to_str().expect("a UTF-8 path");
    format!(
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: {name}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: tensorflow
              image: busybox
              command: [sh, -c, 'if [ -e {mark} ]; then exit 0; fi; touch {mark}; exit 3']
"
    )
}

#[test]
fn the_log_says_each_transition_of_a_job_with_its_fields() {
    let scratch = tempfile::tempdir().expect("tempdir");
    // In JSON, each field of a transition a field of the line's object (the other test reads
    // the text format).
    let server = LoggingServer::start(&[
        "--restart-backoff",
        "0s",
        "--gpus",
        "0",
        "--log-format",
        "json",
    ]);
    let (status, body) = server.request(
        "POST",
        "/api/v1/jobs",
        Some(&flaky("flaky", &scratch.path().join("failed-once"))),
    );
    assert_eq!(status, 201, "{body}");
    let view = server.wait_for("flaky", "Succeeded", |view| view["state"] == "Succeeded");
    assert_eq!(view["replicas"][0]["restarts"], 1, "{view}");
    let transitions = server.transitions_when(4);
    assert_eq!(
        events(&transitions),
        ["queued", "admitted", "restarted", "finished"],
        "{transitions:?}"
    );
    for fields in &transitions {
        assert_eq!(fields["job"], "tfjob/default/flaky", "{fields:?}");
        assert_eq!(fields["level"], "INFO", "a JSON line's field: {fields:?}");
    }
    assert_eq!(
        only(&transitions[0], &["priority", "position"]),
        pairs(&[("priority", "0"), ("position", "1")])
    );
    assert_eq!(
        only(
            &transitions[1],
            &["cpu_millis", "memory_bytes", "gpus", "backfilled"]
        ),
        pairs(&[
            ("cpu_millis", "0"),
            ("memory_bytes", "0"),
            ("gpus", ""),
            ("backfilled", "false")
        ])
    );
    assert!(
        transitions[1]["waited_ms"].parse::<u64>().is_ok(),
        "{:?}",
        transitions[1]
    );
    assert_eq!(
        only(&transitions[2], &["replica", "exit_code", "restarts"]),
        pairs(&[
            ("replica", "worker-0"),
            ("exit_code", "3"),
            ("restarts", "1")
        ])
    );
    assert_eq!(
        only(&transitions[3], &["outcome", "reason"]),
        pairs(&[("outcome", "Succeeded"), ("reason", "TFJobSucceeded")])
    );
    assert!(
        transitions[3]["duration_ms"].parse::<u64>().is_ok(),
        "{:?}",
        transitions[3]
    );
}

#[test]
fn suspend_and_resume_are_on_the_log() {
    let server = LoggingServer::start(&["--gpus", "0"]);
    let manifest = "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: sleeper
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: busybox
              command: [sleep, '60']
";
    assert_eq!(
        server.request("POST", "/api/v1/jobs", Some(manifest)).0,
        201
    );
    server.wait_for("sleeper", "Running", |view| view["state"] == "Running");
    let path = "/api/v1/namespaces/default/tfjobs/sleeper";
    assert_eq!(
        server.request("POST", &format!("{path}/suspend"), None).0,
        200
    );
    assert_eq!(
        events(&server.transitions_when(3)),
        ["queued", "admitted", "suspended"]
    );
    assert_eq!(
        server.request("POST", &format!("{path}/resume"), None).0,
        200
    );
    server.wait_for("sleeper", "Running again", |view| {
        view["state"] == "Running"
    });
    let transitions = server.transitions_when(6);
    assert_eq!(
        events(&transitions),
        [
            "queued",
            "admitted",
            "suspended",
            "resumed",
            "queued",
            "admitted"
        ],
        "{transitions:?}"
    );
    assert_eq!(server.request("DELETE", path, None).0, 200);
    assert_eq!(events(&server.transitions_when(7))[6], "deleted");
}
