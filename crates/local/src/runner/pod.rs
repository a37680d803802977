//! One replica slot's "pod" as the local kubelet keeps it: its phase, restarts and process, and
//! the kubelet's rules for a process that exits (`restartPolicy` of the pod, back-off).

use std::time::Duration;

use jiff::Timestamp;
use tokio::time::Instant;
use trainctl_engine::reconcile::{ObservedReplica, PodPhase, RestartBackoff};

use crate::store::{ReplicaRecord, ReplicaState};

/// The kubelet's reason for a container the kernel killed for its memory limit.
pub const OOM_KILLED: &str = "OOMKilled";

/// A container that ran this long without trouble starts its back-off afresh (the kubelet's
/// rule).
const BACKOFF_RESET_AFTER: Duration = Duration::from_secs(600);

/// The pod-level restart policy (the engine maps the replica's `ExitCode` to `Never`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodRestart {
    /// Restart on any exit.
    Always,
    /// Restart on a non-zero exit.
    OnFailure,
    /// Never restart in place.
    Never,
}

impl PodRestart {
    /// The policy of a pod's `spec.restartPolicy` (Kubernetes' default is `Always`).
    #[must_use]
    pub fn parse(policy: Option<&str>) -> PodRestart {
        match policy {
            Some("OnFailure") => PodRestart::OnFailure,
            Some("Never") => PodRestart::Never,
            _ => PodRestart::Always,
        }
    }

    /// Whether a process that exited with `code` is started again in place.
    #[must_use]
    pub fn restarts_after(self, code: i32) -> bool {
        match self {
            PodRestart::Always => true,
            PodRestart::OnFailure => code != 0,
            PodRestart::Never => false,
        }
    }

    /// The policy's name, as in the manifest.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            PodRestart::Always => "Always",
            PodRestart::OnFailure => "OnFailure",
            PodRestart::Never => "Never",
        }
    }
}

/// The process running for a pod now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Running {
    /// The replica's pid (and its process group's id).
    pub pid: i32,
    /// Which start of the pod this is; an exit reported for an older start is stale.
    pub generation: u64,
    /// When it started, to reset the back-off after a long healthy run.
    pub since: Instant,
}

/// What the kubelet does after a process exits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterExit {
    /// The pod is being deleted: it is gone now.
    Gone,
    /// The pod ends in this phase.
    Finished(PodPhase),
    /// The process starts again after this back-off.
    Restart(Duration),
}

/// A replica slot's pod.
#[derive(Debug, Clone)]
pub struct LocalPod {
    /// Pending, Running, Succeeded or Failed, as the kubelet reports the pod.
    pub phase: PodPhase,
    /// In-place restarts so far.
    pub restart_count: i32,
    /// The last exit code.
    pub exit_code: Option<i32>,
    /// First start.
    pub started_at: Option<Timestamp>,
    /// When the pod finished (Succeeded or Failed).
    pub finished_at: Option<Timestamp>,
    /// The process, while one runs.
    pub running: Option<Running>,
    /// When the next in-place start is due, during back-off.
    pub restart_due: Option<Instant>,
    /// Deletion was asked for; `Some(deadline)` after which the group gets `SIGKILL`.
    pub deleting: Option<Instant>,
    /// Stopped by trainctl because the job ended, not by its own doing.
    pub stopped: bool,
    /// Deleted: no longer observed, kept for what it last was.
    pub gone: bool,
    /// Deleted because the job was suspended.
    pub suspended: bool,
    /// When its process last started.
    pub last_started: Option<Timestamp>,
    /// How many exits in a row had the same code as the last one.
    pub same_exits: u32,
    /// Why the last process ended, where the kernel said: [`OOM_KILLED`].
    pub last_reason: Option<&'static str>,
    /// The pod-level restart policy.
    pub policy: PodRestart,
    /// Back-off steps taken since the last reset.
    backoff_step: u32,
    /// Starts made so far (the next start's generation).
    starts: u64,
}

impl LocalPod {
    /// A pod that is about to start its first process.
    #[must_use]
    pub fn new(policy: PodRestart) -> LocalPod {
        LocalPod {
            phase: PodPhase::Pending,
            restart_count: 0,
            exit_code: None,
            started_at: None,
            finished_at: None,
            running: None,
            restart_due: None,
            deleting: None,
            stopped: false,
            gone: false,
            suspended: false,
            last_started: None,
            same_exits: 0,
            last_reason: None,
            policy,
            backoff_step: 0,
            starts: 0,
        }
    }

    /// A pod as a server that died left it on record, for the server that takes it over: its
    /// phase, restarts and last exit. A running pod gets its process with [`LocalPod::started`];
    /// one that was waiting to restart starts again now.
    #[must_use]
    pub fn taken_over(policy: PodRestart, record: &ReplicaRecord) -> LocalPod {
        let phase = match record.state {
            ReplicaState::Succeeded => PodPhase::Succeeded,
            ReplicaState::Failed => PodPhase::Failed,
            ReplicaState::Running | ReplicaState::CrashLoopBackOff => PodPhase::Running,
            ReplicaState::Pending | ReplicaState::Stopped | ReplicaState::Suspended => {
                PodPhase::Pending
            }
        };
        LocalPod {
            phase,
            restart_count: record.pod_restarts,
            exit_code: record.exit_code,
            started_at: record.started_at,
            finished_at: record.finished_at,
            restart_due: (phase == PodPhase::Running).then(Instant::now),
            ..LocalPod::new(policy)
        }
    }

    /// Records that the replica's process started with `pid`; returns its generation.
    pub fn started(&mut self, pid: i32, now: Timestamp) -> u64 {
        self.starts += 1;
        self.running = Some(Running {
            pid,
            generation: self.starts,
            since: Instant::now(),
        });
        self.phase = PodPhase::Running;
        self.restart_due = None;
        self.started_at.get_or_insert(now);
        self.last_started = Some(now);
        self.starts
    }

    /// Applies the kubelet's rules to an exit of the process of `generation` with `code`;
    /// `None` when the exit is stale (an older start).
    pub fn exited(
        &mut self,
        generation: u64,
        code: i32,
        now: Timestamp,
        backoff: &RestartBackoff,
    ) -> Option<AfterExit> {
        let running = self.running.filter(|r| r.generation == generation)?;
        self.running = None;
        self.same_exits = if self.exit_code == Some(code) {
            self.same_exits + 1
        } else {
            1
        };
        self.exit_code = Some(code);
        if self.deleting.is_some() {
            self.delete(now);
            return Some(AfterExit::Gone);
        }
        if self.policy.restarts_after(code) {
            if running.since.elapsed() >= BACKOFF_RESET_AFTER {
                self.backoff_step = 0;
            }
            let delay = backoff
                .delay(self.backoff_step)
                .unsigned_abs()
                .min(Duration::from_secs(u64::from(u32::MAX)));
            self.backoff_step += 1;
            self.restart_count += 1;
            self.restart_due = Some(Instant::now() + delay);
            return Some(AfterExit::Restart(delay));
        }
        self.phase = if code == 0 {
            PodPhase::Succeeded
        } else {
            PodPhase::Failed
        };
        self.finished_at = Some(now);
        Some(AfterExit::Finished(self.phase))
    }

    /// The process of `generation` ended with no one to see its exit (a server and its shim died
    /// together), so its exit code is unknown. As Kubernetes does with a pod whose node vanished
    /// (the pod garbage collector deletes it, and the operator creates the slot's pod again),
    /// the pod is gone, with no exit code made up for it; `false` when the exit is stale.
    pub fn vanished(&mut self, generation: u64) -> bool {
        if self.running.is_none_or(|r| r.generation != generation) {
            return false;
        }
        self.running = None;
        self.restart_due = None;
        self.gone = true;
        true
    }

    /// Deletes a pod without a process: one that finished, or one waiting to restart, which
    /// ends as its last exit made it.
    pub fn delete(&mut self, now: Timestamp) {
        self.gone = true;
        self.restart_due = None;
        if !self.is_finished() {
            self.phase = match self.exit_code {
                Some(0) => PodPhase::Succeeded,
                Some(_) => PodPhase::Failed,
                None => self.phase,
            };
            if self.is_finished() {
                self.finished_at.get_or_insert(now);
            }
        }
    }

    /// Whether the pod ended (Succeeded or Failed).
    #[must_use]
    pub fn is_finished(&self) -> bool {
        matches!(self.phase, PodPhase::Succeeded | PodPhase::Failed)
    }

    /// What the engine observes of this pod.
    #[must_use]
    pub fn observed(&self) -> ObservedReplica {
        ObservedReplica {
            phase: self.phase,
            exit_code: if self.is_finished() {
                self.exit_code
            } else {
                None
            },
            reason: self
                .last_reason
                .filter(|_| self.is_finished())
                .map(str::to_owned),
            message: None,
            restart_count: self.restart_count,
            deleting: self.deleting.is_some(),
            started_at: self.started_at,
            finished_at: self.finished_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use jiff::SignedDuration;

    use super::*;

    const BACKOFF: RestartBackoff = RestartBackoff {
        initial: SignedDuration::from_secs(10),
        max: SignedDuration::from_secs(300),
    };

    fn running(policy: PodRestart) -> (LocalPod, u64) {
        let mut pod = LocalPod::new(policy);
        let generation = pod.started(100, Timestamp::UNIX_EPOCH);
        (pod, generation)
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn on_failure_restarts_a_failed_process_with_doubling_back_off() {
        let (mut pod, first) = running(PodRestart::OnFailure);
        let after = pod.exited(first, 1, Timestamp::UNIX_EPOCH, &BACKOFF);
        assert_eq!(after, Some(AfterExit::Restart(Duration::from_secs(10))));
        let second = pod.started(101, Timestamp::UNIX_EPOCH);
        let after = pod.exited(second, 137, Timestamp::UNIX_EPOCH, &BACKOFF);
        assert_eq!(after, Some(AfterExit::Restart(Duration::from_secs(20))));
        assert_eq!((pod.phase, pod.restart_count), (PodPhase::Running, 2));
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn on_failure_finishes_a_pod_whose_process_succeeds() {
        let (mut pod, generation) = running(PodRestart::OnFailure);
        let after = pod.exited(generation, 0, Timestamp::UNIX_EPOCH, &BACKOFF);
        assert_eq!(after, Some(AfterExit::Finished(PodPhase::Succeeded)));
        assert_eq!(pod.observed().exit_code, Some(0));
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn always_restarts_even_a_successful_process() {
        let (mut pod, generation) = running(PodRestart::Always);
        let after = pod.exited(generation, 0, Timestamp::UNIX_EPOCH, &BACKOFF);
        assert!(matches!(after, Some(AfterExit::Restart(_))));
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn never_fails_the_pod_with_the_exit_code() {
        let (mut pod, generation) = running(PodRestart::Never);
        let after = pod.exited(generation, 143, Timestamp::UNIX_EPOCH, &BACKOFF);
        assert_eq!(after, Some(AfterExit::Finished(PodPhase::Failed)));
        let observed = pod.observed();
        assert_eq!(
            (observed.phase, observed.exit_code),
            (PodPhase::Failed, Some(143))
        );
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn back_off_starts_afresh_after_ten_minutes_of_running() {
        let (mut pod, first) = running(PodRestart::Always);
        pod.exited(first, 1, Timestamp::UNIX_EPOCH, &BACKOFF);
        let second = pod.started(101, Timestamp::UNIX_EPOCH);
        tokio::time::advance(BACKOFF_RESET_AFTER).await;
        let after = pod.exited(second, 1, Timestamp::UNIX_EPOCH, &BACKOFF);
        assert_eq!(after, Some(AfterExit::Restart(Duration::from_secs(10))));
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_deleted_pod_is_gone_when_its_process_exits() {
        let (mut pod, generation) = running(PodRestart::OnFailure);
        pod.deleting = Some(Instant::now());
        let after = pod.exited(generation, 143, Timestamp::UNIX_EPOCH, &BACKOFF);
        assert_eq!(after, Some(AfterExit::Gone));
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_pod_deleted_while_waiting_to_restart_ends_failed() {
        let (mut pod, generation) = running(PodRestart::OnFailure);
        pod.exited(generation, 3, Timestamp::UNIX_EPOCH, &BACKOFF);
        pod.delete(Timestamp::UNIX_EPOCH);
        assert_eq!(
            (pod.gone, pod.phase, pod.exit_code, pod.restart_due),
            (true, PodPhase::Failed, Some(3), None)
        );
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn an_exit_of_an_older_start_is_ignored() {
        let (mut pod, generation) = running(PodRestart::OnFailure);
        pod.exited(generation, 1, Timestamp::UNIX_EPOCH, &BACKOFF);
        pod.started(101, Timestamp::UNIX_EPOCH);
        assert_eq!(
            pod.exited(generation, 1, Timestamp::UNIX_EPOCH, &BACKOFF),
            None
        );
    }

    #[test]
    fn the_pod_policy_defaults_to_always_as_on_kubernetes() {
        assert_eq!(PodRestart::parse(None), PodRestart::Always);
        assert_eq!(PodRestart::parse(Some("Never")), PodRestart::Never);
    }
}
