//! Notifications of a finished job (`--on-finish`, `--webhook`, `--notify-timeout`), end to
//! end: `trainctl run` and `trainctl server` with small `sh` replicas, an `--on-finish` command
//! that writes what it is given to a file, and webhooks served by a tiny HTTP server on a free
//! loopback port of each test.

use trainctl_cli_harness as harness;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use trainctl_cli_harness::server::Server;
use trainctl_cli_harness::{Scratch, conditions};

/// A TFJob `name` whose Worker runs `worker` (a shell script; `$$` for the shell's `$`) with
/// `restartPolicy: Never`, beside a Chief that runs `chief`.
fn job(name: &str, chief: &str, worker: &str) -> String {
    format!(
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: {name}
spec:
  tfReplicaSpecs:
    Chief:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: busybox
              command: [sh, -c, '{chief}']
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: busybox
              command: [sh, -c, '{worker}']
"
    )
}

/// One request a webhook received.
#[derive(Debug)]
struct Request {
    /// `POST /hook HTTP/1.1`.
    line: String,
    /// The headers, names in lowercase.
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
}

impl Request {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the body is JSON")
    }
}

/// A webhook on a free loopback port that answers the n-th request with `statuses[n]` (the
/// last one after that); its URL, and each request as it arrives.
fn webhook(statuses: &'static [u16]) -> (String, mpsc::Receiver<Request>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    let url = format!("http://{}/hook", listener.local_addr().expect("bound"));
    let (sender, requests) = mpsc::channel();
    thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { return };
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let mut headers = BTreeMap::new();
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).expect("a header line");
                let Some((name, value)) = header.split_once(':') else {
                    break;
                };
                headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
            }
            let length = headers
                .get("content-length")
                .map_or(0, |length| length.parse().expect("a length"));
            let mut body = vec![0; length];
            reader.read_exact(&mut body).expect("the body");
            let status = statuses[n.min(statuses.len() - 1)];
            let answer = format!(
                "HTTP/1.1 {status} Whatever\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = reader.get_mut().write_all(answer.as_bytes());
            let request = Request {
                line: line.trim().to_owned(),
                headers,
                body,
            };
            if sender.send(request).is_err() {
                return;
            }
        }
    });
    (url, requests)
}

/// The job `name` as `trainctl get NAME -o json` prints it.
fn got(scratch: &Scratch, name: &str) -> Value {
    let get = scratch.trainctl(&["get", "tfjob", name, "-o", "json"]);
    assert_eq!(get.code, Some(0), "{get}");
    get.json()
}

#[test]
fn a_failed_run_gives_the_command_the_job_its_message_and_the_failed_replicas_last_lines() {
    let scratch = Scratch::new("notify-failed");
    let mut worker = String::new();
    for n in 1..=25 {
        write!(worker, "echo line {n}; ").expect("a string");
    }
    worker.push_str("echo boom >&2; exit 3");
    let manifest = scratch.write("job.yaml", &job("broken", "sleep 30", &worker));
    let out = scratch.path("payload.json");
    let env_out = scratch.path("env.txt");
    let hook = "cat > \"$OUT\"; echo \"$TRAINCTL_JOB_NAME $TRAINCTL_JOB_NAMESPACE \
                $TRAINCTL_JOB_KIND $TRAINCTL_JOB_STATE\" > \"$ENV_OUT\"";
    let run = scratch.run_with_env(
        &manifest,
        &["--on-finish", hook],
        &[
            ("OUT", out.to_str().expect("UTF-8")),
            ("ENV_OUT", env_out.to_str().expect("UTF-8")),
        ],
    );
    assert_eq!(run.code, Some(1), "{run}");
    assert!(!run.stderr.contains("warning: on-finish"), "{run}");

    let payload: Value =
        serde_json::from_slice(&std::fs::read(&out).expect("the command wrote its input"))
            .expect("the input is JSON");
    let job = &payload["job"];
    assert_eq!(job["kind"], "TFJob");
    assert_eq!(job["apiVersion"], "kubeflow.org/v1");
    assert_eq!(job["metadata"]["name"], "broken");
    assert_eq!(
        *job,
        got(&scratch, "broken"),
        "the job as `get -o json` prints it"
    );
    let conditions = conditions(job);
    let (last_type, last_status, last_reason, last_message) =
        conditions.last().expect("conditions");
    assert_eq!(
        (last_type.as_str(), last_status.as_str()),
        ("Failed", "True")
    );
    assert_eq!(payload["state"], "Failed");
    assert_eq!(payload["reason"], last_reason.as_str());
    assert_eq!(payload["message"], last_message.as_str());
    assert!(last_message.contains("failed"), "{last_message}");
    assert_eq!(payload["cause"], "worker-0 exited with code 3");
    let mut tail: Vec<String> = (7..=25).map(|n| format!("line {n}")).collect();
    tail.push("boom".to_owned());
    assert_eq!(
        payload["logTail"],
        json!({ "worker-0": tail }),
        "the failed worker's last 20 lines; the chief was stopped, not failed"
    );
    assert_eq!(
        std::fs::read_to_string(&env_out).expect("the command wrote its env"),
        "broken default TFJob Failed\n"
    );
}

#[test]
fn a_webhook_answering_500_is_tried_again_with_the_same_json() {
    let scratch = Scratch::new("notify-webhook");
    let manifest = scratch.write("job.yaml", &job("fine", "true", "true"));
    let (url, requests) = webhook(&[500, 200]);
    let run = scratch.run(&manifest, &["--webhook", &url]);
    assert_eq!(run.code, Some(0), "{run}");
    assert!(!run.stderr.contains("warning: webhook"), "{run}");

    let first = requests.try_recv().expect("a first request");
    let second = requests
        .try_recv()
        .expect("a second request, after the 500");
    assert!(
        requests.try_recv().is_err(),
        "no third request after the 200"
    );
    for request in [&first, &second] {
        assert_eq!(request.line, "POST /hook HTTP/1.1");
        assert_eq!(request.headers["content-type"], "application/json");
    }
    assert_eq!(first.body, second.body, "the same notification each time");
    let payload = first.json();
    assert_eq!(payload["state"], "Succeeded");
    assert_eq!(payload["job"], got(&scratch, "fine"));
    assert_eq!(payload["logTail"], json!({}));
}

#[test]
fn an_undelivered_webhook_is_a_warning_and_the_job_keeps_its_exit_code() {
    let scratch = Scratch::new("notify-webhook-down");
    let manifest = scratch.write("job.yaml", &job("fine", "true", "true"));
    let (url, requests) = webhook(&[500]);
    let run = scratch.run(&manifest, &["--webhook", &url]);
    assert_eq!(run.code, Some(0), "{run}");
    assert!(
        run.stderr.lines().any(|line| line
            == format!("warning: webhook {url}: 500 Internal Server Error after 3 tries")),
        "{run}"
    );
    assert_eq!(requests.try_iter().count(), 3);
}

#[test]
fn a_hanging_command_does_not_hold_the_job_and_is_killed() {
    let scratch = Scratch::new("notify-hang");
    let manifest = scratch.write("job.yaml", &job("failing", "sleep 30", "exit 2"));
    let started_file = scratch.path("hook-started");
    let started = Instant::now();
    let run = scratch.run_with_env(
        &manifest,
        &[
            "--on-finish",
            "echo started > \"$STARTED\"; sleep 1000",
            "--notify-timeout",
            "1s",
        ],
        &[("STARTED", started_file.to_str().expect("UTF-8"))],
    );
    let took = started.elapsed();
    assert_eq!(run.code, Some(1), "the job's exit code: {run}");
    assert!(started_file.exists(), "the command ran: {run}");
    assert!(
        took >= Duration::from_secs(1),
        "waited for the command: {took:?}"
    );
    assert!(
        took < Duration::from_secs(15),
        "held by the command: {took:?}"
    );
    assert!(
        run.stderr.lines().any(|line| line
            == "warning: on-finish command: still running after 1s (--notify-timeout): killed it"),
        "{run}"
    );
    let left: Vec<_> = scratch
        .processes()
        .into_iter()
        .map(|process| (process.pid, process.comm))
        .collect();
    assert!(
        left.is_empty(),
        "the command's processes outlived it: {left:?}"
    );
    let stored = got(&scratch, "failing");
    let stored = conditions(&stored);
    assert_eq!(stored.last().map(|c| c.0.as_str()), Some("Failed"));
}

#[test]
fn a_deleted_job_is_not_notified_and_a_finished_one_is_by_the_server() {
    let (url, requests) = webhook(&[200]);
    let server = Server::start(&["--webhook", &url, "--restart-backoff", "0s"]);
    let sleeper = job("sleeper", "sleep 60", "sleep 60");
    assert_eq!(
        server.request("POST", "/api/v1/jobs", Some(&sleeper)).0,
        201
    );
    server.wait_for("sleeper", "Running", |view| {
        harness::server::state(view) == "Running"
    });
    let (status, _) = server.request("DELETE", "/api/v1/namespaces/default/tfjobs/sleeper", None);
    assert_eq!(status, 200, "deleted, its run ended");

    let done = job("done", "true", "true");
    assert_eq!(server.request("POST", "/api/v1/jobs", Some(&done)).0, 201);
    let request = requests
        .recv_timeout(Duration::from_secs(30))
        .expect("the server POSTs the notification");
    assert_eq!(request.line, "POST /hook HTTP/1.1");
    assert_eq!(request.headers["content-type"], "application/json");
    let payload = request.json();
    assert_eq!(payload["state"], "Succeeded");
    assert_eq!(
        payload["job"]["metadata"]["name"], "done",
        "not the deleted job"
    );
    assert_eq!(payload["job"]["kind"], "TFJob");
    assert_eq!(
        conditions(&payload["job"]).last().map(|c| c.0.clone()),
        Some("Succeeded".to_owned())
    );
    assert!(
        requests.recv_timeout(Duration::from_millis(500)).is_err(),
        "one notification only"
    );
}

#[test]
fn https_webhooks_and_empty_timeouts_are_refused_at_once() {
    let scratch = Scratch::new("notify-flags");
    let manifest = scratch.write("job.yaml", &job("never", "true", "true"));
    let https = scratch.run(&manifest, &["--webhook", "https://hooks.example/x"]);
    assert_eq!(https.code, Some(2), "{https}");
    assert!(https.stderr.contains("https is not supported"), "{https}");
    let zero = scratch.run(&manifest, &["--notify-timeout", "0s"]);
    assert_eq!(zero.code, Some(2), "{zero}");
    assert!(zero.stderr.contains("above zero"), "{zero}");
}
