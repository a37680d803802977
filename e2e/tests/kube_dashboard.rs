//! `trainctl --kube dashboard` against the real control plane: the dashboard's API, served from
//! this machine for one namespace of the cluster through the admin kubeconfig (as a user's
//! kubectl would reach it): the token; what the dashboard says of itself; a TFJob's summary at
//! once and again as it runs and succeeds (the event stream); its pods as replicas, its events
//! and its logs; suspend, resume and delete through the API, acting on the cluster's object;
//! and a clean stop on SIGTERM. Run by `scripts/e2e`.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use trainctl_api::JobKind;
use trainctl_e2e::{
    EXIT_CODE_ANNOTATION, IMAGE, RUN_SECONDS_ANNOTATION, TIMEOUT, create_job, in_namespace, jobs,
};

/// A TFJob of two workers named `name`, each printing the two lines kwok's containers print
/// (scripts/cluster); with `run_seconds`, they exit 0 after that long, else they run until
/// deleted.
fn manifest(name: &str, run_seconds: Option<u32>) -> String {
    let annotations = run_seconds.map_or_else(String::new, |seconds| {
        format!(
            "metadata: {{annotations: {{{EXIT_CODE_ANNOTATION}: \"0\", \
             {RUN_SECONDS_ANNOTATION}: \"{seconds}\"}}}}"
        )
    });
    format!(
        "\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {{name: {name}}}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template:
        {annotations}
        spec:
          containers:
          - name: tensorflow
            image: {IMAGE}
"
    )
}

/// An event of a stream: its name and its data, as JSON.
#[derive(Debug, Clone)]
struct StreamEvent {
    name: String,
    data: Value,
}

/// An open event stream, read by a thread of its own.
struct EventStream {
    events: mpsc::Receiver<StreamEvent>,
}

impl EventStream {
    /// The next event; panics when the stream ends or after [`TIMEOUT`].
    fn next(&self) -> StreamEvent {
        self.events
            .recv_timeout(TIMEOUT)
            .expect("an event in time, on a stream still open")
    }

    /// Reads events until one satisfies `wanted`; panics after [`TIMEOUT`].
    fn until(&self, what: &str, wanted: impl Fn(&StreamEvent) -> bool) -> StreamEvent {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let event = self
                .events
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no event {what} within {TIMEOUT:?}"));
            if wanted(&event) {
                return event;
            }
        }
    }
}

/// `trainctl --kube dashboard -n NAMESPACE --no-browser`, running; killed when dropped.
struct Dashboard {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    base: String,
    token: String,
    /// For answers that end: each within [`TIMEOUT`].
    agent: ureq::Agent,
    /// For streams, which end when the dashboard stops.
    streams: ureq::Agent,
}

impl Dashboard {
    /// Starts it, and reads its address from its standard output (its first line).
    fn start(namespace: &str) -> Dashboard {
        let binary = std::env::var("TRAINCTL_E2E_TRAINCTL")
            .expect("TRAINCTL_E2E_TRAINCTL: the trainctl binary (scripts/e2e sets it)");
        let mut child = Command::new(binary)
            .args(["--kube", "dashboard", "-n", namespace, "--no-browser"])
            .env_remove("TRAINCTL_KUBE")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("trainctl starts");
        let first_line = |stream: Box<dyn Read + Send>| {
            let (sender, line) = mpsc::channel();
            std::thread::spawn(move || {
                let mut lines = BufReader::new(stream).lines();
                let _ = sender.send(lines.next());
                // What follows is read, so that the pipe never fills.
                lines.for_each(drop);
            });
            line.recv_timeout(TIMEOUT)
                .expect("a line in time")
                .expect("a line before the stream ends")
                .expect("a UTF-8 line")
        };
        let stdout = Box::new(child.stdout.take().expect("its stdout"));
        let stderr = Box::new(child.stderr.take().expect("its stderr"));
        let url = first_line(stdout);
        let said = first_line(stderr);
        let (base, code) = url
            .split_once("/#code=")
            .unwrap_or_else(|| panic!("an address with a login code: {url:?}"));
        assert!(base.starts_with("http://127.0.0.1:"), "{url}");
        assert_eq!(code.len(), 64, "{url}");
        let token = login(base, code);
        assert!(
            said.starts_with(&format!("dashboard: {url} (cluster https://"))
                && said.ends_with(&format!(", namespace {namespace}); Ctrl-C stops it")),
            "{said}"
        );
        Dashboard {
            child,
            base: base.to_owned(),
            token,
            agent: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(TIMEOUT))
                .build()
                .into(),
            streams: ureq::Agent::new_with_defaults(),
        }
    }

    /// Sends `METHOD path` (with the token unless `token` is false); the status and the body.
    fn call(&self, method: &str, path: &str, token: bool) -> (u16, String) {
        let url = format!("{}{path}", self.base);
        let bearer = format!("Bearer {}", if token { &self.token } else { "" });
        let answered = match method {
            "GET" => self.agent.get(&url).header("Authorization", &bearer).call(),
            "DELETE" => self
                .agent
                .delete(&url)
                .header("Authorization", &bearer)
                .call(),
            "POST" => self
                .agent
                .post(&url)
                .header("Authorization", &bearer)
                .send_empty(),
            other => panic!("no such method here: {other}"),
        };
        let mut response = answered.unwrap_or_else(|error| panic!("{method} {path}: {error}"));
        let body = response.body_mut().read_to_string().expect("a text body");
        (response.status().as_u16(), body)
    }

    /// `METHOD path` with the token, answered 200; its JSON body.
    fn ok(&self, method: &str, path: &str) -> Value {
        let (status, body) = self.call(method, path, true);
        assert_eq!(status, 200, "{method} {path}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|_| panic!("JSON from {path}: {body}"))
    }

    /// The lines of the stream at `path`, each as it comes, read by a thread of its own.
    fn followed(&self, path: &str) -> mpsc::Receiver<String> {
        let reader = self.open(path);
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in reader.lines() {
                let Ok(line) = line else { return };
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        lines
    }

    /// Opens the stream at `path`, answered 200.
    fn open(&self, path: &str) -> BufReader<ureq::BodyReader<'static>> {
        let response = self
            .streams
            .get(format!("{}{path}", self.base))
            .header("Authorization", &format!("Bearer {}", self.token))
            .call()
            .expect("the stream opens");
        assert_eq!(response.status().as_u16(), 200, "{path}");
        BufReader::new(response.into_body().into_reader())
    }

    /// Opens the event stream at `path`.
    fn events(&self, path: &str) -> EventStream {
        let reader = self.open(path);
        let (sender, events) = mpsc::channel();
        std::thread::spawn(move || {
            let (mut name, mut data) = (String::new(), String::new());
            for line in reader.lines() {
                let Ok(line) = line else { return };
                if let Some(value) = line.strip_prefix("event: ") {
                    value.clone_into(&mut name);
                } else if let Some(value) = line.strip_prefix("data: ") {
                    data.push_str(value);
                } else if line.is_empty() && !data.is_empty() {
                    let event = StreamEvent {
                        name: std::mem::take(&mut name),
                        data: serde_json::from_str(&std::mem::take(&mut data)).expect("JSON"),
                    };
                    if sender.send(event).is_err() {
                        return;
                    }
                }
            }
        });
        EventStream { events }
    }

    /// Sends SIGTERM; how the process exited.
    fn stop(mut self) -> ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(
            sent.is_ok_and(|status| status.success()),
            "kill -TERM {pid}"
        );
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("its status") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "trainctl still runs after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The state of the job `name` in a `jobs` event.
fn state_of<'a>(event: &'a StreamEvent, name: &str) -> Option<&'a str> {
    event.data["items"]
        .as_array()?
        .iter()
        .find(|item| item["name"] == name)?["state"]
        .as_str()
}

/// The pages, and what the dashboard says of itself behind its token: a cluster's, without
/// curves or the Machine page, with the actions (the admin kubeconfig may patch and delete
/// jobs).
fn assert_info(dashboard: &Dashboard, namespace: &str) {
    let (status, body) = dashboard.call("GET", "/api/v1/job-summaries", false);
    assert_eq!(status, 401, "{body}");
    // The pages need no token: they ask the API for everything.
    let (status, page) = dashboard.call("GET", "/", false);
    assert!(
        status == 200 && page.contains("<div id=\"app\">"),
        "{status}: {page}"
    );
    let info = dashboard.ok("GET", "/api/v1/dashboard");
    let fields = ["source", "curves", "machine", "actions", "namespace"];
    let shown: Vec<&Value> = fields.iter().map(|field| &info[field]).collect();
    let expected = [
        json!("kube"),
        json!(false),
        json!(false),
        json!(true),
        json!(namespace),
    ];
    assert_eq!(shown, expected.iter().collect::<Vec<_>>(), "{info}");
}

/// The succeeded job `done`: its pods as replicas, its events (recorded after its status:
/// read again until the last is there), and its logs as `trainctl --kube logs` prints them.
async fn assert_done(dashboard: &Dashboard, namespace: &str) {
    let done = format!("/api/v1/namespaces/{namespace}/tfjobs/done");
    let deadline = Instant::now() + TIMEOUT;
    let view = loop {
        let view = dashboard.ok("GET", &done);
        let reasons: Vec<&str> = view["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter_map(|event| event["reason"].as_str())
            .collect();
        if reasons.contains(&"SuccessfulCreatePod") && reasons.contains(&"TFJobSucceeded") {
            break view;
        }
        assert!(Instant::now() < deadline, "no events in time: {view}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(
        (&view["state"], &view["finished"]),
        (&json!("Succeeded"), &json!(true))
    );
    assert_eq!(view["job"]["metadata"]["name"], "done");
    let replicas: Vec<Value> = view["replicas"]
        .as_array()
        .expect("replicas")
        .iter()
        .map(|replica| {
            let fields = ["name", "type", "state", "exitCode", "port", "pid", "gpus"];
            fields.iter().map(|field| replica[field].clone()).collect()
        })
        .collect();
    assert_eq!(
        replicas,
        [
            json!(["worker-0", "Worker", "Succeeded", 0, 2222, null, []]),
            json!(["worker-1", "Worker", "Succeeded", 0, 2222, null, []]),
        ]
    );
    let times: Vec<&str> = view["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|event| event["time"].as_str().expect("a time"))
        .collect();
    assert!(times.is_sorted(), "oldest first: {times:?}");

    let (status, logs) = dashboard.call("GET", &format!("{done}/logs"), true);
    assert_eq!(status, 200, "{logs}");
    assert_eq!(
        logs,
        "worker-0 | trainctl e2e log line 1\nworker-0 | trainctl e2e log line 2\n\
         worker-1 | trainctl e2e log line 1\nworker-1 | trainctl e2e log line 2\n"
    );
    let (_, one) = dashboard.call("GET", &format!("{done}/logs?replica=worker-1"), true);
    assert_eq!(one, "trainctl e2e log line 1\ntrainctl e2e log line 2\n");
}

/// Suspend, resume and delete the running job `held` through the API: each acts on the
/// cluster's object, and the job's stream ends with `deleted`.
async fn assert_actions(
    dashboard: &Dashboard,
    client: &kube::Client,
    namespace: &str,
    summaries: &EventStream,
) {
    let held = format!("/api/v1/namespaces/{namespace}/tfjobs/held");
    let watched = dashboard.events(&format!("/api/v1/watch/namespaces/{namespace}/tfjobs/held"));
    assert_eq!(watched.next().name, "job");
    // Followed, every running pod's log comes, its lines whole and prefixed. (Only while the
    // job runs: kwok follows a log for good, even a stopped container's, where a kubelet ends
    // it; the stream is left open, and ends when the dashboard stops.)
    let followed = dashboard.followed(&format!("{held}/logs?follow=true"));
    let mut lines: Vec<String> = (0..4)
        .map(|_| followed.recv_timeout(TIMEOUT).expect("a line in time"))
        .collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "worker-0 | trainctl e2e log line 1",
            "worker-0 | trainctl e2e log line 2",
            "worker-1 | trainctl e2e log line 1",
            "worker-1 | trainctl e2e log line 2",
        ]
    );
    let cluster_jobs = jobs(client, namespace, JobKind::TFJob);
    let suspended_on_cluster = async || {
        let object = cluster_jobs.get("held").await.expect("the job");
        object.data["spec"]["runPolicy"]["suspend"].clone()
    };
    let view = dashboard.ok("POST", &format!("{held}/suspend"));
    assert_eq!(view["job"]["spec"]["runPolicy"]["suspend"], true, "{view}");
    assert_eq!(suspended_on_cluster().await, true);
    summaries.until("with held Suspended", |event| {
        state_of(event, "held") == Some("Suspended")
    });
    dashboard.ok("POST", &format!("{held}/resume"));
    assert_eq!(suspended_on_cluster().await, false);
    let deleted = dashboard.ok("DELETE", &held);
    assert_eq!(deleted["deleted"]["name"], "held", "{deleted}");
    let gone = cluster_jobs.get_opt("held").await.expect("the API answers");
    assert!(gone.is_none(), "{gone:?}");
    watched.until("deleted", |event| event.name == "deleted");
    let (status, body) = dashboard.call("GET", &held, true);
    assert_eq!(status, 404, "{body}");
}

/// Jobs' lives through the dashboard of their namespace, served by `trainctl --kube dashboard`.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn trainctl_kube_dashboard_serves_a_namespaces_jobs() {
    in_namespace("kube-dashboard", |client, namespace| async move {
        let ns = namespace.as_str();
        let dashboard = Dashboard::start(ns);
        assert_info(&dashboard, ns);

        // The jobs, at once (none yet), then again as a job's state changes.
        let summaries = dashboard.events("/api/v1/watch/job-summaries");
        let first = summaries.next();
        assert_eq!(
            (first.name.as_str(), &first.data),
            ("jobs", &json!({"items": []}))
        );
        create_job(&client, ns, &manifest("done", Some(8))).await;
        summaries.until("with done Running", |event| {
            state_of(event, "done") == Some("Running")
        });
        let succeeded = summaries.until("with done Succeeded", |event| {
            state_of(event, "done") == Some("Succeeded")
        });
        let summary = &succeeded.data["items"][0];
        let fields = [
            "kind",
            "plural",
            "replicasTotal",
            "restarts",
            "queuePosition",
        ];
        let shown: Vec<&Value> = fields.iter().map(|field| &summary[field]).collect();
        let expected = [
            json!("TFJob"),
            json!("tfjobs"),
            json!(2),
            json!(0),
            Value::Null,
        ];
        assert_eq!(shown, expected.iter().collect::<Vec<_>>(), "{summary}");
        assert!(summary["finishedAt"].is_string(), "{summary}");
        let listed = dashboard.ok("GET", "/api/v1/job-summaries");
        assert_eq!(listed["items"][0]["state"], "Succeeded", "{listed}");
        assert_done(&dashboard, ns).await;

        create_job(&client, ns, &manifest("held", None)).await;
        summaries.until("with held Running", |event| {
            state_of(event, "held") == Some("Running")
        });
        assert_actions(&dashboard, &client, ns, &summaries).await;

        let stopped = dashboard.stop();
        assert!(
            stopped.success(),
            "trainctl --kube dashboard on SIGTERM: {stopped}"
        );
    })
    .await;
}

/// The token the dashboard at `base` gives for the login code `code`, once: a second use is 401.
fn login(base: &str, code: &str) -> String {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let exchange = || {
        let mut response = agent
            .post(&format!("{base}/api/v1/dashboard/login"))
            .header("Content-Type", "application/json")
            .send(json!({ "code": code }).to_string())
            .expect("the dashboard answers");
        let body: serde_json::Value =
            serde_json::from_str(&response.body_mut().read_to_string().expect("body"))
                .expect("JSON");
        (response.status().as_u16(), body)
    };
    let (status, body) = exchange();
    assert_eq!(status, 200, "{body}");
    let (again, _) = exchange();
    assert_eq!(again, 401, "a login code works once");
    body["token"].as_str().expect("the token").to_owned()
}
