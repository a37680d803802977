//! The end of a run, however it ends: the job finished, a request from outside (Ctrl-C, suspend,
//! delete, a server's shutdown), or a job that can never run here. Replicas still running are
//! stopped (`SIGTERM` to their group, their grace period, then `SIGKILL`; at once on a second
//! Ctrl-C), what they left behind is killed, the watchdog is told, and the outcome goes to the
//! store with the resources given back, in one write, which a full disk does not lose (see
//! `write_behind`).
//!
//! A job that succeeded or failed by itself then has its notification started
//! ([`crate::notify`]); one whose run was stopped from outside (interrupted, suspended, deleted,
//! a server's shutdown) has none.
//!
//! What is decided here without a process (which pods to stop, the status of a job ended by
//! trainctl rather than by the engine, how the run ended, whose logs a notification quotes) is a
//! plain function, with unit tests.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use nix::sys::signal::Signal;
use tokio::time::Instant;
use trainctl_api::{ConditionStatus, JobCondition, JobConditionType, JobStatus, TrainingJob};
use trainctl_engine::reconcile::{PodPhase, ReplicaSlot};

use super::control::StopRequest;
use super::launch::PreparedReplica;
use super::pod::LocalPod;
use super::write_behind::WRITE_DELAY;
use super::{ReplicaSummary, RunEnd, RunError, Runner, report, sleep_until};
use crate::notify::{self, Delivery, FailedReplica, FinalState, Notification, NotifySettings};
use crate::process::marker::kill_marked;
use crate::process::reaper::signal_group;
use crate::store::{ReplicaState, Store};

/// How long replicas may take to stop before the run says it waits for their grace period.
const PATIENCE: Duration = Duration::from_secs(1);

impl Runner<'_> {
    /// Ends the run on a request from outside: every replica stopped, the resources given back.
    pub(super) async fn stop(
        &mut self,
        request: StopRequest,
        store: &mut Store,
    ) -> Result<RunEnd, RunError> {
        if let StopRequest::Interrupt(signal) = request {
            self.console.say(&format!(
                "{}: stopping every replica (press Ctrl-C again to kill them now)",
                signal_words(signal)
            ));
            self.interrupt(signal);
        }
        self.wind_down(store).await?;
        Ok(end_of(request))
    }

    /// The end of every run: the replicas still running are stopped, then the outcome, their
    /// ends and the resources given back go in one write. A stop that takes longer than
    /// [`WRITE_DELAY`] (a grace period) has the outcome written first. A full disk takes the
    /// space kept for the outcome, or has the outcome wait for space
    /// ([`Runner::write_outcome`]).
    pub(super) async fn wind_down(&mut self, store: &mut Store) -> Result<(), RunError> {
        self.stop_all(store).await?;
        self.write_outcome(store).await
    }

    /// Records that the user stopped the run: the job fails with reason `Interrupted`.
    fn interrupt(&mut self, signal: Signal) {
        let message = format!(
            "{} {} was interrupted ({}); its replicas were stopped.",
            self.job.kind().as_str(),
            self.job.name(),
            signal.as_str()
        );
        self.finish_with(JobConditionType::Failed, "Interrupted", &message);
    }

    /// Fails the job before it starts: it can never run on this machine as written. What it was
    /// admitted with is given back in the same write, which takes the space kept for outcomes
    /// when the disk is full ([`Runner::write_outcome_now`]).
    pub(super) fn fail_at_once(
        &mut self,
        store: &mut Store,
        message: &str,
    ) -> Result<(), RunError> {
        let reason = format!("{}Failed", self.job.kind().as_str());
        self.finish_with(JobConditionType::Failed, &reason, message);
        self.write_outcome_now(store)
    }

    /// Ends the job with a condition the engine did not decide (it never saw why).
    fn finish_with(&mut self, type_: JobConditionType, reason: &str, message: &str) {
        let status = finished_status(&self.job, type_, reason, message, &Time(Timestamp::now()));
        report::condition_changes(self.job.status(), &status, self.console);
        *self.job.status_mut() = Some(status);
        self.changes.job();
    }

    /// Stops every replica still running: `SIGTERM` to its group, then `SIGKILL` after its grace
    /// period (at once on a second Ctrl-C); marks them stopped for the write that follows. Once
    /// the stop has taken [`WRITE_DELAY`], what is known is written: the outcome does not wait
    /// for a grace period. Then what the replicas left behind is killed, and the watchdog is
    /// told that nothing is left to guard.
    async fn stop_all(&mut self, store: &mut Store) -> Result<(), RunError> {
        let prepared = &self.prepared;
        let grace_of = |slot: &ReplicaSlot| {
            prepared
                .get(slot)
                .map_or(Duration::ZERO, |p| p.launch.grace)
        };
        let stopping = stop_pods(&mut self.pods, grace_of, Instant::now());
        for &pid in &stopping.terminate {
            signal_group(pid, Signal::SIGTERM);
        }
        self.changes.replicas(stopping.changed);
        let mut write_at = Some(Instant::now() + WRITE_DELAY);
        // A replica that takes its grace period is said to, once: the run is not stuck.
        let mut patience_at = (!stopping.terminate.is_empty()).then(|| Instant::now() + PATIENCE);
        while !self.exits.is_empty() {
            let deadline = self.pods.values().filter_map(|pod| pod.deleting).min();
            tokio::select! {
                Some(Ok(exit)) = self.exits.join_next() => {
                    if let Some(watchdog) = &mut self.oversight.watchdog {
                        watchdog.forget(exit.pid);
                    }
                    if let Some(pod) = self.pods.get_mut(&exit.slot) {
                        exited_while_stopping(pod, exit.generation, exit.ended.map(|ended| ended.code));
                    }
                    self.changes.replica(exit.slot);
                }
                () = sleep_until(deadline) => self.kill_overdue(Instant::now()),
                () = sleep_until(write_at) => {
                    write_at = None;
                    self.flush(store)?;
                }
                () = sleep_until(patience_at) => {
                    patience_at = None;
                    self.say_still_stopping(Instant::now());
                }
                _ = self.oversight.stops.recv() => self.kill_all(),
            }
        }
        if self.adopted {
            kill_marked(&self.uid);
        } else {
            self.reaper.kill_strays(&self.uid);
        }
        if let Some(watchdog) = &mut self.oversight.watchdog {
            watchdog.done();
        }
        Ok(())
    }

    /// Starts the notification of a job that ended as `end`, whose replicas ended as
    /// `replicas`: only a job that succeeded or failed by itself is notified, and only when
    /// someone is to be told: the run's recipients (`--on-finish`, `--webhook`), and the job's
    /// own command (`submit --on-finish`), which is delivered on its own, unawaited.
    pub(super) fn notify(&self, end: RunEnd, replicas: &[ReplicaSummary]) -> Option<Delivery> {
        let state = final_state(end)?;
        let settings = &self.settings.notify;
        let own = notify::job_command(&self.logs_dir).map(|command| NotifySettings {
            on_finish: Some(command),
            webhooks: Vec::new(),
            timeout: settings.timeout,
        });
        if settings.is_empty() && own.is_none() {
            return None;
        }
        let failed = match state {
            FinalState::Failed => failed_replicas(replicas, &self.prepared),
            FinalState::Succeeded => Vec::new(),
        };
        let mut notification = Notification::new(self.job.clone(), state);
        notification.cause = super::failure_cause(&self.job, &self.records());
        if let Some(own) = own {
            // Its outcome is logged; it goes on as long as this process does.
            drop(notify::deliver(&own, notification.clone(), failed.clone()));
        }
        (!settings.is_empty()).then(|| notify::deliver(settings, notification, failed))
    }

    /// Says which replicas are still taking their grace period after `SIGTERM`, and when they
    /// are killed: `waiting for worker-0, worker-1 to stop: SIGKILL in 28s (their grace
    /// period; Ctrl-C again to kill them now)`.
    fn say_still_stopping(&self, now: Instant) {
        let stopping: Vec<(&ReplicaSlot, Instant)> = self
            .pods
            .iter()
            .filter(|(_, pod)| pod.running.is_some())
            .filter_map(|(slot, pod)| Some((slot, pod.deleting?)))
            .collect();
        let Some(last) = stopping.iter().map(|&(_, at)| at).max() else {
            return;
        };
        let names: Vec<String> = stopping.iter().map(|(slot, _)| slot.to_string()).collect();
        self.console.say(&format!(
            "waiting for {} to stop: SIGKILL in {}s (the grace period, \
             terminationGracePeriodSeconds; Ctrl-C again to kill now)",
            names.join(", "),
            last.saturating_duration_since(now).as_secs_f64().ceil()
        ));
    }

    /// `SIGKILL` to every replica still running (a second Ctrl-C).
    fn kill_all(&mut self) {
        for pod in self.pods.values() {
            if let Some(running) = pod.running {
                signal_group(running.pid, Signal::SIGKILL);
            }
        }
    }
}

/// What stopping the pods at the end of a run changed and asks for.
#[derive(Debug, Default, PartialEq, Eq)]
struct Stopping {
    /// The slots whose records changed.
    changed: Vec<ReplicaSlot>,
    /// The process groups to send `SIGTERM`.
    terminate: Vec<i32>,
}

/// Marks every pod that has not ended as stopped by trainctl: none restarts any more; one whose
/// process runs has `grace_of` its slot, from `now`, before it is killed (its group is to get
/// `SIGTERM`, unless it is being deleted already); a finished or deleted pod stays as it is.
fn stop_pods(
    pods: &mut BTreeMap<ReplicaSlot, LocalPod>,
    grace_of: impl Fn(&ReplicaSlot) -> Duration,
    now: Instant,
) -> Stopping {
    let mut stopping = Stopping::default();
    for (slot, pod) in pods {
        pod.restart_due = None;
        if let Some(running) = pod.running {
            pod.stopped = true;
            // The last exit code was an earlier start's: until this one's stop is seen, the
            // record shows none rather than a crash that is over.
            pod.exit_code = None;
            pod.last_reason = None;
            if pod.deleting.is_none() {
                pod.deleting = Some(now + grace_of(slot));
                stopping.terminate.push(running.pid);
            }
        } else if !pod.is_finished() && !pod.gone {
            match pod.exit_code {
                // Waiting out a back-off after its own exit: it ended as that exit made it, a
                // failure of its own and not a stop.
                Some(code) => {
                    pod.phase = if code == 0 {
                        PodPhase::Succeeded
                    } else {
                        PodPhase::Failed
                    };
                    pod.finished_at.get_or_insert_with(Timestamp::now);
                }
                None => pod.stopped = true,
            }
        } else {
            continue;
        }
        stopping.changed.push(slot.clone());
    }
    stopping
}

/// A pod's process of `generation` exited with `code` while the run stops: the pod keeps its
/// phase (it was stopped, not ended by its own doing) and records the code; one that exited 0
/// ended well (it finished as the job did, or on `SIGTERM` as asked) and is `Succeeded`, as
/// the kubelet reports a container that exits 0. An exit of an older start changes nothing.
fn exited_while_stopping(pod: &mut LocalPod, generation: u64, code: Option<i32>) {
    if pod.running.is_some_and(|r| r.generation == generation) {
        pod.running = None;
        // Unknown (no one saw the exit) is recorded as unknown, never as a made-up code.
        pod.exit_code = code;
        if code == Some(0) {
            pod.stopped = false;
            pod.phase = PodPhase::Succeeded;
            pod.finished_at.get_or_insert_with(Timestamp::now);
        }
    }
}

/// The status of `job` ended by trainctl with a condition `type_` (`reason`, `message`) at
/// `now`: as when the engine ends a job, a `Pending` explanation in `Created` no longer holds,
/// and `Running` or `Restarting` is no longer true.
fn finished_status(
    job: &TrainingJob,
    type_: JobConditionType,
    reason: &str,
    message: &str,
    now: &Time,
) -> JobStatus {
    let mut status = job.status().cloned().unwrap_or_default();
    let kind = job.kind().as_str();
    let created = format!("{kind} {} is created.", job.name());
    match status
        .conditions
        .iter_mut()
        .find(|c| c.type_ == JobConditionType::Created)
    {
        Some(existing) => existing.message.clone_from(&created),
        None => status.conditions.push(condition(
            JobConditionType::Created,
            &format!("{kind}Created"),
            &created,
            now,
        )),
    }
    for existing in &mut status.conditions {
        if matches!(
            existing.type_,
            JobConditionType::Running | JobConditionType::Restarting
        ) && existing.status == ConditionStatus::True
        {
            existing.status = ConditionStatus::False;
            existing.last_transition_time = Some(now.clone());
        }
    }
    status
        .conditions
        .push(condition(type_, reason, message, now));
    status.completion_time = Some(now.clone());
    status
}

fn condition(type_: JobConditionType, reason: &str, message: &str, now: &Time) -> JobCondition {
    JobCondition {
        type_,
        status: ConditionStatus::True,
        reason: reason.to_owned(),
        message: message.to_owned(),
        last_update_time: Some(now.clone()),
        last_transition_time: Some(now.clone()),
    }
}

/// How a run whose job finished ended: `Succeeded` when its status says so, else `Failed`.
pub(super) fn outcome(job: &TrainingJob) -> RunEnd {
    let succeeded = job
        .status()
        .is_some_and(|status| status.is_true(JobConditionType::Succeeded));
    if succeeded {
        RunEnd::Succeeded
    } else {
        RunEnd::Failed
    }
}

/// The state a notification tells of a run that ended as `end`; `None` when the job did not
/// finish by itself (a run stopped from outside is not notified).
fn final_state(end: RunEnd) -> Option<FinalState> {
    match end {
        RunEnd::Succeeded => Some(FinalState::Succeeded),
        RunEnd::Failed => Some(FinalState::Failed),
        RunEnd::Interrupted(_) | RunEnd::Suspended | RunEnd::Deleted | RunEnd::Shutdown => None,
    }
}

/// The replicas of `replicas` that failed by themselves, with their log files: those a
/// failed job's notification quotes. A replica that trainctl stopped is not among them.
fn failed_replicas(
    replicas: &[ReplicaSummary],
    prepared: &BTreeMap<ReplicaSlot, PreparedReplica>,
) -> Vec<FailedReplica> {
    replicas
        .iter()
        .filter(|replica| replica.state == ReplicaState::Failed)
        .filter_map(|replica| {
            Some(FailedReplica {
                name: replica.slot.to_string(),
                log_path: prepared.get(&replica.slot)?.launch.log_path.clone(),
            })
        })
        .collect()
}

/// How a run that `request` stopped ended.
fn end_of(request: StopRequest) -> RunEnd {
    match request {
        StopRequest::Interrupt(signal) => RunEnd::Interrupted(signal),
        StopRequest::Delete => RunEnd::Deleted,
        StopRequest::Shutdown | StopRequest::Suspend => RunEnd::Shutdown,
    }
}

fn signal_words(signal: Signal) -> &'static str {
    match signal {
        Signal::SIGINT => "interrupted (Ctrl-C)",
        Signal::SIGHUP => "the terminal hung up",
        _ => "terminated",
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod notification_tests {
    use std::path::PathBuf;

    use trainctl_api::ReplicaType;

    use super::*;
    use crate::kubelet::volumes::ReplicaVolumes;
    use crate::process::Launch;
    use crate::process::logs::LogLimit;
    use crate::runner::pod::PodRestart;

    fn summary(slot: &ReplicaSlot, state: ReplicaState) -> ReplicaSummary {
        ReplicaSummary {
            slot: slot.clone(),
            state,
            exit_code: None,
            restarts: 0,
            port: None,
            gpus: Vec::new(),
        }
    }

    fn prepared(slot: &ReplicaSlot) -> PreparedReplica {
        PreparedReplica {
            launch: Launch {
                argv: vec!["true".to_owned()],
                env: Vec::new(),
                working_dir: None,
                grace: Duration::ZERO,
                log_path: PathBuf::from(format!("/logs/{slot}.log")),
                log_limit: LogLimit {
                    max_size: 0,
                    max_files: 1,
                },
                prefix: String::new(),
                mounts: None,
                limits: crate::process::cgroup::Limits::default(),
            },
            policy: PodRestart::Never,
            port: None,
            gpus: Vec::new(),
            volumes: ReplicaVolumes::default(),
        }
    }

    #[test]
    fn only_a_job_that_finished_by_itself_is_notified() {
        assert_eq!(final_state(RunEnd::Succeeded), Some(FinalState::Succeeded));
        assert_eq!(final_state(RunEnd::Failed), Some(FinalState::Failed));
        for end in [
            RunEnd::Interrupted(Signal::SIGINT),
            RunEnd::Suspended,
            RunEnd::Deleted,
            RunEnd::Shutdown,
        ] {
            assert_eq!(final_state(end), None, "{end:?}");
        }
    }

    #[test]
    fn a_failed_job_quotes_the_logs_of_the_replicas_that_failed_by_themselves() {
        let chief = ReplicaSlot::new(ReplicaType::Chief, 0);
        let failed = ReplicaSlot::new(ReplicaType::Worker, 1);
        let stopped = ReplicaSlot::new(ReplicaType::Worker, 2);
        let never_prepared = ReplicaSlot::new(ReplicaType::Worker, 3);
        let replicas = [
            summary(&chief, ReplicaState::Succeeded),
            summary(&failed, ReplicaState::Failed),
            summary(&stopped, ReplicaState::Stopped),
            summary(&never_prepared, ReplicaState::Failed),
        ];
        let prepared: BTreeMap<ReplicaSlot, PreparedReplica> = [&chief, &failed, &stopped]
            .into_iter()
            .map(|slot| (slot.clone(), prepared(slot)))
            .collect();
        assert_eq!(
            failed_replicas(&replicas, &prepared),
            [FailedReplica {
                name: "worker-1".to_owned(),
                log_path: PathBuf::from("/logs/worker-1.log"),
            }]
        );
    }
}
