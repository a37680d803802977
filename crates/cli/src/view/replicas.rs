//! The table `get replicas` prints, as `kubectl get pods` prints pods: NAMESPACE (with `-A`),
//! NAME (the pod's name, `<job>-<type>-<index>`), READY, STATUS, RESTARTS, AGE, and with
//! `-o wide` PID, GPUS and JOB. Each replica also has the labels of the pod it stands for, which
//! `-l` selects on.

use std::collections::BTreeMap;

use jiff::Timestamp;
use trainctl_engine::naming::{pod_labels, replica_name};
use trainctl_local::store::{JobRecord, ReplicaRecord, ReplicaState};

use super::jobs::age;
use crate::table::Table;

/// A replica with its job, as the store has them.
#[derive(Debug, Clone, Copy)]
pub struct JobReplica<'a> {
    /// The job.
    pub job: &'a JobRecord,
    /// One of its replicas.
    pub replica: &'a ReplicaRecord,
}

impl JobReplica<'_> {
    /// The name of the pod the replica stands for: `mnist-worker-0` (`mnist-launcher` for an
    /// MPIJob's launcher).
    pub fn pod_name(&self) -> String {
        replica_name(
            &self.job.name,
            &self.replica.replica_type,
            self.replica.index,
        )
    }

    /// The labels of the replica's pod: its template's, then the operator's
    /// (`training.kubeflow.org/job-name`, `.../replica-type`, `.../replica-index`,
    /// `.../job-role`...), which win on conflict, as the operator builds pods.
    pub fn labels(&self) -> BTreeMap<String, String> {
        let replica_type = &self.replica.replica_type;
        let mut labels = self
            .job
            .job
            .replica_specs()
            .get(replica_type)
            .and_then(|spec| spec.template.metadata.as_ref())
            .and_then(|metadata| metadata.labels.clone())
            .unwrap_or_default();
        labels.extend(pod_labels(&self.job.job, replica_type, self.replica.index));
        labels
    }
}

/// The table of `replicas`, ages counted up to `now`: NAMESPACE shown `with_namespace`, and the
/// `wide` columns when asked.
pub fn table(
    replicas: &[JobReplica<'_>],
    with_namespace: bool,
    wide: bool,
    now: Timestamp,
) -> Table {
    let mut table = Table::new([
        "NAMESPACE",
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "PID",
        "GPUS",
        "JOB",
    ]);
    for &JobReplica { job, replica } in replicas {
        let running = replica.state == ReplicaState::Running;
        table.row([
            job.namespace.clone(),
            JobReplica { job, replica }.pod_name(),
            if running { "1/1" } else { "0/1" }.to_owned(),
            replica.state.as_str().to_owned(),
            restarts(replica, now),
            age(now.duration_since(created(job))),
            replica
                .pid
                .filter(|_| running)
                .map_or_else(|| "-".to_owned(), |pid| pid.pid.to_string()),
            gpus(&replica.gpus),
            format!("{}/{}", job.kind.singular(), job.name),
        ]);
    }
    let mut keep = vec![with_namespace];
    keep.extend([true; 5]);
    keep.extend([wide; 3]);
    table.keep_columns(&keep);
    table
}

/// When the replica's pod was created, as far as this machine knows: when its job was admitted
/// (its `startTime`, when the operator creates the pods), else when the job was recorded.
fn created(job: &JobRecord) -> Timestamp {
    job.job
        .status()
        .and_then(|status| status.start_time.as_ref())
        .map_or(job.created_at, |time| time.0)
}

/// `3`, or `3 (35s ago)` for a running replica that restarted, as kubectl says when the
/// container last restarted: the start of its current process.
fn restarts(replica: &ReplicaRecord, now: Timestamp) -> String {
    match replica.started_at {
        Some(started) if replica.restarts > 0 && replica.state == ReplicaState::Running => {
            format!(
                "{} ({} ago)",
                replica.restarts,
                age(now.duration_since(started))
            )
        }
        _ => replica.restarts.to_string(),
    }
}

/// `0,1`, or `-` for none.
pub fn gpus(gpus: &[u32]) -> String {
    if gpus.is_empty() {
        return "-".to_owned();
    }
    gpus.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use jiff::SignedDuration;
    use trainctl_api::{ReplicaType, manifest};
    use trainctl_local::process::identity::ProcessIdentity;

    use super::*;

    const JOB: &str = "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist
spec:
  tfReplicaSpecs:
    Chief:
      template:
        metadata:
          labels: {team: vision, training.kubeflow.org/job-name: overridden}
        spec:
          containers: [{name: tensorflow, image: tf, command: ['true']}]
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: tensorflow, image: tf, command: ['true']}]
";

    fn record(now: Timestamp) -> JobRecord {
        let mut loaded = manifest::load_str("job.yaml", JOB);
        assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
        let job = loaded.jobs.remove(0).job;
        JobRecord {
            uid: "uid-1".to_owned(),
            namespace: "default".to_owned(),
            name: "mnist".to_owned(),
            kind: job.kind(),
            job,
            retired_restarts: 0,
            owner: None,
            created_at: now - SignedDuration::from_secs(300),
            updated_at: now,
            finished: false,
            companions: Vec::new(),
        }
    }

    fn replica(
        replica_type: ReplicaType,
        index: i32,
        state: ReplicaState,
        restarts: i32,
        started: Option<Timestamp>,
    ) -> ReplicaRecord {
        ReplicaRecord {
            job_uid: "uid-1".to_owned(),
            replica_type,
            index,
            state,
            pid: Some(ProcessIdentity {
                pid: 4242 + index,
                start_ticks: 1,
            }),
            port: Some(40_000),
            gpus: if index == 1 { vec![0, 1] } else { Vec::new() },
            restarts,
            pod_restarts: restarts,
            exit_code: None,
            reason: None,
            started_at: started,
            finished_at: None,
            log_path: PathBuf::from("/state/logs/uid-1/worker-0.log"),
        }
    }

    fn replicas(now: Timestamp) -> Vec<ReplicaRecord> {
        let ago = |seconds| Some(now - SignedDuration::from_secs(seconds));
        vec![
            replica(ReplicaType::Chief, 0, ReplicaState::Succeeded, 0, ago(200)),
            replica(ReplicaType::Worker, 0, ReplicaState::Running, 3, ago(35)),
            replica(
                ReplicaType::Worker,
                1,
                ReplicaState::CrashLoopBackOff,
                1,
                ago(90),
            ),
        ]
    }

    #[test]
    fn the_table_is_kubectl_get_pods() {
        let now = Timestamp::now();
        let job = record(now);
        let replicas = replicas(now);
        let rows: Vec<JobReplica<'_>> = replicas
            .iter()
            .map(|replica| JobReplica { job: &job, replica })
            .collect();
        assert_eq!(
            table(&rows, false, false, now).render(),
            "\
NAME             READY   STATUS             RESTARTS      AGE
mnist-chief-0    0/1     Succeeded          0             5m
mnist-worker-0   1/1     Running            3 (35s ago)   5m
mnist-worker-1   0/1     CrashLoopBackOff   1             5m
"
        );
        assert_eq!(
            table(&rows, true, true, now).render(),
            "\
NAMESPACE   NAME             READY   STATUS             RESTARTS      AGE   PID    GPUS   JOB
default     mnist-chief-0    0/1     Succeeded          0             5m    -      -      tfjob/mnist
default     mnist-worker-0   1/1     Running            3 (35s ago)   5m    4242   -      tfjob/mnist
default     mnist-worker-1   0/1     CrashLoopBackOff   1             5m    -      0,1    tfjob/mnist
"
        );
    }

    #[test]
    fn a_replica_has_its_pods_labels_the_operators_winning() {
        let now = Timestamp::now();
        let job = record(now);
        let replicas = replicas(now);
        let chief = JobReplica {
            job: &job,
            replica: &replicas[0],
        };
        let labels = chief.labels();
        let get = |key: &str| labels.get(key).map(String::as_str);
        assert_eq!(get("team"), Some("vision"));
        assert_eq!(get("training.kubeflow.org/job-name"), Some("mnist"));
        assert_eq!(get("training.kubeflow.org/replica-type"), Some("chief"));
        assert_eq!(get("training.kubeflow.org/replica-index"), Some("0"));
        assert_eq!(get("training.kubeflow.org/job-role"), Some("master"));
        let worker = JobReplica {
            job: &job,
            replica: &replicas[2],
        };
        assert_eq!(worker.pod_name(), "mnist-worker-1");
        assert!(
            !worker
                .labels()
                .contains_key("training.kubeflow.org/job-role")
        );
    }
}
