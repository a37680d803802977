//! `trainctl run`: one job on this machine, in the foreground, until it succeeds or fails.
//!
//! The runner decides nothing about the job: it observes its processes, asks the engine
//! ([`reconcile`](trainctl_engine::reconcile::reconcile)) what to do, and does it, as the operator
//! does with pods. What it does itself is the kubelet's part: start a replica's process, restart it
//! in place by the pod's `restartPolicy` with back-off, report its exit code, and stop it
//! (`SIGTERM`, grace period, `SIGKILL`). Around that: gang admission on the machine's capacity,
//! loopback ports, the store, and the terminal.
//!
//! A run, observe → decide → apply, a module for each part:
//!
//! - `admit`: admission, shared with every other trainctl through the store, and the
//!   preparation of each slot (`launch`: what its process runs);
//! - `drive`: the loop: observe the pods, reconcile, apply the plan, then wait for an exit, a
//!   timer, the queue or a stop request;
//! - `apply`: carrying out the engine's plan with processes, by the kubelet's rules (`pod`: one
//!   slot's pod, its in-place restarts and back-off);
//! - `write_behind`: the record of what changed, written to the store in batches;
//! - `end`: the end of a run: the replicas stopped, the outcome written, the watchdog dismissed,
//!   the notification of a job that finished started ([`crate::notify`]);
//! - `control`: what steers a run from outside (stop requests, a server's admission queue);
//! - `adopt`: a server's run that takes over a job from a server that died;
//! - `report`: what the terminal is told.

mod admit;
mod adopt;
mod apply;
mod cause;
mod control;
mod drive;
mod end;
mod launch;
mod pod;
mod preflight;
mod remove;
mod report;
mod volumes;
mod write_behind;
mod writes;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use nix::sys::signal::Signal;
use tokio::task::JoinSet;
use tokio::time::Instant;
use trainctl_api::manifest::Companion;
use trainctl_api::{JobStatus, TrainingJob};
use trainctl_engine::reconcile::{ExitLedger, ReplicaSlot, RestartBackoff, WaitingFact};

use crate::kubelet::resources::NodeCapacity;
use crate::notify::{Delivery, NotifySettings};
use crate::process::child::Termination;
use crate::process::identity::ProcessIdentity;
use crate::process::logs::{Console, LogLimit};
use crate::process::watchdog::Watchdog;
use crate::process::{HelperCommand, Reaper};
use crate::store::{JobRecord, Store, StoreError};

pub use self::cause::failure_cause;
pub use self::control::{Coordinator, StopRequest, Stops};
pub use self::launch::{LaunchError, TENSORBOARD_DIR_ENV};
pub use self::pod::PodRestart;
pub use self::preflight::{Finding, Machine, Preflight, check};
pub use self::remove::{RemoveError, remove_unowned_job};
pub use self::report::ReplicaSummary;
pub use crate::kubelet::admission::ResourceHold;

use self::launch::PreparedReplica;
use self::pod::LocalPod;
use self::volumes::{Bindings, VolumePaths};
use self::write_behind::WriteBehind;

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
    /// How large each replica's log may grow (the kubelet's `containerLogMaxSize` and
    /// `containerLogMaxFiles`).
    pub log_limit: LogLimit,
    /// Who is told when a job succeeds or fails (`--on-finish`, `--webhook`).
    pub notify: NotifySettings,
    /// Whether replicas get their volumes (`false`: `--no-volumes`, they are left out).
    pub volumes: bool,
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

/// The outcome of a run: the final job (with its status), what each replica did, and the
/// notification of its end on its way.
#[derive(Debug)]
pub struct RunReport {
    /// The job, with its final status.
    pub job: TrainingJob,
    /// How it ended.
    pub end: RunEnd,
    /// Each replica slot's end.
    pub replicas: Vec<ReplicaSummary>,
    /// From the run's start to its end.
    pub duration: Duration,
    /// The notification of a job that succeeded or failed, being delivered in the background;
    /// `None` when no one is to be told, or the run did not finish the job. Dropped, it goes
    /// on as long as this process does.
    pub notification: Option<Delivery>,
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
/// [`Reaper::start_watchdog`]); `SIGINT`, `SIGTERM` and `SIGHUP` interrupt it. A run that ends
/// dismisses its watchdog and waits for it to exit ([`Watchdog::dismiss`]): once `run` returns,
/// no process of the run is left, the watchdog included.
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
    watchdog.remove_if_abandoned(&store.pods_dir(&record.uid));
    let replaced = store.insert_job(&record)?;
    if let Some(old) = replaced.uid {
        // The replaced run's logs, event files and volume files go with its record; the watchdog
        // removes them off this path.
        for dir in [
            store.logs_dir(&old),
            store.tensorboard_dir(&old),
            store.pods_dir(&old),
        ] {
            if !watchdog.remove_dir(&dir) {
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }
    let oversight = Oversight {
        stops,
        coordinator: None,
        watchdog: Some(watchdog),
    };
    drive_record(record, store, reaper, settings, console, oversight).await
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
    /// The watchdog, under [`Supervision::Attached`].
    watchdog: Option<Watchdog>,
}

/// [`run_recorded`], with the watchdog of an attached run, which is dismissed once the run has
/// ended (`trainctl` exits after it).
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
    let volume_paths = VolumePaths::of(store.layout(), &record.uid);
    let bindings = Bindings::read(store, &record.namespace)?;
    let taken_over = record.owner != Some(me);
    let mut runner = Runner {
        uid: record.uid,
        job: record.job,
        companions: record.companions,
        logs_dir,
        volume_paths,
        bindings,
        reaper,
        settings,
        console,
        oversight,
        prepared: BTreeMap::new(),
        pods: BTreeMap::new(),
        services: BTreeSet::new(),
        starts: BTreeMap::new(),
        exits: JoinSet::new(),
        adopted: false,
        admitted: false,
        waiting: Vec::new(),
        retired_restarts: record.retired_restarts,
        reported_exits: ExitLedger::default(),
        requeue_at: None,
        changes: WriteBehind::default(),
    };
    if taken_over && matches!(settings.supervision, Supervision::Detached { .. }) {
        runner.take_over(store)?;
    }
    let end = runner.drive(store).await?;
    // Every replica has stopped: their ConfigMaps', Secrets' and emptyDirs' files go.
    let _ = std::fs::remove_dir_all(runner.volume_paths.pods_dir());
    // The outcome is written (or, on a full disk, waits in memory to be): telling of it
    // starts now, beside the watchdog's dismissal.
    let replicas = runner.summaries();
    let notification = runner.notify(end, &replicas);
    if let Some(watchdog) = runner.oversight.watchdog.take() {
        watchdog.dismiss().await;
    }
    Ok(RunReport {
        replicas,
        job: runner.job,
        end,
        duration: started.elapsed(),
        notification,
    })
}

/// A process exit, as the waiting task reports it.
struct Exit {
    slot: ReplicaSlot,
    generation: u64,
    pid: i32,
    /// `None` when no one saw the exit (a replica taken over from a server that died with its
    /// shim): how it ended is unknown.
    ended: Option<Termination>,
}

/// A run in progress.
struct Runner<'a> {
    uid: String,
    job: TrainingJob,
    /// The ConfigMaps and Secrets submitted with the job.
    companions: Vec<Companion>,
    /// Where the replicas' log files go.
    logs_dir: PathBuf,
    /// Where the replicas' volumes go.
    volume_paths: VolumePaths,
    /// The claims bound to a directory of the user's, read again before each admission.
    bindings: Bindings,
    reaper: &'a Reaper,
    settings: &'a RunSettings,
    console: &'a Console,
    oversight: Oversight<'a>,
    /// What each slot runs, once admitted.
    prepared: BTreeMap<ReplicaSlot, PreparedReplica>,
    /// The pods that exist now.
    pods: BTreeMap<ReplicaSlot, LocalPod>,
    /// The services that exist (locally they are nothing but the reserved port).
    services: BTreeSet<ReplicaSlot>,
    /// Each slot's process starts so far, across re-created pods.
    starts: BTreeMap<ReplicaSlot, i32>,
    /// The processes being waited for.
    exits: JoinSet<Exit>,
    /// Whether replicas were taken over from a server that died: their leftovers are not this
    /// process's descendants.
    adopted: bool,
    admitted: bool,
    /// Why the job's pods are held back.
    waiting: Vec<WaitingFact>,
    retired_restarts: u32,
    /// The replica exits whose `ExitedWithCode` event was recorded.
    reported_exits: ExitLedger,
    requeue_at: Option<Instant>,
    /// What the store has not seen yet.
    changes: WriteBehind,
}

impl Runner<'_> {
    /// Whether the job reached a final state.
    fn is_finished(&self) -> bool {
        self.job.status().is_some_and(JobStatus::is_finished)
    }
}

/// Sleeps until `at`, or forever when there is nothing to wait for.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
