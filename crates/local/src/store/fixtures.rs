//! Test fixtures: state directories, job records, owners dead and alive.

use std::path::Path;
use std::process::Command;

use jiff::Timestamp;
use tempfile::TempDir;
use trainctl_api::{ReplicaType, TrainingJob, manifest};

use super::records::{EventRecord, JobRecord, ReplicaRecord, ReplicaState};
use crate::process::identity::ProcessIdentity;

/// A fresh state directory, removed when dropped.
pub(crate) fn state_dir() -> TempDir {
    tempfile::tempdir().expect("create a temporary state dir")
}

/// The multi-worker TFJob example, defaulted by the manifest loader.
pub(crate) fn example_tfjob() -> TrainingJob {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tfjob-multi-worker.yaml");
    let mut loaded = manifest::load_file(&file);
    assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
    loaded.jobs.remove(0).job
}

/// A running TFJob named `name` in `default`, with a fresh uid.
pub(crate) fn job_record(name: &str, owner: Option<ProcessIdentity>) -> JobRecord {
    let uid = uuid::Uuid::new_v4().to_string();
    let mut job = example_tfjob();
    job.metadata_mut().name = Some(name.to_owned());
    job.metadata_mut().uid = Some(uid.clone());
    let now = Timestamp::now();
    JobRecord {
        uid,
        namespace: job.namespace().to_owned(),
        name: name.to_owned(),
        kind: job.kind(),
        job,
        retired_restarts: 0,
        owner,
        created_at: now,
        updated_at: now,
        finished: false,
        companions: Vec::new(),
    }
}

/// The identity of a process that has exited and been reaped.
pub(crate) fn dead_process() -> ProcessIdentity {
    let mut child = crate::process::cgroup::spawn_outside(|| Command::new("true").spawn())
        .expect("spawn `true`");
    let pid = i32::try_from(child.id()).expect("pid fits in i32");
    let identity = ProcessIdentity::of(pid).expect("an unreaped child has a /proc entry");
    child.wait().expect("reap the child");
    identity
}

/// A PyTorchJob named `name` in `default`, run by this process, with a fresh uid.
pub(crate) fn pytorch_record(name: &str) -> JobRecord {
    let yaml = format!(
        "apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {name}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: pytorch/pytorch
              command: [python, train.py]
"
    );
    let mut loaded = manifest::load_str("pytorchjob.yaml", &yaml);
    assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
    let job = loaded.jobs.remove(0).job;
    JobRecord {
        kind: job.kind(),
        job,
        ..job_record(name, Some(ProcessIdentity::current()))
    }
}

/// A replica of job `job_uid` that has not started, on port 40000.
pub(crate) fn pending_replica(
    job_uid: &str,
    replica_type: ReplicaType,
    index: i32,
) -> ReplicaRecord {
    let log_path = format!(
        "/state/logs/{job_uid}/{}-{index}.log",
        replica_type.lowercase()
    );
    ReplicaRecord {
        job_uid: job_uid.to_owned(),
        replica_type,
        index,
        state: ReplicaState::Pending,
        pid: None,
        port: Some(40_000),
        gpus: Vec::new(),
        restarts: 0,
        pod_restarts: 0,
        exit_code: None,
        reason: None,
        started_at: None,
        finished_at: None,
        log_path: log_path.into(),
    }
}

/// The same replica as [`pending_replica`] after it failed, every field set: run by this
/// process, restarted twice, killed for memory after 5 s.
pub(crate) fn failed_replica(
    job_uid: &str,
    replica_type: ReplicaType,
    index: i32,
) -> ReplicaRecord {
    let started = Timestamp::now();
    ReplicaRecord {
        state: ReplicaState::Failed,
        pid: Some(ProcessIdentity::current()),
        gpus: vec![1, 3],
        restarts: 2,
        pod_restarts: 1,
        exit_code: Some(137),
        reason: Some("OOMKilled".to_owned()),
        started_at: Some(started),
        finished_at: Some(started + jiff::SignedDuration::from_secs(5)),
        ..pending_replica(job_uid, replica_type, index)
    }
}

/// A `Normal` event with this reason, now.
pub(crate) fn event(reason: &str) -> EventRecord {
    EventRecord::once(
        Timestamp::now(),
        "Normal",
        reason,
        format!("{reason} happened"),
        None,
    )
}
