//! What the fault tests (`e2e/tests/faults.rs`) and the gang tests (`e2e/tests/gang.rs`) need
//! besides the shared helpers: operators they start (with flags of their own) and kill
//! themselves, the control plane's components stopped and started through `scripts/cluster`,
//! the leader Lease, and a [`History`] of every pod or service a namespace ever held, which
//! proves that nothing was created twice, deleted or re-created.
//!
//! `scripts/e2e` stops its own operator before these tests and exports what they need:
//! `TRAINCTL_E2E_TRAINCTL` (the binary), `TRAINCTL_E2E_OPERATOR_KUBECONFIG` (the
//! `trainctl-operator` service account's kubeconfig) and `TRAINCTL_CLUSTER_DIR` (the cluster's
//! folder, for `scripts/cluster stop|start NAME`).

use std::collections::BTreeSet;
use std::fs::File;
use std::future::Future;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::runtime::wait::await_condition;
use serde_json::{Value, json};
use trainctl_api::JobKind;

use crate::{IMAGE, OPERATOR_NAMESPACE, jobs, last_condition, repository};

mod history;

pub use history::{History, Record};

/// The leader Lease's name (`--leader-election-id`'s default), in [`OPERATOR_NAMESPACE`].
pub const LEASE: &str = "trainctl-operator";

/// The variable's value, or a panic saying that `scripts/e2e` sets it.
fn required(variable: &str) -> String {
    std::env::var(variable)
        .ok()
        .filter(|value| !value.is_empty())
        .unwrap_or_else(|| panic!("{variable} is not set: run these tests with scripts/e2e"))
}

/// Waits for `what` at most `limit`, then fails the test. The future is boxed, as in
/// [`crate::within`].
pub async fn within_for<T>(limit: Duration, what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(limit, Box::pin(future))
        .await
        .unwrap_or_else(|_| panic!("timed out after {limit:?} waiting for {what}"))
}

/// A `trainctl operator` process that the test started: `--leader-elect` as the
/// `trainctl-operator` service account, `POD_NAME` set to its name, its endpoints on free ports,
/// its log in `target/fault-operators/`. Dropping it kills it (SIGKILL) and, when the test is
/// failing, prints the end of its log.
#[derive(Debug)]
pub struct Operator {
    name: String,
    log: PathBuf,
    child: Child,
    exited: Option<ExitStatus>,
}

impl Operator {
    /// Starts an operator whose Lease holder identity starts with `name` (its `POD_NAME`).
    #[must_use]
    pub fn start(name: &str) -> Operator {
        Operator::start_with(name, &[])
    }

    /// Starts an operator as [`Operator::start`] does, with these flags besides
    /// (`--gang-scheduler-name=volcano`...).
    #[must_use]
    pub fn start_with(name: &str, flags: &[&str]) -> Operator {
        let mut command = Command::new(required("TRAINCTL_E2E_TRAINCTL"));
        command
            .args([
                "operator",
                "--leader-elect",
                "--metrics-bind-address=127.0.0.1:0",
                "--health-probe-bind-address=127.0.0.1:0",
                "--log-format=text",
            ])
            .args(flags)
            .env("KUBECONFIG", required("TRAINCTL_E2E_OPERATOR_KUBECONFIG"))
            .env("POD_NAME", name)
            .env("POD_NAMESPACE", OPERATOR_NAMESPACE)
            .env_remove("RUST_LOG");
        Operator::spawn(name, command)
    }

    /// Starts the upstream Kubeflow training operator v1.9.4 (`TRAINCTL_E2E_UPSTREAM`, which
    /// `scripts/e2e` builds), as the cluster's admin, without leader election, its webhook
    /// server on a free port with the certificates `scripts/e2e` left in its default folder.
    #[must_use]
    pub fn start_upstream(name: &str) -> Operator {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let mut command = Command::new(required("TRAINCTL_E2E_UPSTREAM"));
        command
            .args([
                "--metrics-bind-address=0",
                "--health-probe-bind-address=0",
                &format!("--webhook-server-port={port}"),
            ])
            .env("MY_POD_NAMESPACE", OPERATOR_NAMESPACE);
        Operator::spawn(name, command)
    }

    /// Starts `command`, its output to a log file of `target/fault-operators/`.
    fn spawn(name: &str, mut command: Command) -> Operator {
        let folder = repository().join("target/fault-operators");
        std::fs::create_dir_all(&folder).expect("target/fault-operators is created");
        let log = folder.join(format!(
            "{name}-{}.log",
            jiff::Timestamp::now().as_millisecond()
        ));
        let file = File::create(&log).expect("the operator's log file is created");
        let child = command
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("the log file's handle is cloned"))
            .stderr(file)
            .spawn()
            .expect("the operator starts");
        Operator {
            name: name.to_owned(),
            log,
            child,
            exited: None,
        }
    }

    /// Its `POD_NAME`.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the Lease holder `identity` is this process's (`POD_NAME`, `_`, a UUID).
    #[must_use]
    pub fn holds(&self, identity: &str) -> bool {
        identity
            .strip_prefix(self.name.as_str())
            .is_some_and(|rest| rest.starts_with('_'))
    }

    /// What it has logged so far.
    #[must_use]
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Its exit status, if it has exited.
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        if self.exited.is_none() {
            self.exited = self
                .child
                .try_wait()
                .expect("the operator's status is read");
        }
        self.exited
    }

    /// Fails the test if it has exited.
    pub fn assert_running(&mut self) {
        if let Some(status) = self.exit_status() {
            panic!("operator {} exited ({status}); see its log", self.name);
        }
    }

    /// Kills it with SIGKILL, as a node failure would, and reaps it.
    pub fn kill(&mut self) {
        if self.exit_status().is_none() {
            self.child.kill().expect("the operator is killed");
            self.exited = Some(self.child.wait().expect("the operator is reaped"));
        }
    }

    /// Waits at most `limit` for it to exit on its own; its exit status.
    pub async fn exited_within(&mut self, limit: Duration) -> ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.exit_status() {
                return status;
            }
            assert!(
                started.elapsed() < limit,
                "operator {} still runs after {limit:?}",
                self.name
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits at most `limit` until its log holds `text`.
    pub async fn logged_within(&self, text: &str, limit: Duration) {
        let started = Instant::now();
        while !self.log().contains(text) {
            assert!(
                started.elapsed() < limit,
                "operator {} did not log {text:?} within {limit:?}",
                self.name
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Stops it as Kubernetes does (SIGTERM) and checks that it exits 0 within 30 s, having
    /// released the Lease if it held it: the next test's operator then need not wait it out.
    pub async fn stop(mut self) {
        self.assert_running();
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -TERM {}: {status}", self.child.id());
        let status = self.exited_within(Duration::from_secs(30)).await;
        assert!(
            status.success(),
            "operator {} stopped with {status}",
            self.name
        );
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            let log = self.log();
            let lines: Vec<&str> = log.lines().collect();
            let tail = &lines[lines.len().saturating_sub(150)..];
            eprintln!(
                "---- operator {} ({}), last {} lines of {}:\n{}",
                self.name,
                self.exited
                    .map_or_else(String::new, |status| status.to_string()),
                tail.len(),
                self.log.display(),
                tail.join("\n")
            );
        }
    }
}

/// Runs `scripts/cluster ACTION COMPONENT` on the cluster of `TRAINCTL_CLUSTER_DIR` (`stop`,
/// `start` or `restart`; `start` waits until the component serves); how long it took.
pub async fn cluster(action: &'static str, component: &'static str) -> Duration {
    let folder = required("TRAINCTL_CLUSTER_DIR");
    let started = Instant::now();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(repository().join("scripts/cluster"))
            .args([action, component])
            .env("TRAINCTL_CLUSTER_DIR", folder)
            .output()
            .expect("scripts/cluster runs")
    })
    .await
    .expect("scripts/cluster's thread");
    assert!(
        output.status.success(),
        "scripts/cluster {action} {component}: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    started.elapsed()
}

/// Posts `body` to etcd's JSON gateway at `path` (`/v3/kv/put`, ...); its answer.
fn etcd(path: &str, body: &Value) -> Value {
    let folder = PathBuf::from(required("TRAINCTL_CLUSTER_DIR"));
    let ports = std::fs::read_to_string(folder.join("ports")).expect("the cluster's ports file");
    let port = ports
        .lines()
        .find_map(|line| line.strip_prefix("etcd_port="))
        .expect("etcd_port in the ports file");
    let output = Command::new("curl")
        .args(["-sS", "--fail", "--max-time", "10", "-X", "POST"])
        .arg(format!("http://127.0.0.1:{port}{path}"))
        .args(["-d", &body.to_string()])
        .output()
        .expect("curl runs");
    assert!(
        output.status.success(),
        "etcd {path}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("etcd answers JSON")
}

/// Writes a key outside the API server's `/registry` (so etcd's revision moves past every
/// resource version handed out so far), then compacts etcd's history up to that revision:
/// every watch resumed from an earlier resource version now finds it compacted. The revision.
#[must_use]
pub fn etcd_compact_everything() -> i64 {
    // base64 of "trainctl-e2e/compaction" and of "x".
    let put = etcd(
        "/v3/kv/put",
        &json!({"key": "dHJhaW5jdGwtZTJlL2NvbXBhY3Rpb24=", "value": "eA=="}),
    );
    let revision: i64 = put["header"]["revision"]
        .as_str()
        .and_then(|revision| revision.parse().ok())
        .expect("etcd's put reports its revision");
    etcd(
        "/v3/kv/compaction",
        &json!({"revision": revision.to_string(), "physical": true}),
    );
    revision
}

/// Every deletion of the pod `namespace/name` the API server's audit log holds (the e2e
/// cluster records pods' deletions), one line each: when, by whom, with what answer.
#[must_use]
pub fn pod_deletions(namespace: &str, name: &str) -> Vec<String> {
    let log = PathBuf::from(required("TRAINCTL_CLUSTER_DIR")).join("logs/audit.log");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| {
            event["objectRef"]["namespace"] == namespace && event["objectRef"]["name"] == name
        })
        .map(|event| {
            format!(
                "{} {} by {} ({}): {}",
                event["stageTimestamp"].as_str().unwrap_or("?"),
                event["verb"].as_str().unwrap_or("?"),
                event["user"]["username"].as_str().unwrap_or("?"),
                event["userAgent"].as_str().unwrap_or("?"),
                event["responseStatus"]["code"],
            )
        })
        .collect()
}

/// The leader Lease's record, if it exists.
pub async fn lease(client: &Client) -> Option<LeaseSpec> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    leases
        .get_opt(LEASE)
        .await
        .expect("the Lease is read")
        .and_then(|lease| lease.spec)
}

/// Waits at most `limit` until the Lease's record satisfies `condition`; the record then.
pub async fn await_lease(
    client: &Client,
    what: &str,
    limit: Duration,
    condition: impl Fn(&LeaseSpec) -> bool + Send + 'static,
) -> LeaseSpec {
    let leases: Api<Lease> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let holds =
        move |lease: Option<&Lease>| lease.and_then(|l| l.spec.as_ref()).is_some_and(&condition);
    within_for(limit, what, await_condition(leases, LEASE, holds))
        .await
        .expect("the Lease watch works")
        .and_then(|lease| lease.spec)
        .expect("the Lease has a record")
}

/// Waits at most `limit` until `operator` holds the Lease; the record then.
pub async fn await_leader(client: &Client, operator: &Operator, limit: Duration) -> LeaseSpec {
    let name = operator.name().to_owned();
    let what = format!("{name} to hold the Lease");
    await_lease(client, &what, limit, move |spec| {
        spec.holder_identity
            .as_deref()
            .and_then(|holder| holder.strip_prefix(name.as_str()))
            .is_some_and(|rest| rest.starts_with('_'))
    })
    .await
}

/// Waits until the leader next renews the Lease (every 2 s): a fault injected right after it
/// has the whole renew deadline (10 s) before the leader gives up.
pub async fn await_renewal(client: &Client) {
    let before = lease(client).await.and_then(|spec| spec.renew_time);
    await_lease(
        client,
        "the Lease to be renewed",
        Duration::from_secs(10),
        move |spec| spec.renew_time.is_some() && spec.renew_time != before,
    )
    .await;
}

/// A TFJob `name` of `workers` workers that run until deleted.
#[must_use]
pub fn sleeping_tfjob(name: &str, workers: u32) -> String {
    format!(
        "\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {{name: {name}}}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: {workers}
      template: {{spec: {{containers: [{{name: tensorflow, image: {IMAGE}, command: [sleep, infinity]}}]}}}}
"
    )
}

/// The names of the pods (and of the services) of `job`'s `workers` workers.
#[must_use]
pub fn worker_names(job: &str, workers: u32) -> BTreeSet<String> {
    (0..workers)
        .map(|index| format!("{job}-worker-{index}"))
        .collect()
}

/// Waits at most `limit` until the TFJob `name` is `Running` with `workers` active workers;
/// the job then.
pub async fn await_running(
    client: &Client,
    namespace: &str,
    name: &str,
    workers: u32,
    limit: Duration,
) -> DynamicObject {
    let running = move |job: Option<&DynamicObject>| {
        job.is_some_and(|job| {
            last_condition(job)
                .is_some_and(|(last, status, _, _)| last == "Running" && status == "True")
                && job.data["status"]["replicaStatuses"]["Worker"]["active"] == workers
        })
    };
    let what = format!("TFJob {name} to run {workers} workers");
    let api = jobs(client, namespace, JobKind::TFJob);
    within_for(limit, &what, await_condition(api, name, running))
        .await
        .expect("the job watch works")
        .expect("the job exists")
}
