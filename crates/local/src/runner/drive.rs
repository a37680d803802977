//! The loop of a run: observe the pods, ask the engine, apply its plan, and wait for what
//! changes next (an exit, a timer, the admission queue, a stop request).

use std::collections::BTreeMap;

use jiff::Timestamp;
use tokio::sync::Notify;
use tokio::time::Instant;
use trainctl_engine::reconcile::{EventType, JobEvent, Observed, reconcile};

use super::control::StopRequest;
use super::{Exit, RunEnd, RunError, Runner, end, launch, preflight, sleep_until, volumes};
use crate::process::mounts;
use crate::store::Store;

/// At most this many reconciles in a row without waiting for anything, against a plan that never
/// settles.
const MAX_IMMEDIATE_RECONCILES: usize = 100;

/// What woke the runner up.
enum Wake {
    Exit(Exit),
    Timer,
    Queue,
    Stop(StopRequest),
    /// The watchdog exited before the run dismissed it, with this code.
    WatchdogLost(i32),
}

/// Until the watchdog, if there is one, exits: its code; never without one.
async fn watchdog_lost(watchdog: &mut Option<crate::process::watchdog::Watchdog>) -> i32 {
    match watchdog {
        Some(watchdog) => watchdog.lost().await,
        None => std::future::pending().await,
    }
}

impl Runner<'_> {
    /// Runs the job to its end, or until a request from outside ends the run.
    pub(super) async fn drive(&mut self, store: &mut Store) -> Result<RunEnd, RunError> {
        self.announce();
        if let Err(message) = self.volumes_available() {
            self.fail_at_once(store, &self.blocked_message(&message))?;
            return Ok(RunEnd::Failed);
        }
        let needs = match launch::needs(&self.job) {
            Ok(needs) => needs,
            Err(error) => {
                self.fail_at_once(store, &self.blocked_message(&error.to_string()))?;
                return Ok(RunEnd::Failed);
            }
        };
        let turn = self
            .oversight
            .coordinator
            .and_then(|coordinator| coordinator.turn(&self.uid));
        let mut immediate = 0;
        // Whether a job not admitted at once was checked: can every replica run here as
        // written? Admission finds out by preparing them.
        let mut checked = false;
        loop {
            if !self.admitted
                && !self.job.run_policy().is_suspended()
                && let Some(end) = self.seek_admission(store, &needs)?
            {
                return Ok(end);
            }
            if !self.admitted && !checked {
                // Before anything waits: a job that cannot run here fails now, not once admitted.
                if let Err(message) = self.check_runnable() {
                    self.fail_at_once(store, &self.replicas_blocked_message(&message))?;
                    return Ok(RunEnd::Failed);
                }
                checked = true;
            }
            let reconciled = Instant::now();
            let plan = reconcile(&self.job, &self.observed(), Timestamp::now());
            if let Some(coordinator) = self.oversight.coordinator {
                coordinator.reconciled(&self.job, &plan.transitions, reconciled.elapsed());
            }
            let busy = !plan.create_pods.is_empty()
                || !plan.delete_pods.is_empty()
                || plan.status.is_some();
            self.apply(plan);
            if self.is_finished() {
                break;
            }
            if self.job.run_policy().is_suspended() && self.exits.is_empty() && !busy {
                // Every replica is gone: what is left is to give back the resources.
                self.wind_down(store).await?;
                return Ok(RunEnd::Suspended);
            }
            if busy && immediate < MAX_IMMEDIATE_RECONCILES {
                immediate += 1;
                continue;
            }
            immediate = 0;
            self.write_when_due(store)?;
            let timer = self.next_timer();
            let waits_in_queue = !self.admitted && turn.is_some();
            let wake = tokio::select! {
                Some(Ok(exit)) = self.exits.join_next() => Wake::Exit(exit),
                () = sleep_until(timer) => Wake::Timer,
                () = my_turn(turn.as_deref()), if waits_in_queue => Wake::Queue,
                request = self.oversight.stops.recv() => Wake::Stop(request),
                code = watchdog_lost(&mut self.oversight.watchdog) => Wake::WatchdogLost(code),
            };
            match wake {
                Wake::Exit(exit) => {
                    self.on_exit(&exit);
                    // Exits that came together are decided together: one reconcile, one write.
                    while let Some(Ok(exit)) = self.exits.try_join_next() {
                        self.on_exit(&exit);
                    }
                }
                Wake::Timer => self.on_timer(),
                Wake::Queue => {}
                Wake::Stop(StopRequest::Suspend) => {
                    self.job.run_policy_mut().suspend = Some(true);
                    self.changes.job();
                }
                Wake::Stop(request) => return self.stop(request, store).await,
                Wake::WatchdogLost(code) => self.replace_watchdog(code),
            }
        }
        self.wind_down(store).await?;
        Ok(end::outcome(&self.job))
    }

    /// A watchdog that exited while the job runs (killed) is replaced by a new one, told of the
    /// job and its running replicas, so that the replicas still end should trainctl die; the
    /// terminal and the job's events say so.
    fn replace_watchdog(&mut self, code: i32) {
        let Some(old) = self.oversight.watchdog.take() else {
            return;
        };
        let lost = format!(
            "the watchdog (pid {}) that stops the replicas should trainctl die {}",
            old.pid(),
            super::report::exit_words(code)
        );
        let message = match self.reaper.start_watchdog(old.helper()) {
            Ok(mut watchdog) => {
                watchdog.guard(&self.uid);
                for (slot, pod) in &self.pods {
                    if let Some(running) = &pod.running {
                        let grace = self
                            .prepared
                            .get(slot)
                            .map_or(std::time::Duration::ZERO, |p| p.launch.grace);
                        watchdog.watch(running.pid, grace);
                    }
                }
                watchdog.flush();
                let message = format!("{lost}: a new one (pid {}) guards them", watchdog.pid());
                self.oversight.watchdog = Some(watchdog);
                message
            }
            Err(error) => format!(
                "{lost}, and no new one could be started ({error}): should trainctl die now, the \
                 replicas go on"
            ),
        };
        // Said on the terminal as the event is recorded.
        self.record_event(&JobEvent {
            type_: EventType::Warning,
            reason: "WatchdogLost".to_owned(),
            message,
        });
    }

    /// Says once that images are not used, and what is not run locally.
    fn announce(&mut self) {
        let images = launch::images(&self.job);
        let kind = self.job.kind().singular();
        let name = self.job.name();
        let images = if images.is_empty() {
            String::new()
        } else {
            let list = images.into_iter().collect::<Vec<_>>().join(", ");
            format!(" (not used locally: {list})")
        };
        self.console.say(&format!(
            "running {kind}/{name} on this machine: each replica runs its command with this machine's programs and files; container images are not pulled{images}"
        ));
        for (replica_type, names) in launch::not_run_locally(&self.job) {
            self.console.say(&format!(
                "{replica_type}: only the main container runs locally; not run: {}",
                names.join(", ")
            ));
        }
        for warning in preflight::script_warnings(&self.job) {
            self.console.say(&format!("warning: {}", warning.message));
            self.store_event(&JobEvent::new(
                EventType::Warning,
                "ScriptNotFound",
                warning.message,
            ));
        }
        if let Some(warning) = preflight::limits_warning(&self.job) {
            self.console.say(&format!("warning: {}", warning.message));
            self.store_event(&JobEvent::new(
                EventType::Warning,
                "LimitsNotEnforced",
                warning.message,
            ));
        }
    }

    /// Whether the replicas can have their volumes here: a user other than root needs
    /// unprivileged user namespaces. Without volumes (`--no-volumes`), which are left out.
    fn volumes_available(&mut self) -> Result<(), String> {
        let mounted = volumes::mounted(&self.job);
        if mounted.is_empty() {
            return Ok(());
        }
        if !self.settings.volumes {
            for (replica_type, names) in mounted {
                self.console.say(&format!(
                    "warning: {replica_type}: volumes not mounted (--no-volumes): {}",
                    names.join(", ")
                ));
            }
            return Ok(());
        }
        match mounts::unavailable() {
            Some(why) => Err(format!("the replicas' volumes cannot be mounted: {why}")),
            None => Ok(()),
        }
    }

    /// What the engine observes: the pods, the services, and why the job waits.
    fn observed(&self) -> Observed {
        Observed {
            pods: self
                .pods
                .iter()
                .filter(|(_, pod)| !pod.gone)
                .map(|(slot, pod)| (slot.clone(), pod.observed()))
                .collect(),
            services: self.services.clone(),
            gang: None,
            waiting: self.waiting.clone(),
            // A process is never refused: one that cannot start exits (126 or 127).
            refused: BTreeMap::new(),
            retired_restarts: self.retired_restarts,
            restart_backoff: self.settings.backoff,
        }
    }

    /// The earliest of: a restart due, a kill due, the engine's requeue, the next admission try,
    /// the next write.
    fn next_timer(&self) -> Option<Instant> {
        let pods = self.pods.values().filter_map(|pod| {
            if pod.running.is_some() {
                pod.deleting
            } else {
                pod.restart_due
            }
        });
        let admission = (!self.admitted).then(|| Instant::now() + self.settings.admission_poll);
        pods.chain(self.requeue_at)
            .chain(admission)
            .chain(self.changes.due())
            .min()
    }
}

/// Resolves when it may be the job's turn in the admission queue; never without a queue.
async fn my_turn(turn: Option<&Notify>) {
    match turn {
        Some(turn) => turn.notified().await,
        None => std::future::pending().await,
    }
}
