//! Carrying out the engine's plan: pods created are processes started, pods deleted are groups
//! stopped (`SIGTERM`, the grace period, `SIGKILL`), services are the reserved ports; and the
//! kubelet's part, which the engine leaves to it: a process that exits is restarted in place
//! after its back-off, or its pod ends, by the pod's `restartPolicy`.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use nix::sys::signal::Signal;
use tokio::time::Instant;
use trainctl_engine::reconcile::{
    DeleteReason, Deletion, EventType, JobEvent, Plan, ReplicaExit, ReplicaSlot, Resource,
};

use super::pod::{AfterExit, LocalPod, OOM_KILLED, PodRestart};
use super::{Exit, Runner, Supervision, report};
use crate::kubelet::admission::amount_words;
use crate::process::reaper::signal_group;
use crate::store::EventRecord;

/// After how many alike exits in a row a replica's log is pointed at.
const REPEATED_EXITS: u32 = 3;

/// How long after a `SIGKILL` a replica that has still not exited gets another.
const KILL_MARGIN: Duration = Duration::from_secs(5);

impl Runner<'_> {
    /// Carries out the engine's plan; the store sees its changes at the next [`Runner::flush`].
    pub(super) fn apply(&mut self, plan: Plan) {
        for deletion in &plan.delete_pods {
            self.delete_pod(deletion);
        }
        for deletion in &plan.delete_services {
            self.services.remove(&deletion.slot);
        }
        self.services.extend(plan.create_services.iter().cloned());
        for slot in &plan.create_pods {
            self.create_pod(slot);
        }
        for exit in self.reported_exits.unreported(&plan.exits) {
            let event = exit.event(&self.job);
            self.record_event(&event);
        }
        for event in &plan.events {
            self.record_event(event);
        }
        let ledger_changed = self.retired_restarts != plan.retired_restarts;
        self.retired_restarts = plan.retired_restarts;
        self.requeue_at = plan
            .requeue_after
            .map(|after| Instant::now() + after.unsigned_abs());
        let status_changed = plan.status.is_some();
        if let Some(status) = plan.status {
            report::condition_changes(self.job.status(), &status, self.console);
            *self.job.status_mut() = Some(status);
        }
        if status_changed || ledger_changed {
            self.changes.job();
        }
    }

    /// Creates the slot's pod and starts its process.
    fn create_pod(&mut self, slot: &ReplicaSlot) {
        let Some(prepared) = self.prepared.get(slot) else {
            return;
        };
        self.pods
            .insert(slot.clone(), LocalPod::new(prepared.policy));
        self.start_process(slot);
    }

    /// Starts the slot's process (first start or an in-place restart).
    fn start_process(&mut self, slot: &ReplicaSlot) {
        if !self.pods.contains_key(slot) {
            return;
        }
        self.count_start(slot);
        let (Some(prepared), Some(pod)) = (self.prepared.get(slot), self.pods.get_mut(slot)) else {
            return;
        };
        let now = Timestamp::now();
        let started = match &self.settings.supervision {
            Supervision::Attached => {
                self.reaper
                    .start_replica(&prepared.launch, &self.uid, self.console)
            }
            Supervision::Detached { .. } => {
                self.reaper.start_kept_replica(&prepared.launch, &self.uid)
            }
        };
        match started {
            Ok(started) => {
                let generation = pod.started(started.pid, now);
                if let Some(watchdog) = &mut self.oversight.watchdog {
                    watchdog.watch(started.pid, prepared.launch.grace);
                }
                let slot = slot.clone();
                let pid = started.pid;
                self.exits.spawn(async move {
                    let ended = started.exited().await;
                    Exit {
                        slot,
                        generation,
                        pid,
                        ended: Some(ended),
                    }
                });
            }
            Err(error) => {
                let code = if error.kind() == std::io::ErrorKind::NotFound {
                    127
                } else {
                    126
                };
                self.console
                    .say(&format!("{slot}: cannot start its process: {error}"));
                let generation = pod.started(0, now);
                let after = pod.exited(generation, code, now, &self.settings.backoff);
                self.after_exit(slot, code, after);
            }
        }
        self.changes.replica(slot.clone());
    }

    /// Counts a start of the slot's process; every start after the first is a restart, in place or
    /// by re-creating the pod.
    fn count_start(&mut self, slot: &ReplicaSlot) {
        *self.starts.entry(slot.clone()).or_default() += 1;
    }

    /// The restarts the slot's process has made.
    pub(super) fn restarts_of(&self, slot: &ReplicaSlot) -> i32 {
        self.starts
            .get(slot)
            .map_or(0, |starts| starts.saturating_sub(1))
    }

    /// Deletes the slot's pod: `SIGTERM` to its group while its process runs, else at once.
    fn delete_pod(&mut self, deletion: &Deletion) {
        let Some(pod) = self.pods.get_mut(&deletion.slot) else {
            return;
        };
        pod.suspended = deletion.why == DeleteReason::Suspend;
        match pod.running {
            Some(running) if pod.deleting.is_none() => {
                let grace = self
                    .prepared
                    .get(&deletion.slot)
                    .map_or(Duration::ZERO, |p| p.launch.grace);
                pod.deleting = Some(Instant::now() + grace);
                signal_group(running.pid, Signal::SIGTERM);
            }
            Some(_) => {}
            None => pod.delete(Timestamp::now()),
        }
        self.changes.replica(deletion.slot.clone());
    }

    /// Applies the kubelet's rules to a replica's exit.
    pub(super) fn on_exit(&mut self, exit: &Exit) {
        if let Some(watchdog) = &mut self.oversight.watchdog {
            watchdog.forget(exit.pid);
        }
        let Some(pod) = self.pods.get_mut(&exit.slot) else {
            return;
        };
        let Some(ended) = exit.ended else {
            if pod.vanished(exit.generation) {
                self.record_event(&JobEvent {
                    type_: EventType::Warning,
                    reason: "ReplicaLost".to_owned(),
                    message: lost_message(&exit.slot, exit.pid),
                });
                self.changes.replica(exit.slot.clone());
            }
            return;
        };
        let code = ended.code;
        let after = pod.exited(
            exit.generation,
            code,
            Timestamp::now(),
            &self.settings.backoff,
        );
        if after.is_some() {
            pod.last_reason = ended.oom_killed.then_some(OOM_KILLED);
            if ended.oom_killed {
                self.record_oom_kill(&exit.slot, code);
            }
        }
        if self.reaper.lost_with_its_shim(exit.pid) {
            let pod = exit.slot.name(self.job.name());
            let message = format!(
                "the shim that kept the output of pod {pod} died: the replica, whose output had \
                 no reader any more, was stopped (exit code {code}); a new shim starts it again \
                 as its restart policy says"
            );
            self.console.say(&format!("{}: {message}", exit.slot));
            self.record_event(&JobEvent {
                type_: EventType::Warning,
                reason: "ShimLost".to_owned(),
                message,
            });
        }
        self.after_exit(&exit.slot, code, after);
        self.changes.replica(exit.slot.clone());
    }

    /// Reports an exit: on the terminal, and, for a process restarted in place, in the job's
    /// events as the kubelet and the operator record them (`ExitedWithCode`, then `BackOff`),
    /// with a hint at its log once it has exited alike three times in a row.
    fn after_exit(&mut self, slot: &ReplicaSlot, code: i32, after: Option<AfterExit>) {
        let Some(after) = after else { return };
        let policy = self.pods.get(slot).map(|pod| pod.policy);
        let restarts = self.pods.get(slot).map_or(0, |pod| pod.restart_count);
        let same_exits = self.pods.get(slot).map_or(0, |pod| pod.same_exits);
        let what = report::exit_words(code);
        match after {
            AfterExit::Restart(delay) => {
                self.console.say(&format!(
                    "{slot} {what}; restarting it in {} (restartPolicy {}, restart {restarts})",
                    report::duration_words(delay),
                    policy.map_or("", PodRestart::as_str),
                ));
                self.record_restart(slot, code, same_exits);
            }
            AfterExit::Finished(_) if code != 0 => self.console.say(&format!("{slot} {what}")),
            AfterExit::Finished(_) | AfterExit::Gone => {}
        }
    }

    /// Records that the kernel killed a process of the slot's replica for its memory limit, as
    /// the kubelet reports a container (`OOMKilled`); said on the terminal too.
    fn record_oom_kill(&mut self, slot: &ReplicaSlot, code: i32) {
        let limit = self
            .prepared
            .get(slot)
            .and_then(|prepared| prepared.launch.limits.memory_bytes)
            .map_or_else(
                || "its memory limit".to_owned(),
                |bytes| {
                    format!(
                        "its limit of {}",
                        amount_words(Resource::MemoryBytes, bytes)
                    )
                },
            );
        let pod = slot.name(self.job.name());
        self.record_event(&JobEvent::new(
            EventType::Warning,
            OOM_KILLED,
            format!(
                "the kernel killed a process of pod {pod} for using more than {limit} \
                 (OOMKilled); the replica exited with code {code}: raise \
                 `resources.limits.memory`, or use less"
            ),
        ));
    }

    /// Records a process restarted in place after exiting with `code`, `same_exits` times in a
    /// row with that code.
    fn record_restart(&mut self, slot: &ReplicaSlot, code: i32, same_exits: u32) {
        let exit = ReplicaExit {
            slot: slot.clone(),
            exit_code: code,
            finished_at: Some(Timestamp::now()),
        };
        self.store_event(&exit.event(&self.job));
        // About the pod, as the kubelet's, and in the same words each time (the delay is the
        // replica's state's: `describe` says when it starts next), so that the restarts of a
        // crash loop add up to one line.
        let pod = slot.name(self.job.name());
        self.store_event_about(
            &JobEvent::new(
                EventType::Warning,
                "BackOff",
                format!("Back-off restarting failed container of pod {pod}"),
            ),
            Some(pod),
        );
        if same_exits == REPEATED_EXITS {
            let job = self.job.name();
            let kind = self.job.kind().singular();
            self.console.say(&format!(
                "{slot} {} {REPEATED_EXITS} times in a row: see why in its log, `trainctl logs \
                 {kind} {job} --replica {slot}`",
                report::exit_words(code)
            ));
        }
    }

    /// Starts the replicas whose back-off is over, and kills those past their grace period.
    pub(super) fn on_timer(&mut self) {
        let now = Instant::now();
        let due: Vec<ReplicaSlot> = self
            .pods
            .iter()
            .filter(|(_, pod)| pod.running.is_none() && pod.deleting.is_none() && !pod.gone)
            .filter(|(_, pod)| pod.restart_due.is_some_and(|due| due <= now))
            .map(|(slot, _)| slot.clone())
            .collect();
        for slot in due {
            self.start_process(&slot);
        }
        self.kill_overdue(now);
    }

    /// `SIGKILL` for replicas still running past their grace period and margin.
    pub(super) fn kill_overdue(&mut self, now: Instant) {
        for pid in overdue(&mut self.pods, now) {
            signal_group(pid, Signal::SIGKILL);
        }
    }

    /// Records an event of the plan; a warning that is not a failure is also said.
    pub(super) fn record_event(&mut self, event: &JobEvent) {
        if event.type_ == EventType::Warning && !event.reason.ends_with("Failed") {
            self.console.say(&event.message);
        }
        self.store_event(event);
    }

    /// Records an event about the job in its events only (the terminal has heard of it
    /// already).
    pub(super) fn store_event(&mut self, event: &JobEvent) {
        self.store_event_about(event, None);
    }

    /// Records an event about the job (`object` `None`) or about the pod named `object`.
    fn store_event_about(&mut self, event: &JobEvent, object: Option<String>) {
        self.changes.event(EventRecord::once(
            Timestamp::now(),
            event.type_.as_str(),
            &event.reason,
            event.message.clone(),
            object,
        ));
    }
}

/// What is said of a replica whose exit no one saw.
fn lost_message(slot: &ReplicaSlot, pid: i32) -> String {
    format!(
        "{slot} (pid {pid}) ended while neither the server nor its shim ran: its exit code is \
         unknown. As a pod whose node vanished, its pod is deleted and created again"
    )
}

/// The process groups of the pods still running past their deletion deadline at `now`, each
/// given [`KILL_MARGIN`] more before it is killed again.
fn overdue(pods: &mut BTreeMap<ReplicaSlot, LocalPod>, now: Instant) -> Vec<i32> {
    let mut groups = Vec::new();
    for pod in pods.values_mut() {
        if let (Some(running), Some(deadline)) = (pod.running, pod.deleting)
            && deadline <= now
        {
            groups.push(running.pid);
            pod.deleting = Some(now + KILL_MARGIN);
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use trainctl_api::ReplicaType;

    use super::*;

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_pod_running_past_its_deadline_is_killed_again_after_the_margin() {
        let now = Instant::now();
        let slot = |index| ReplicaSlot::new(ReplicaType::Worker, index);
        let deleting = |pid, deadline| {
            let mut pod = LocalPod::new(PodRestart::Never);
            pod.started(pid, Timestamp::UNIX_EPOCH);
            pod.deleting = deadline;
            pod
        };
        let mut pods = BTreeMap::from([
            (slot(0), deleting(100, Some(now))),
            (slot(1), deleting(101, Some(now + Duration::from_secs(1)))),
            (slot(2), deleting(102, None)),
        ]);
        assert_eq!(overdue(&mut pods, now), [100]);
        assert_eq!(pods[&slot(0)].deleting, Some(now + KILL_MARGIN));
        assert_eq!(overdue(&mut pods, now + Duration::from_secs(1)), [101]);
        assert_eq!(overdue(&mut pods, now + KILL_MARGIN), [100]);
    }
}
