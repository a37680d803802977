//! `trainctl run`: one job on this machine, in the foreground, until it succeeds or fails.
//!
//! The runner decides nothing about the job: it observes its processes, asks the engine
//! ([`reconcile`]) what to do, and does it, as the operator does with pods. What it does itself is
//! the kubelet's part: start a replica's process, restart it in place by the pod's
//! `restartPolicy` with back-off, report its exit code, and stop it (`SIGTERM`, grace period,
//! `SIGKILL`). Around that: gang admission on the machine's capacity, loopback ports, the store,
//! and the terminal.

mod admit;
mod adopt;
mod control;
mod launch;
mod pod;
mod report;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use nix::sys::signal::Signal;
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio::time::Instant;
use trainctl_api::manifest::Companion;
use trainctl_api::{ConditionStatus, JobCondition, JobConditionType, JobStatus, TrainingJob};
use trainctl_engine::reconcile::{
    Deletion, EventType, ExitLedger, JobEvent, Observed, Plan, ReplicaSlot, RestartBackoff,
    WaitingFact, reconcile,
};

use crate::admission::Allocation;
use crate::logs::Console;
use crate::ports::PortReservation;
use crate::process::{HelperCommand, Reaper, Watchdog, kill_marked, signal_group};
use crate::process_identity::ProcessIdentity;
use crate::resources::{NodeCapacity, ReplicaNeeds};
use crate::store::{
    EventRecord, JobChanges, JobRecord, JobUpdate, ReplicaRecord, ReplicaState, Store, StoreError,
};

pub use self::admit::ResourceHold;
pub use self::control::{Coordinator, StopRequest, Stops};
pub use self::launch::LaunchError;
pub use self::pod::PodRestart;
pub use self::report::ReplicaSummary;

use self::admit::{Attempt, try_admit};
use self::launch::{LaunchContext, PreparedReplica, prepare};
use self::pod::{AfterExit, LocalPod};

/// How long after a `SIGKILL` a replica that has still not exited gets another.
const KILL_MARGIN: Duration = Duration::from_secs(5);
/// At most this many reconciles in a row without waiting for anything, against a plan that never
/// settles.
const MAX_IMMEDIATE_RECONCILES: usize = 100;
/// How long a change waits before it is written, so that what follows it within this time goes
/// in the same write: replicas that exit soon after they start, exits that come one after
/// another. A job is written at most 20 times a second however busy it is (a write takes about
/// 0.3 ms of CPU), and the store lags by 50 ms at most, which no reader of `trainctl get`
/// notices; the end of a run is written at once, and the watchdog hears of every process at once.
const WRITE_DELAY: Duration = Duration::from_millis(50);

/// How a run's replicas relate to the trainctl process that runs them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Supervision {
    /// `trainctl run` ([`run`]): the replicas end with trainctl. Their output goes to their log
    /// files, through trainctl when it shows them on the terminal, and the watchdog given to
    /// [`run`] stops them if trainctl dies.
    Attached,
    /// `trainctl server`: the replicas outlive a server that dies. The shim starts them (see
    /// [`Reaper::connect_shim`]), records their exit codes, and they write to their log files
    /// themselves; the next server takes them over.
    Detached {
        /// How to start the shim when none runs.
        shim: HelperCommand,
    },
}

/// The settings of a run, beyond the job.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// Whether the replicas end with trainctl or outlive it.
    pub supervision: Supervision,
    /// This machine's capacity.
    pub capacity: NodeCapacity,
    /// The kubelet's in-place restart back-off, also the engine's before re-creating a pod.
    pub backoff: RestartBackoff,
    /// What `spec.nodeName` reports.
    pub node_name: String,
    /// How often a job waiting for resources tries again.
    pub admission_poll: Duration,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// The job succeeded.
    Succeeded,
    /// The job failed.
    Failed,
    /// trainctl was asked to stop (Ctrl-C is `SIGINT`); the replicas were stopped.
    Interrupted(Signal),
    /// The job was suspended; its replicas were stopped and its resources given back.
    Suspended,
    /// The job is being deleted; its replicas were stopped.
    Deleted,
    /// The server is shutting down; the replicas were stopped and the job left unfinished.
    Shutdown,
}

/// The outcome of a run: the final job (with its status) and what each replica did.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The job, with its final status.
    pub job: TrainingJob,
    /// How it ended.
    pub end: RunEnd,
    /// Each replica slot's end.
    pub replicas: Vec<ReplicaSummary>,
    /// From the run's start to its end.
    pub duration: Duration,
}

/// Why a run could not be carried out (as opposed to a job that failed).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The state database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Signals could not be watched or ports reserved.
    #[error("{operation}: {source}")]
    Io {
        /// What was being done.
        operation: &'static str,
        /// Why it failed.
        source: std::io::Error,
    },
}

/// Runs `job` (defaulted and validated) to its end, recording it in `store`, its replicas guarded
/// by `watchdog` (started early, so that its start overlaps the run's own: see
/// [`Reaper::start_watchdog`]); `SIGINT`, `SIGTERM` and `SIGHUP` interrupt it.
pub async fn run(
    mut job: TrainingJob,
    companions: &[Companion],
    store: &mut Store,
    reaper: &Reaper,
    mut watchdog: Watchdog,
    settings: &RunSettings,
    console: &Console,
) -> Result<RunReport, RunError> {
    let stops = Stops::signals().map_err(|source| RunError::Io {
        operation: "cannot watch for Ctrl-C",
        source,
    })?;
    let record = new_record(&mut job, companions.to_vec(), Timestamp::now());
    watchdog.guard(&record.uid);
    let replaced = store.insert_job(&record)?;
    if let Some(old) = replaced.uid {
        // The replaced run's logs go with its record; the watchdog removes them off this path.
        let dir = store.logs_dir(&old);
        if !watchdog.remove_dir(&dir) {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    let oversight = Oversight {
        stops,
        coordinator: None,
        watchdog: Some(watchdog),
    };
    drive_record(record, store, reaper, settings, console, oversight).await
}

/// The message of a job whose replicas cannot run here as written.
fn cannot_run(errors: &[LaunchError]) -> String {
    let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
    format!("cannot run on this machine: {}", lines.join("; "))
}

/// A new record of `job`, owned by this process: gives the job its uid, creation time and
/// namespace.
#[must_use]
pub fn new_record(job: &mut TrainingJob, companions: Vec<Companion>, now: Timestamp) -> JobRecord {
    let uid = uuid::Uuid::new_v4().to_string();
    let metadata = job.metadata_mut();
    metadata.uid = Some(uid.clone());
    metadata.creation_timestamp = Some(Time(now));
    metadata
        .namespace
        .get_or_insert_with(|| "default".to_owned());
    JobRecord {
        uid,
        namespace: job.namespace().to_owned(),
        name: job.name().to_owned(),
        kind: job.kind(),
        job: job.clone(),
        retired_restarts: 0,
        owner: Some(ProcessIdentity::current()),
        created_at: now,
        updated_at: now,
        finished: false,
        companions,
    }
}

/// Runs a job recorded in `store` from where its record stands (a server's queued, resumed or
/// interrupted job), until it ends or `stops` asks it to; `coordinator`, when given, orders its
/// admission among other jobs and hears of each reconcile.
///
/// A record owned by another process, under [`Supervision::Detached`], is taken over from a
/// server that died: the replicas still running are adopted, those that died meanwhile have
/// their exits applied, and processes of the job that its records do not know are killed.
/// No watchdog guards these replicas: an attached run goes through [`run`], which has one.
pub async fn run_recorded(
    record: JobRecord,
    store: &mut Store,
    reaper: &Reaper,
    settings: &RunSettings,
    console: &Console,
    stops: Stops,
    coordinator: Option<&dyn Coordinator>,
) -> Result<RunReport, RunError> {
    let oversight = Oversight {
        stops,
        coordinator,
        watchdog: None,
    };
    drive_record(record, store, reaper, settings, console, oversight).await
}

/// What a run answers to besides its job.
struct Oversight<'a> {
    /// Requests to stop.
    stops: Stops,
    /// The admission queue, on a server.
    coordinator: Option<&'a dyn Coordinator>,
    /// The watchdog of an attached run.
    watchdog: Option<Watchdog>,
}

/// [`run_recorded`], with the watchdog of an attached run.
async fn drive_record(
    record: JobRecord,
    store: &mut Store,
    reaper: &Reaper,
    settings: &RunSettings,
    console: &Console,
    oversight: Oversight<'_>,
) -> Result<RunReport, RunError> {
    let started = Instant::now();
    let me = ProcessIdentity::current();
    if record.owner != Some(me) {
        store.set_owner(&record.uid, Some(me))?;
    }
    let logs_dir = store.logs_dir(&record.uid);
    let taken_over = record.owner != Some(me);
    let mut runner = Runner {
        uid: record.uid,
        job: record.job,
        reaper,
        watchdog: oversight.watchdog,
        companions: record.companions,
        settings,
        console,
        logs_dir,
        stops: oversight.stops,
        coordinator: oversight.coordinator,
        prepared: BTreeMap::new(),
        pods: BTreeMap::new(),
        services: BTreeSet::new(),
        waiting: Vec::new(),
        retired_restarts: record.retired_restarts,
        reported_exits: ExitLedger::default(),
        exits: JoinSet::new(),
        requeue_at: None,
        admitted: false,
        starts: BTreeMap::new(),
        dirty: BTreeSet::new(),
        job_changed: false,
        new_events: Vec::new(),
        write_due: None,
        adopted: false,
    };
    if taken_over && matches!(settings.supervision, Supervision::Detached { .. }) {
        runner.take_over(store)?;
    }
    let end = runner.drive(store).await?;
    Ok(RunReport {
        replicas: runner.summaries(),
        job: runner.job,
        end,
        duration: started.elapsed(),
    })
}

/// A process exit, as the waiting task reports it.
struct Exit {
    slot: ReplicaSlot,
    generation: u64,
    pid: i32,
    code: i32,
}

/// A run in progress.
struct Runner<'a> {
    uid: String,
    job: TrainingJob,
    reaper: &'a Reaper,
    /// The watchdog, under [`Supervision::Attached`].
    watchdog: Option<Watchdog>,
    companions: Vec<Companion>,
    settings: &'a RunSettings,
    console: &'a Console,
    logs_dir: std::path::PathBuf,
    stops: Stops,
    coordinator: Option<&'a dyn Coordinator>,
    /// What each slot runs, once admitted.
    prepared: BTreeMap<ReplicaSlot, PreparedReplica>,
    /// The pods that exist now.
    pods: BTreeMap<ReplicaSlot, LocalPod>,
    /// The services that exist (locally they are nothing but the reserved port).
    services: BTreeSet<ReplicaSlot>,
    /// Why the job's pods are held back.
    waiting: Vec<WaitingFact>,
    retired_restarts: u32,
    /// The replica exits whose `ExitedWithCode` event was recorded.
    reported_exits: ExitLedger,
    exits: JoinSet<Exit>,
    requeue_at: Option<Instant>,
    admitted: bool,
    /// Each slot's process starts so far, across re-created pods.
    starts: BTreeMap<ReplicaSlot, i32>,
    /// Slots whose record changed since the store last saw them.
    dirty: BTreeSet<ReplicaSlot>,
    /// Whether the job object changed since the store last saw it.
    job_changed: bool,
    /// Events the store has not seen yet.
    new_events: Vec<EventRecord>,
    /// When the changes the store has not seen yet are to be written.
    write_due: Option<Instant>,
    /// Whether replicas were taken over from a server that died: their leftovers are not this
    /// process's descendants.
    adopted: bool,
}

/// What woke the runner up.
enum Wake {
    Exit(Exit),
    Timer,
    Queue,
    Stop(StopRequest),
}

impl Runner<'_> {
    async fn drive(&mut self, store: &mut Store) -> Result<RunEnd, RunError> {
        self.announce();
        let needs = match launch::needs(&self.job) {
            Ok(needs) => needs,
            Err(error) => {
                self.fail_at_once(store, &error.to_string())?;
                return Ok(RunEnd::Failed);
            }
        };
        let turn = self
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
                    self.fail_at_once(store, &message)?;
                    return Ok(RunEnd::Failed);
                }
                checked = true;
            }
            let reconciled = Instant::now();
            let plan = reconcile(&self.job, &self.observed(), Timestamp::now());
            if let Some(coordinator) = self.coordinator {
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
                request = self.stops.recv() => Wake::Stop(request),
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
                    self.job_changed = true;
                }
                Wake::Stop(request) => return self.stop(request, store).await,
            }
        }
        self.wind_down(store).await?;
        let succeeded = self
            .job
            .status()
            .is_some_and(|status| status.is_true(JobConditionType::Succeeded));
        Ok(if succeeded {
            RunEnd::Succeeded
        } else {
            RunEnd::Failed
        })
    }

    /// One admission attempt of a job not admitted yet: its place in the queue, then the
    /// machine. `Some` when the job ended instead: it can never run here.
    fn seek_admission(
        &mut self,
        store: &mut Store,
        needs: &[ReplicaNeeds],
    ) -> Result<Option<RunEnd>, RunError> {
        let ahead = self
            .coordinator
            .map_or(0, |coordinator| coordinator.ahead(&self.uid));
        if ahead > 0 {
            self.waiting = vec![WaitingFact::Queued];
            return Ok(None);
        }
        let message = match try_admit(store, &self.uid, needs, &self.settings.capacity)? {
            Attempt::Admitted(allocation) => {
                if let Some(coordinator) = self.coordinator {
                    coordinator.leave(&self.uid);
                }
                match self.admit(&allocation)? {
                    Ok(()) => return Ok(None),
                    Err(message) => message,
                }
            }
            Attempt::Wait(shortfalls) => {
                self.waiting = vec![WaitingFact::InsufficientResources(shortfalls)];
                return Ok(None);
            }
            Attempt::NeverFits(message) => message,
        };
        self.fail_at_once(store, &message)?;
        Ok(Some(RunEnd::Failed))
    }

    /// Ends the run on a request from outside: every replica stopped, the resources given back.
    async fn stop(&mut self, request: StopRequest, store: &mut Store) -> Result<RunEnd, RunError> {
        let end = match request {
            StopRequest::Interrupt(signal) => {
                self.console.say(&format!(
                    "{}: stopping every replica (press Ctrl-C again to kill them now)",
                    signal_words(signal)
                ));
                self.interrupt(signal);
                RunEnd::Interrupted(signal)
            }
            StopRequest::Delete => RunEnd::Deleted,
            StopRequest::Shutdown | StopRequest::Suspend => RunEnd::Shutdown,
        };
        self.wind_down(store).await?;
        Ok(end)
    }

    /// The end of every run: the replicas still running are stopped, then the outcome, their
    /// ends and the resources given back go in one write. A stop that takes longer than
    /// [`WRITE_DELAY`] (a grace period) has the outcome written first.
    async fn wind_down(&mut self, store: &mut Store) -> Result<(), RunError> {
        self.stop_all(store).await?;
        self.write_changes(store, true)
    }

    /// Says once that images are not used, and what is not run locally.
    fn announce(&self) {
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
    }

    /// Checks that every replica can run here as written (env references, commands, working
    /// directories), as [`Runner::admit`] does, for a job that is not admitted yet.
    fn check_runnable(&self) -> Result<(), String> {
        let context = self.launch_context();
        let ports = BTreeMap::new();
        prepare(&self.job, &ports, &Allocation::default(), &context)
            .map(drop)
            .map_err(|errors| cannot_run(&errors))
    }

    fn launch_context(&self) -> LaunchContext<'_> {
        LaunchContext {
            companions: &self.companions,
            capacity: &self.settings.capacity,
            node_name: &self.settings.node_name,
            logs_dir: &self.logs_dir,
            console: self.console,
        }
    }

    /// Takes the admitted GPUs, reserves a port per slot and prepares every replica; says why
    /// when a replica cannot run here as written.
    fn admit(&mut self, allocation: &Allocation) -> Result<Result<(), String>, RunError> {
        let slots = trainctl_engine::objects::replica_slots(&self.job);
        let ports = PortReservation::reserve(slots)
            .map_err(|source| RunError::Io {
                operation: "cannot reserve loopback ports for the replicas",
                source,
            })?
            .release();
        let prepared = match prepare(&self.job, &ports, allocation, &self.launch_context()) {
            Ok(prepared) => prepared,
            Err(errors) => return Ok(Err(cannot_run(&errors))),
        };
        self.dirty.extend(prepared.keys().cloned());
        self.prepared = prepared;
        self.waiting.clear();
        self.admitted = true;
        Ok(Ok(()))
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
            retired_restarts: self.retired_restarts,
            restart_backoff: self.settings.backoff,
        }
    }

    fn is_finished(&self) -> bool {
        self.job.status().is_some_and(JobStatus::is_finished)
    }

    /// Carries out the engine's plan; the store sees its changes at the next [`Runner::flush`].
    fn apply(&mut self, plan: Plan) {
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
        self.job_changed |= status_changed || ledger_changed;
    }

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
                if let Some(watchdog) = &mut self.watchdog {
                    watchdog.watch(started.pid, prepared.launch.grace);
                }
                let slot = slot.clone();
                let pid = started.pid;
                self.exits.spawn(async move {
                    let code = started.exited().await;
                    Exit {
                        slot,
                        generation,
                        pid,
                        code,
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
        self.dirty.insert(slot.clone());
    }

    /// Counts a start of the slot's process; every start after the first is a restart, in place or
    /// by re-creating the pod.
    fn count_start(&mut self, slot: &ReplicaSlot) {
        *self.starts.entry(slot.clone()).or_default() += 1;
    }

    /// The restarts the slot's process has made.
    fn restarts_of(&self, slot: &ReplicaSlot) -> i32 {
        self.starts
            .get(slot)
            .map_or(0, |starts| starts.saturating_sub(1))
    }

    fn delete_pod(&mut self, deletion: &Deletion) {
        let Some(pod) = self.pods.get_mut(&deletion.slot) else {
            return;
        };
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
        self.dirty.insert(deletion.slot.clone());
    }

    fn on_exit(&mut self, exit: &Exit) {
        if let Some(watchdog) = &mut self.watchdog {
            watchdog.forget(exit.pid);
        }
        let Some(pod) = self.pods.get_mut(&exit.slot) else {
            return;
        };
        let after = pod.exited(
            exit.generation,
            exit.code,
            Timestamp::now(),
            &self.settings.backoff,
        );
        self.after_exit(&exit.slot, exit.code, after);
        self.dirty.insert(exit.slot.clone());
    }

    /// Reports an exit.
    fn after_exit(&mut self, slot: &ReplicaSlot, code: i32, after: Option<AfterExit>) {
        let Some(after) = after else { return };
        let policy = self.pods.get(slot).map(|pod| pod.policy);
        let restarts = self.pods.get(slot).map_or(0, |pod| pod.restart_count);
        let what = report::exit_words(code);
        match after {
            AfterExit::Restart(delay) => self.console.say(&format!(
                "{slot} {what}; restarting it in {} (restartPolicy {}, restart {restarts})",
                report::duration_words(delay),
                policy.map_or("", PodRestart::as_str),
            )),
            AfterExit::Finished(_) if code != 0 => self.console.say(&format!("{slot} {what}")),
            AfterExit::Finished(_) | AfterExit::Gone => {}
        }
    }

    fn on_timer(&mut self) {
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
    fn kill_overdue(&mut self, now: Instant) {
        for pod in self.pods.values_mut() {
            if let (Some(running), Some(deadline)) = (pod.running, pod.deleting)
                && deadline <= now
            {
                signal_group(running.pid, Signal::SIGKILL);
                pod.deleting = Some(now + KILL_MARGIN);
            }
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
            .chain(self.write_due)
            .min()
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
    /// admitted with is given back in the same write.
    fn fail_at_once(&mut self, store: &mut Store, message: &str) -> Result<(), RunError> {
        let reason = format!("{}Failed", self.job.kind().as_str());
        self.finish_with(JobConditionType::Failed, &reason, message);
        self.write_changes(store, true)
    }

    /// Ends the job with a condition the engine did not decide (it never saw why).
    fn finish_with(&mut self, type_: JobConditionType, reason: &str, message: &str) {
        let now = Time(Timestamp::now());
        let mut status = self.job.status().cloned().unwrap_or_default();
        let created = format!(
            "{} {} is created.",
            self.job.kind().as_str(),
            self.job.name()
        );
        // As the engine does when a job ends: a Pending explanation no longer holds.
        match status
            .conditions
            .iter_mut()
            .find(|c| c.type_ == JobConditionType::Created)
        {
            Some(existing) => existing.message.clone_from(&created),
            None => status.conditions.push(condition(
                JobConditionType::Created,
                &format!("{}Created", self.job.kind().as_str()),
                &created,
                &now,
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
            .push(condition(type_, reason, message, &now));
        status.completion_time = Some(now);
        report::condition_changes(self.job.status(), &status, self.console);
        *self.job.status_mut() = Some(status);
        self.job_changed = true;
    }

    /// Stops every replica still running: `SIGTERM` to its group, then `SIGKILL` after its grace
    /// period (at once on a second Ctrl-C); marks them stopped for the write that follows. Once
    /// the stop has taken [`WRITE_DELAY`], what is known is written: the outcome does not wait
    /// for a grace period.
    async fn stop_all(&mut self, store: &mut Store) -> Result<(), RunError> {
        let now = Instant::now();
        let slots: Vec<ReplicaSlot> = self.pods.keys().cloned().collect();
        for slot in &slots {
            let grace = self
                .prepared
                .get(slot)
                .map_or(Duration::ZERO, |p| p.launch.grace);
            let Some(pod) = self.pods.get_mut(slot) else {
                continue;
            };
            pod.restart_due = None;
            if let Some(running) = pod.running {
                pod.stopped = true;
                if pod.deleting.is_none() {
                    pod.deleting = Some(now + grace);
                    signal_group(running.pid, Signal::SIGTERM);
                }
            } else if !pod.is_finished() && !pod.gone {
                pod.stopped = true;
            } else {
                continue;
            }
            self.dirty.insert(slot.clone());
        }
        let mut write_at = Some(Instant::now() + WRITE_DELAY);
        while !self.exits.is_empty() {
            let deadline = self.pods.values().filter_map(|pod| pod.deleting).min();
            tokio::select! {
                Some(Ok(exit)) = self.exits.join_next() => {
                    if let Some(watchdog) = &mut self.watchdog {
                        watchdog.forget(exit.pid);
                    }
                    if let Some(pod) = self.pods.get_mut(&exit.slot)
                        && pod.running.is_some_and(|r| r.generation == exit.generation)
                    {
                        pod.running = None;
                        pod.exit_code = Some(exit.code);
                    }
                    self.dirty.insert(exit.slot.clone());
                }
                () = sleep_until(deadline) => self.kill_overdue(Instant::now()),
                () = sleep_until(write_at) => {
                    write_at = None;
                    self.flush(store)?;
                }
                _ = self.stops.recv() => self.kill_all(),
            }
        }
        if self.adopted {
            kill_marked(&self.uid);
        } else {
            self.reaper.kill_strays(&self.uid);
        }
        if let Some(watchdog) = &mut self.watchdog {
            watchdog.done();
        }
        Ok(())
    }

    fn kill_all(&mut self) {
        for pod in self.pods.values_mut() {
            if let Some(running) = pod.running {
                signal_group(running.pid, Signal::SIGKILL);
            }
        }
    }

    fn record_event(&mut self, event: &JobEvent) {
        if event.type_ == EventType::Warning && !event.reason.ends_with("Failed") {
            self.console.say(&event.message);
        }
        self.new_events.push(EventRecord {
            time: Timestamp::now(),
            type_: event.type_.as_str().to_owned(),
            reason: event.reason.clone(),
            message: event.message.clone(),
            object: None,
        });
    }

    /// Sends the watchdog what it has not heard yet, and writes what changed once the oldest
    /// change has waited [`WRITE_DELAY`].
    fn write_when_due(&mut self, store: &mut Store) -> Result<(), RunError> {
        if let Some(watchdog) = &mut self.watchdog {
            watchdog.flush();
        }
        if self.dirty.is_empty() && !self.job_changed && self.new_events.is_empty() {
            return Ok(());
        }
        let due = *self
            .write_due
            .get_or_insert_with(|| Instant::now() + WRITE_DELAY);
        if due <= Instant::now() {
            self.flush(store)?;
        }
        Ok(())
    }

    /// Writes what changed since the last flush (job object, events, replica records) in one
    /// transaction, and sends the watchdog what it has not heard yet.
    fn flush(&mut self, store: &mut Store) -> Result<(), RunError> {
        self.write_changes(store, false)
    }

    /// [`Runner::flush`], giving back the job's resources in the same transaction when
    /// `release`.
    fn write_changes(&mut self, store: &mut Store, release: bool) -> Result<(), RunError> {
        if let Some(watchdog) = &mut self.watchdog {
            watchdog.flush();
        }
        let replicas: Vec<ReplicaRecord> = self
            .dirty
            .iter()
            .filter_map(|slot| self.record_of(slot))
            .collect();
        let changes = JobChanges {
            job: self.job_changed.then_some(JobUpdate {
                job: &self.job,
                retired_restarts: self.retired_restarts,
                finished: self.is_finished(),
            }),
            events: &self.new_events,
            replicas: &replicas,
            release,
        };
        store.save(&self.uid, &changes)?;
        self.dirty.clear();
        self.job_changed = false;
        self.new_events.clear();
        self.write_due = None;
        Ok(())
    }

    /// How each prepared slot ended, from its record.
    fn summaries(&self) -> Vec<ReplicaSummary> {
        self.prepared
            .keys()
            .filter_map(|slot| {
                self.record_of(slot)
                    .map(|record| ReplicaSummary::of(slot, record))
            })
            .collect()
    }

    /// The record of a prepared slot.
    fn record_of(&self, slot: &ReplicaSlot) -> Option<ReplicaRecord> {
        let prepared = self.prepared.get(slot)?;
        Some(self.record(slot, prepared, self.pods.get(slot)))
    }

    fn record(
        &self,
        slot: &ReplicaSlot,
        prepared: &PreparedReplica,
        pod: Option<&LocalPod>,
    ) -> ReplicaRecord {
        ReplicaRecord {
            job_uid: self.uid.clone(),
            replica_type: slot.replica_type.clone(),
            index: slot.index,
            state: pod.map_or(ReplicaState::Pending, report::state_of),
            pid: pod
                .and_then(|pod| pod.running)
                .and_then(|running| ProcessIdentity::of(running.pid)),
            port: prepared.port,
            gpus: prepared.gpus.clone(),
            restarts: self.restarts_of(slot),
            pod_restarts: pod.map_or(0, |pod| pod.restart_count),
            exit_code: pod.and_then(|pod| pod.exit_code),
            reason: None,
            started_at: pod.and_then(|pod| pod.started_at),
            finished_at: pod.and_then(|pod| pod.finished_at),
            log_path: prepared.launch.log_path.clone(),
        }
    }
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

/// Resolves when it may be the job's turn in the admission queue; never without a queue.
async fn my_turn(turn: Option<&Notify>) {
    match turn {
        Some(turn) => turn.notified().await,
        None => std::future::pending().await,
    }
}

/// Sleeps until `at`, or forever when there is nothing to wait for.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn signal_words(signal: Signal) -> &'static str {
    match signal {
        Signal::SIGINT => "interrupted (Ctrl-C)",
        Signal::SIGHUP => "the terminal hung up",
        _ => "terminated",
    }
}
