//! The records the store keeps: jobs, replicas, events.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use jiff::Timestamp;
use trainctl_api::manifest::Companion;
use trainctl_api::status::state_word;
use trainctl_api::{JobKind, JobStatus, ReplicaType, TrainingJob};

use crate::process::identity::ProcessIdentity;

/// A job as the store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRecord {
    /// The job's uid (`metadata.uid`), the key of its replicas, events and logs.
    pub uid: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// The job's kind.
    pub kind: JobKind,
    /// The whole job object, status included.
    pub job: TrainingJob,
    /// Restarts of replicas that were since re-created (counted in `restartCount` no more).
    pub retired_restarts: u32,
    /// The trainctl process running the job; `None` when no process does.
    pub owner: Option<ProcessIdentity>,
    /// When the job was recorded.
    pub created_at: Timestamp,
    /// When the record last changed.
    pub updated_at: Timestamp,
    /// Whether the job reached a final state (derived from its status by the caller).
    pub finished: bool,
    /// The ConfigMaps and Secrets submitted with the job, which its replicas' env may read.
    pub companions: Vec<Companion>,
}

impl JobRecord {
    /// The job's state in one word: its latest condition that holds (`Succeeded`, `Failed`,
    /// `Suspended`, `Restarting`, `Running`), else `Pending` while it waits (for admission, or
    /// before any condition) or `Created`; or `Lost` when it did not finish and the trainctl
    /// process running it is gone.
    #[must_use]
    pub fn state(&self) -> &'static str {
        let status = self.job.status();
        // Asked only of unfinished jobs: reading /proc for each of 1,000 finished jobs was an
        // eighth of `trainctl get`.
        let owned = || self.owner.is_some_and(|owner| owner.is_alive());
        match status.and_then(JobStatus::lifecycle) {
            Some(_) if !self.finished && !owned() => "Lost",
            Some(type_) => type_.as_str(),
            None if self.finished => "Failed",
            None if !owned() => "Lost",
            None => state_word(status),
        }
    }
}

/// How a `CrashLoopBackOff` replica's `reason` begins, before the time of its next start.
pub const NEXT_START: &str = "next start ";

/// The state of one replica process, after the pod phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplicaState {
    /// Not started yet (waiting for admission or a restart back-off).
    Pending,
    /// The process runs.
    Running,
    /// The process exited with 0 and will not be restarted.
    Succeeded,
    /// The process failed and will not be restarted.
    Failed,
    /// Stopped by trainctl because the job ended: not a failure.
    Stopped,
    /// Exited, and waiting out its restart back-off before it starts again (the kubelet's
    /// word; its record's `reason` says when).
    CrashLoopBackOff,
    /// Stopped because the job was suspended; it starts again when the job is resumed.
    Suspended,
}

impl ReplicaState {
    /// Every state, in lifecycle order.
    pub const ALL: [ReplicaState; 7] = [
        ReplicaState::Pending,
        ReplicaState::Running,
        ReplicaState::CrashLoopBackOff,
        ReplicaState::Succeeded,
        ReplicaState::Failed,
        ReplicaState::Stopped,
        ReplicaState::Suspended,
    ];

    /// The spelling stored and shown (`Running`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ReplicaState::Pending => "Pending",
            ReplicaState::Running => "Running",
            ReplicaState::Succeeded => "Succeeded",
            ReplicaState::Failed => "Failed",
            ReplicaState::Stopped => "Stopped",
            ReplicaState::CrashLoopBackOff => "CrashLoopBackOff",
            ReplicaState::Suspended => "Suspended",
        }
    }
}

impl fmt::Display for ReplicaState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no replica state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown replica state `{0}`: expected Pending, Running, CrashLoopBackOff, Succeeded, Failed, \
     Stopped or Suspended"
)]
pub struct UnknownReplicaState(pub String);

impl FromStr for ReplicaState {
    type Err = UnknownReplicaState;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ReplicaState::ALL
            .into_iter()
            .find(|state| state.as_str() == s)
            .ok_or_else(|| UnknownReplicaState(s.to_owned()))
    }
}

/// One replica of a job: its process, address, GPUs and outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaRecord {
    /// The job's uid.
    pub job_uid: String,
    /// The replica type (`Worker`).
    pub replica_type: ReplicaType,
    /// The replica index within its type.
    pub index: i32,
    /// The replica's state.
    pub state: ReplicaState,
    /// The process (group leader) while it runs or last ran.
    pub pid: Option<ProcessIdentity>,
    /// The loopback port of the replica slot.
    pub port: Option<u16>,
    /// The GPUs assigned (`CUDA_VISIBLE_DEVICES`).
    pub gpus: Vec<u32>,
    /// How many times the process was started again, in place or in a re-created pod.
    pub restarts: i32,
    /// How many times the current pod restarted its process in place (the kubelet's
    /// `restartCount`, which the engine counts against `backoffLimit`).
    pub pod_restarts: i32,
    /// The last exit code (`128 + signal` for a signal).
    pub exit_code: Option<i32>,
    /// Why the replica is in its state (`Error`, `OOMKilled`, `Stopped`...).
    pub reason: Option<String>,
    /// When the current process started.
    pub started_at: Option<Timestamp>,
    /// When the replica reached a final state.
    pub finished_at: Option<Timestamp>,
    /// The file holding the replica's output.
    pub log_path: PathBuf,
}

impl ReplicaRecord {
    /// `worker-1`: the lowercase type and the index, as `run` prefixes its lines.
    #[must_use]
    pub fn name(&self) -> String {
        format!("{}-{}", self.replica_type.lowercase(), self.index)
    }
}

/// An event about a job, like a Kubernetes Event: one occurrence, or a series of alike ones as
/// the store keeps them (`count` times, from `first_time` to `time`; Kubernetes' `count`,
/// `firstTimestamp` and `lastTimestamp`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRecord {
    /// When it (last) happened.
    pub time: Timestamp,
    /// When it first happened: `time`, for one occurrence.
    pub first_time: Timestamp,
    /// How many times it happened: 1, for one occurrence.
    pub count: u32,
    /// `Normal` or `Warning`.
    pub type_: String,
    /// A machine-readable reason in CamelCase (`SuccessfulCreatePod`).
    pub reason: String,
    /// A human-readable message.
    pub message: String,
    /// The object concerned (a replica's name), when not the job itself.
    pub object: Option<String>,
}

impl EventRecord {
    /// One occurrence, at `time`, of an event about the job (`object`: `None`) or about one of
    /// its replicas (its pod's name).
    #[must_use]
    pub fn once(
        time: Timestamp,
        type_: &str,
        reason: &str,
        message: String,
        object: Option<String>,
    ) -> EventRecord {
        EventRecord {
            time,
            first_time: time,
            count: 1,
            type_: type_.to_owned(),
            reason: reason.to_owned(),
            message,
            object,
        }
    }
}

/// Why a job in `state` ([`JobRecord::state`]) whose replicas do not get on says so in its row
/// (`get -o wide`'s REASON, the dashboard's Jobs page): `CrashLoopBackOff` when it is `Running`
/// or `Restarting` and each of its replicas that has not ended (`Succeeded`, `Failed`,
/// `Stopped`) is waiting out a restart back-off, as kubectl shows a crash-looping pod's STATUS.
/// `None` when one runs, waits otherwise, or none is left.
#[must_use]
pub fn replicas_reason(state: &str, replicas: &[ReplicaRecord]) -> Option<&'static str> {
    if state != "Running" && state != "Restarting" {
        return None;
    }
    let mut left = replicas.iter().filter(|replica| {
        !matches!(
            replica.state,
            ReplicaState::Succeeded | ReplicaState::Failed | ReplicaState::Stopped
        )
    });
    let first = left.next()?;
    (first.state == ReplicaState::CrashLoopBackOff
        && left.all(|replica| replica.state == ReplicaState::CrashLoopBackOff))
    .then_some(ReplicaState::CrashLoopBackOff.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replica_state_parses_its_own_spelling() {
        for state in ReplicaState::ALL {
            assert_eq!(state.as_str().parse::<ReplicaState>(), Ok(state));
        }
        assert!("running".parse::<ReplicaState>().is_err());
    }

    #[test]
    fn a_job_says_crash_loop_back_off_when_each_replica_left_waits_out_a_back_off() {
        use ReplicaState::{CrashLoopBackOff, Failed, Pending, Running, Stopped, Succeeded};
        use trainctl_api::ReplicaType;

        use crate::store::fixtures::pending_replica;

        let replicas = |states: &[ReplicaState]| -> Vec<ReplicaRecord> {
            states
                .iter()
                .zip(0..)
                .map(|(&state, index)| ReplicaRecord {
                    state,
                    ..pending_replica("uid", ReplicaType::Worker, index)
                })
                .collect()
        };
        for (states, reason) in [
            (&[CrashLoopBackOff][..], Some("CrashLoopBackOff")),
            (
                &[CrashLoopBackOff, CrashLoopBackOff],
                Some("CrashLoopBackOff"),
            ),
            // Those that ended do not keep the others from saying so.
            (
                &[Succeeded, CrashLoopBackOff, Stopped],
                Some("CrashLoopBackOff"),
            ),
            (&[CrashLoopBackOff, Running], None),
            (&[Pending, CrashLoopBackOff], None),
            (&[Failed, Stopped], None),
            (&[], None),
        ] {
            assert_eq!(
                replicas_reason("Running", &replicas(states)),
                reason,
                "{states:?}"
            );
        }
        let looping = replicas(&[CrashLoopBackOff]);
        assert_eq!(
            replicas_reason("Restarting", &looping),
            Some("CrashLoopBackOff")
        );
        // A job whose trainctl process is gone runs nothing, whatever its replicas last were.
        for state in ["Lost", "Failed", "Suspended", "Pending"] {
            assert_eq!(replicas_reason(state, &looping), None, "{state}");
        }
    }
}
