//! What the crate's tests share: a supervisor on a temporary state directory, manifests of tiny
//! `sh -c` jobs and quotas, and a wait that polls with a deadline.
//!
//! A supervisor becomes the reaper of every child of the process ([`Reaper`]), so two of them at
//! once would reap each other's replicas: tests that start one hold [`serial`] while it lives.
//!
//! [`Reaper`]: trainctl_local::process::Reaper

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use jiff::SignedDuration;
use trainctl_engine::reconcile::RestartBackoff;
use trainctl_local::NodeCapacity;
use trainctl_local::process::logs::LogLimit;
use trainctl_local::runner::{RunSettings, Supervision};

use crate::supervisor::{ServerConfig, Supervisor};

/// How long a test waits for a job to reach a state.
const PATIENCE: Duration = Duration::from_secs(10);

static SUPERVISORS: Mutex<()> = Mutex::new(());

/// Held while a test's supervisor lives (see the module's documentation).
pub(crate) fn serial() -> MutexGuard<'static, ()> {
    SUPERVISORS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A runtime for one test, dropped (with every task of its supervisor) before [`serial`] is let
/// go.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// A supervisor of `state_dir` on a machine of 4 CPUs and `gpus` GPUs, with attached replicas
/// and no restart back-off.
pub(crate) fn supervisor(state_dir: &Path, gpus: u32) -> Arc<Supervisor> {
    Supervisor::start(ServerConfig {
        state_dir: state_dir.to_owned(),
        settings: RunSettings {
            supervision: Supervision::Attached,
            capacity: NodeCapacity {
                cpu_millis: 4_000,
                memory_bytes: u64::MAX,
                gpus: (0..gpus).collect(),
            },
            backoff: RestartBackoff {
                initial: SignedDuration::ZERO,
                max: SignedDuration::ZERO,
            },
            node_name: "test".to_owned(),
            admission_poll: Duration::from_millis(50),
            log_limit: LogLimit::default(),
            notify: trainctl_local::notify::NotifySettings::default(),
            volumes: true,
        },
        priorities: BTreeMap::new(),
    })
    .expect("the supervisor starts")
}

/// A `TFJob` of `namespace` with one worker asking for `gpus` GPUs and running `script`.
pub(crate) fn job(namespace: &str, name: &str, gpus: u32, script: &str) -> String {
    format!(
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: {name}
  namespace: {namespace}
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
              command: [sh, -c, '{script}']
              resources:
                limits:
                  nvidia.com/gpu: {gpus}
"
    )
}

/// [`job`], submitted suspended: it starts no process until resumed.
pub(crate) fn suspended_job(namespace: &str, name: &str) -> String {
    job(namespace, name, 0, "true").replace(
        "spec:\n  tfReplicaSpecs:",
        "spec:\n  runPolicy:\n    suspend: true\n  tfReplicaSpecs:",
    )
}

/// A quota `name` of `namespace` with these `spec.hard` entries.
pub(crate) fn quota(namespace: &str, name: &str, hard: &[(&str, &str)]) -> String {
    let hard: String = hard
        .iter()
        .map(|(key, value)| format!("    {key}: \"{value}\"\n"))
        .collect::<Vec<_>>()
        .concat();
    format!(
        "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  hard:\n{hard}"
    )
}

/// A script that runs until the file `gate` exists.
pub(crate) fn until(gate: &Path) -> String {
    format!(
        "while [ ! -e {} ]; do sleep 0.02; done",
        gate.to_str().expect("a UTF-8 path")
    )
}

/// Polls `probe` until it answers, failing the test after [`PATIENCE`] with `what`.
pub(crate) async fn eventually<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(Instant::now() < deadline, "waited {PATIENCE:?} for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
