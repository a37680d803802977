//! What `trainctl run` tells the user: condition changes as they happen, exits, and the final
//! per-replica summary.

use std::time::Duration;

use trainctl_api::{ConditionStatus, JobStatus};
use trainctl_engine::reconcile::{PodPhase, ReplicaSlot};

use crate::process::logs::Console;
use crate::runner::pod::LocalPod;
use crate::store::{ReplicaRecord, ReplicaState};

/// How one replica slot ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaSummary {
    /// The slot, e.g. `worker-1`.
    pub slot: ReplicaSlot,
    /// Its final state (`Stopped` when trainctl stopped it because the job ended).
    pub state: ReplicaState,
    /// Its last exit code.
    pub exit_code: Option<i32>,
    /// In-place restarts of its process.
    pub restarts: i32,
    /// Its loopback port.
    pub port: Option<u16>,
    /// The GPUs it saw.
    pub gpus: Vec<u32>,
}

impl ReplicaSummary {
    pub(super) fn of(slot: &ReplicaSlot, record: ReplicaRecord) -> ReplicaSummary {
        ReplicaSummary {
            slot: slot.clone(),
            state: record.state,
            exit_code: record.exit_code,
            restarts: record.restarts,
            port: record.port,
            gpus: record.gpus,
        }
    }
}

/// The store's state of a pod.
pub(super) fn state_of(pod: &LocalPod) -> ReplicaState {
    if pod.suspended {
        return ReplicaState::Suspended;
    }
    if pod.stopped {
        return ReplicaState::Stopped;
    }
    match pod.phase {
        PodPhase::Pending => ReplicaState::Pending,
        PodPhase::Running if pod.running.is_none() && pod.restart_due.is_some() => {
            ReplicaState::CrashLoopBackOff
        }
        PodPhase::Running => ReplicaState::Running,
        PodPhase::Succeeded => ReplicaState::Succeeded,
        PodPhase::Failed => ReplicaState::Failed,
    }
}

/// Prints each condition that became true (or changed its message) from `old` to `new`.
pub(super) fn condition_changes(old: Option<&JobStatus>, new: &JobStatus, console: &Console) {
    for condition in &new.conditions {
        if condition.status != ConditionStatus::True {
            continue;
        }
        let before = old.and_then(|old| old.condition(condition.type_));
        let unchanged = before.is_some_and(|before| {
            before.status == condition.status && before.message == condition.message
        });
        if !unchanged {
            console.say(&format!("{}: {}", condition.type_, condition.message));
        }
    }
}

/// `exited with code 1`, `was killed by SIGKILL (exit code 137)`.
#[must_use]
pub fn exit_words(code: i32) -> String {
    let signal = (129..=192)
        .contains(&code)
        .then(|| nix::sys::signal::Signal::try_from(code - 128).ok())
        .flatten();
    match signal {
        Some(signal) => format!("was ended by {} (exit code {code})", signal.as_str()),
        None => format!("exited with code {code}"),
    }
}

/// `1.5s`, `2m 30s`.
#[must_use]
pub fn duration_words(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis < 60_000 {
        let tenths = millis / 100;
        if tenths.is_multiple_of(10) {
            format!("{}s", tenths / 10)
        } else {
            format!("{}.{}s", tenths / 10, tenths % 10)
        }
    } else {
        let seconds = duration.as_secs();
        match (seconds / 3600, seconds / 60 % 60, seconds % 60) {
            (0, m, 0) => format!("{m}m"),
            (0, m, s) => format!("{m}m {s}s"),
            (h, m, _) => format!("{h}h {m}m"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_by_signal_name_the_signal() {
        assert_eq!(
            exit_words(137),
            "was ended by SIGKILL (exit code 137)".to_owned()
        );
        assert_eq!(exit_words(1), "exited with code 1");
        assert_eq!(exit_words(255), "exited with code 255");
    }

    #[test]
    fn durations_read_like_a_person_would_write_them() {
        assert_eq!(duration_words(Duration::from_millis(1500)), "1.5s");
        assert_eq!(duration_words(Duration::from_secs(10)), "10s");
        assert_eq!(duration_words(Duration::from_secs(150)), "2m 30s");
        assert_eq!(duration_words(Duration::from_secs(300)), "5m");
        assert_eq!(duration_words(Duration::from_secs(3700)), "1h 1m");
    }
}
