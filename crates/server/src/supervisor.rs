//! The supervisor: every job of the state database, from submission to deletion. Each unfinished
//! job has a run (the same runner as `trainctl run`) on a task of its own; runs wait in the
//! [`Queue`] for their resources; requests (suspend, delete, shutdown) reach a run as a
//! [`StopRequest`]; finished jobs are deleted when their `ttlSecondsAfterFinished` runs out.
//! Every transition of a job is a line on the server's log ([`journal`](crate::journal)).

mod claims;
mod companions;
mod coordinate;
mod dashboard;
mod quotas;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use jiff::Timestamp;
use tokio::sync::{mpsc, watch};
use trainctl_api::validation::Severity;
use trainctl_api::{JobConditionType, JobKind, TrainingJob};
use trainctl_engine::reconcile::{Observed, reconcile};
use trainctl_local::claims::VolumeBinding;
use trainctl_local::kubelet::admission::Amounts;
use trainctl_local::notify;
use trainctl_local::process::Reaper;
use trainctl_local::process::identity::ProcessIdentity;
use trainctl_local::process::logs::Console;
use trainctl_local::process::marker::all_marked_processes;
use trainctl_local::runner::{
    self, Coordinator, RunEnd, RunReport, RunSettings, StopRequest, Stops, Supervision,
};
use trainctl_local::store::{JobRecord, Store, StoreError};

use crate::journal::{self, Journal};
use crate::metrics::Metrics;
use crate::queue::{Queue, Waiting};
use crate::quotas::charge_of;
use crate::view::{JobView, Submitted, job_view};

/// How the server runs jobs.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The state directory: database, logs, `server.json`, `server.token`.
    pub state_dir: PathBuf,
    /// The runner's settings: capacity, back-off, watchdog.
    pub settings: RunSettings,
    /// `schedulingPolicy.priorityClass` names and their priorities (unknown names: 0).
    pub priorities: BTreeMap<String, i32>,
}

/// Why a request failed, with the HTTP status it maps to.
#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    /// The manifest is invalid: one line per problem.
    #[error("the manifest is invalid")]
    Invalid(Vec<String>),
    /// No such job.
    #[error("{0} not found")]
    NotFound(String),
    /// The request conflicts with the job's state.
    #[error("{0}")]
    Conflict(String),
    /// The request cannot be taken as it is (not its manifest: that is [`Self::Invalid`]).
    #[error("{0}")]
    BadRequest(String),
    /// The state database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The server cannot become the reaper of its replicas.
    #[error("cannot become the reaper of the replicas: {0}")]
    Reaper(std::io::Error),
    /// What a job was submitted with cannot be kept beside it.
    #[error("cannot keep the job's --on-finish command: {0}")]
    Keep(std::io::Error),
}

/// How a manifest is submitted, beside its text.
#[derive(Debug, Clone, Copy, Default)]
pub struct SubmitOptions<'a> {
    /// The namespace of the jobs that name none (`-n`); their own must match it.
    pub namespace: Option<&'a str>,
    /// The claims to bind first (`--volume`).
    pub volumes: &'a [VolumeBinding],
    /// A command to run when each job finishes (`submit --on-finish`), beside the server's.
    pub on_finish: Option<&'a str>,
}

/// A run in progress: how to ask it to stop, and how to see it end.
struct RunHandle {
    stop: mpsc::UnboundedSender<StopRequest>,
    ended: watch::Receiver<bool>,
}

/// The control plane's state, shared by the API and every run.
pub struct Supervisor {
    config: ServerConfig,
    reaper: Reaper,
    queue: Queue,
    store: Mutex<Store>,
    runs: Mutex<HashMap<String, RunHandle>>,
    seq: AtomicU64,
    metrics: Metrics,
    console: Console,
    journal: Journal,
}

impl Supervisor {
    /// Opens the state database, becomes the reaper of the replicas, and takes over every job it
    /// holds: unfinished jobs run (again) through the queue; finished jobs keep their TTL.
    pub fn start(config: ServerConfig) -> Result<Arc<Supervisor>, SupervisorError> {
        let store = Store::open(&config.state_dir)?;
        let reaper = Reaper::start().map_err(SupervisorError::Reaper)?;
        if let Supervision::Detached { shim } = &config.settings.supervision {
            reaper
                .connect_shim(&config.state_dir, shim)
                .map_err(SupervisorError::Reaper)?;
        }
        let capacity = Amounts::capacity(&config.settings.capacity);
        let supervisor = Arc::new(Supervisor {
            config,
            reaper,
            queue: Queue::new(capacity),
            store: Mutex::new(store),
            runs: Mutex::new(HashMap::new()),
            seq: AtomicU64::new(0),
            metrics: Metrics::default(),
            console: Console::quiet(),
            journal: Journal::default(),
        });
        supervisor.load_quotas()?;
        supervisor.recover()?;
        supervisor.read_restarts();
        Ok(supervisor)
    }

    /// The metrics, in Prometheus' text format.
    #[must_use]
    pub fn metrics_text(&self) -> String {
        self.metrics.encode(self.queue.len())
    }

    /// The state directory.
    #[must_use]
    pub fn state_dir(&self) -> &std::path::Path {
        &self.config.state_dir
    }

    /// Takes over every job of the store from the server before: unfinished jobs become this
    /// server's at once (so that what they hold counts before any other job is admitted), then
    /// run again, adopting the replicas that still run; what finished or suspended jobs left
    /// running is killed (the server died before it stopped them), and suspended jobs give back
    /// what they hold; finished jobs keep their TTL.
    fn recover(self: &Arc<Self>) -> Result<(), SupervisorError> {
        let me = ProcessIdentity::current();
        let records = self.store().jobs(None, None)?;
        let stopped: HashSet<&str> = records
            .iter()
            .filter(|record| record.finished || record.job.run_policy().is_suspended())
            .map(|record| record.uid.as_str())
            .collect();
        for (pid, uid) in all_marked_processes() {
            if stopped.contains(uid.as_str()) {
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            }
        }
        for record in &records {
            if !record.finished {
                let mut store = self.store();
                store.set_owner(&record.uid, Some(me))?;
                if record.job.run_policy().is_suspended() {
                    store.release(&record.uid)?;
                }
            }
        }
        for record in records {
            if record.finished {
                self.expire_later(&record);
            } else if !record.job.run_policy().is_suspended() {
                // The record still names the server before: the run takes its replicas over.
                // A job that holds resources was admitted: it does not queue again.
                let admitted = self.store().holds_resources(&record.uid)?;
                let uid = record.uid.clone();
                self.launch(record, !admitted);
                if admitted {
                    self.adopted(&uid)?;
                    self.charge_adopted(&uid)?;
                }
            }
        }
        Ok(())
    }

    /// Binds the claims `volumes` names ([`Supervisor::bind_claims`]), applies the
    /// `ResourceQuota`s of a manifest, then its ConfigMaps and Secrets, then records every job of
    /// it and queues it, as kubectl applies a file in order with quotas first. A job is recorded
    /// with the ConfigMaps and Secrets it references: its file's, else those the server keeps in
    /// its namespace, as they are now. Nothing is recorded when any object is invalid, a job
    /// conflicts with an unfinished job of the same name, or a binding is refused.
    pub fn submit(
        self: &Arc<Self>,
        text: &str,
        source: &str,
        options: &SubmitOptions<'_>,
    ) -> Result<Submitted, SupervisorError> {
        let SubmitOptions {
            namespace,
            volumes,
            on_finish,
        } = *options;
        let mut manifests = trainctl_api::manifest::load_str(source, text);
        let mut problems: Vec<String> = manifests
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(ToString::to_string)
            .collect();
        // A manifest without errors holds an object: a job, a quota, a ConfigMap or a Secret.
        Self::check_quotas(&mut manifests.quotas, source, namespace, &mut problems);
        let objects =
            Self::check_companions(&manifests.companions, source, namespace, &mut problems);
        let mut jobs: Vec<TrainingJob> = Vec::new();
        for mut loaded in manifests.jobs {
            if let Some(namespace) = namespace
                && let Err(own) = loaded.set_namespace(namespace)
            {
                problems.push(format!(
                    "{}: the job's namespace `{own}` does not match the namespace `{namespace}`",
                    loaded.source
                ));
            }
            jobs.push(loaded.job);
        }
        if !problems.is_empty() {
            return Err(SupervisorError::Invalid(problems));
        }
        let records = self.new_records(&mut jobs, &manifests.companions)?;
        {
            let store = self.store();
            for record in &records {
                let busy = store
                    .job(&record.namespace, Some(record.kind), &record.name)?
                    .into_iter()
                    .any(|existing| {
                        !existing.finished && existing.owner.is_some_and(|owner| owner.is_alive())
                    });
                if busy {
                    return Err(SupervisorError::Conflict(format!(
                        "{} {}/{} exists and has not finished; delete it first",
                        record.kind.as_str(),
                        record.namespace,
                        record.name
                    )));
                }
            }
        }
        let claims = self.bind_claims(volumes, namespace, &records)?;
        let quotas = self.apply_quotas(std::mem::take(&mut manifests.quotas))?;
        let objects = self.apply_companions(objects)?;
        {
            let mut store = self.store();
            for record in &records {
                let replaced = store.insert_job(record)?;
                if let Some(old) = replaced.uid {
                    let _ = std::fs::remove_dir_all(store.logs_dir(&old));
                    let _ = std::fs::remove_dir_all(store.pods_dir(&old));
                    let _ = std::fs::remove_dir_all(store.tensorboard_dir(&old));
                }
                if let Some(command) = on_finish {
                    notify::keep_job_command(&store.logs_dir(&record.uid), command)
                        .map_err(SupervisorError::Keep)?;
                }
            }
        }
        let mut views = Vec::new();
        for record in records {
            // Queued first, so the answer says where the job waits.
            self.launch(record.clone(), true);
            views.push(self.view_of(&record)?);
        }
        Ok(Submitted {
            quotas,
            claims,
            config_maps: objects.config_maps,
            secrets: objects.secrets,
            jobs: views,
        })
    }

    /// Starts the run of a recorded, unfinished job: when `queued`, it waits in the queue, then
    /// runs.
    fn launch(self: &Arc<Self>, record: JobRecord, queued: bool) {
        let uid = record.uid.clone();
        self.journal.launched(&uid, &record.job);
        if queued && !record.job.run_policy().is_suspended() {
            let seq = self.seq.fetch_add(1, Ordering::Relaxed);
            let priority = self.priority(&record.job);
            let label = journal::label(&record.job);
            let ahead = self.queue.push(Waiting {
                uid: &uid,
                label: &label,
                priority,
                seq,
                namespace: &record.namespace,
                charge: charge_of(&record.job),
            });
            journal::queued(&record.job, priority, ahead);
        }
        let (stop, stops) = Stops::channel();
        let (ended_tx, ended) = watch::channel(false);
        self.runs().insert(uid.clone(), RunHandle { stop, ended });
        let supervisor = Arc::clone(self);
        tokio::spawn(async move {
            let end = supervisor.run(record, stops).await;
            supervisor.ended(&uid, end);
            let _ = ended_tx.send(true);
        });
    }

    async fn run(&self, record: JobRecord, stops: Stops) -> Option<RunReport> {
        let uid = record.uid.clone();
        let mut store = match Store::open(&self.config.state_dir) {
            Ok(store) => store,
            Err(error) => {
                tracing::error!(job = %uid, "cannot open the state database: {error}");
                return None;
            }
        };
        let coordinator: &dyn Coordinator = self;
        match runner::run_recorded(
            record,
            &mut store,
            &self.reaper,
            &self.config.settings,
            &self.console,
            stops,
            Some(coordinator),
        )
        .await
        {
            Ok(report) => Some(report),
            Err(error) => {
                tracing::error!(job = %uid, "the run failed: {error}");
                None
            }
        }
    }

    /// A run ended: its place in the queue and its resources are free; the log says how it
    /// ended (after the restarts recorded last).
    fn ended(self: &Arc<Self>, uid: &str, report: Option<RunReport>) {
        self.runs().remove(uid);
        self.queue.ended(uid);
        self.journal.read(&self.store(), Some(uid));
        self.journal.ended(uid);
        let Some(report) = report else { return };
        match report.end {
            RunEnd::Succeeded | RunEnd::Failed => {
                journal::finished(&report.job, report.duration);
                if let Ok(Some(record)) = self.store().job_by_uid(uid) {
                    self.expire_later(&record);
                }
            }
            RunEnd::Suspended => journal::suspended(&journal::label(&report.job)),
            RunEnd::Deleted | RunEnd::Shutdown | RunEnd::Interrupted(_) => {}
        }
    }

    /// Deletes a finished job when its `ttlSecondsAfterFinished` has passed, as the engine
    /// decides.
    fn expire_later(self: &Arc<Self>, record: &JobRecord) {
        let plan = reconcile(&record.job, &Observed::default(), Timestamp::now());
        if !plan.delete_job && plan.requeue_after.is_none() {
            return;
        }
        let after = plan
            .requeue_after
            .filter(|_| !plan.delete_job)
            .map_or(Duration::ZERO, jiff::SignedDuration::unsigned_abs);
        let supervisor = Arc::clone(self);
        let uid = record.uid.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            let Ok(Some(record)) = supervisor.store().job_by_uid(&uid) else {
                return;
            };
            let plan = reconcile(&record.job, &Observed::default(), Timestamp::now());
            if plan.delete_job {
                match supervisor.remove(&record) {
                    Ok(()) => journal::deleted(&journal::label(&record.job)),
                    Err(error) => tracing::warn!(
                        job = journal::label(&record.job).as_str(),
                        "cannot delete the job after its ttlSecondsAfterFinished: {error}"
                    ),
                }
            } else {
                supervisor.expire_later(&record);
            }
        });
    }

    /// One job, with its replicas and events.
    pub fn get(
        &self,
        namespace: &str,
        kind: JobKind,
        name: &str,
    ) -> Result<JobView, SupervisorError> {
        let record = self.find(namespace, kind, name)?;
        let store = self.store();
        let replicas = store.replicas(&record.uid)?;
        let events = store.events(&record.uid)?;
        drop(store);
        Ok(job_view(&record, &replicas, &events, self.waiting(&record)))
    }

    /// Every job (of a namespace, of a kind), oldest first, without events.
    pub fn list(
        &self,
        namespace: Option<&str>,
        kind: Option<JobKind>,
    ) -> Result<Vec<JobView>, SupervisorError> {
        let records = self.store().jobs(namespace, kind)?;
        records.iter().map(|record| self.view_of(record)).collect()
    }

    /// Each replica's name and log file, and whether the job is done (finished, gone, or with no
    /// run to write more).
    pub fn log_sources(
        &self,
        uid: &str,
    ) -> Result<(Vec<(String, PathBuf)>, bool), SupervisorError> {
        let store = self.store();
        let Some(record) = store.job_by_uid(uid)? else {
            return Ok((Vec::new(), true));
        };
        let sources = store
            .replicas(uid)?
            .into_iter()
            .map(|replica| (replica.name(), replica.log_path))
            .collect();
        drop(store);
        let done = record.finished || !self.runs().contains_key(uid);
        Ok((sources, done))
    }

    /// Stops a job's replicas, then removes the job, its records and logs.
    pub async fn delete(
        &self,
        namespace: &str,
        kind: JobKind,
        name: &str,
    ) -> Result<JobView, SupervisorError> {
        let record = self.find(namespace, kind, name)?;
        self.stop_run(&record.uid, StopRequest::Delete).await;
        let record = self.store().job_by_uid(&record.uid)?.unwrap_or(record);
        let view = self.view_of(&record)?;
        self.remove(&record)?;
        journal::deleted(&journal::label(&record.job));
        Ok(view)
    }

    /// Suspends a job: its replicas stop and its resources are given back.
    pub async fn suspend(
        &self,
        namespace: &str,
        kind: JobKind,
        name: &str,
    ) -> Result<JobView, SupervisorError> {
        let record = self.find(namespace, kind, name)?;
        if record.finished {
            return Err(SupervisorError::Conflict(format!(
                "{} {namespace}/{name} has finished; there is nothing to suspend",
                kind.as_str()
            )));
        }
        if !self.stop_run(&record.uid, StopRequest::Suspend).await {
            // Not running (already suspended, or lost): record the wish.
            let mut job = record.job.clone();
            job.run_policy_mut().suspend = Some(true);
            self.store()
                .update_job(&record.uid, &job, record.retired_restarts, false)?;
            journal::suspended(&journal::label(&job));
        }
        self.get(namespace, kind, name)
    }

    /// Resumes a suspended job: it queues again.
    pub fn resume(
        self: &Arc<Self>,
        namespace: &str,
        kind: JobKind,
        name: &str,
    ) -> Result<JobView, SupervisorError> {
        let mut record = self.find(namespace, kind, name)?;
        if record.job.run_policy().is_suspended() && !self.runs().contains_key(&record.uid) {
            record.job.run_policy_mut().suspend = Some(false);
            self.store().update_job(
                &record.uid,
                &record.job,
                record.retired_restarts,
                record.finished,
            )?;
            if !record.finished {
                journal::resumed(&journal::label(&record.job));
                self.launch(record, true);
            }
        }
        self.get(namespace, kind, name)
    }

    /// Stops every run (the jobs stay unfinished, to run again under the next server).
    pub async fn shutdown(&self) {
        let uids: Vec<String> = self.runs().keys().cloned().collect();
        for uid in uids {
            self.stop_run(&uid, StopRequest::Shutdown).await;
        }
    }

    /// Asks a job's run to stop and waits until it has; `false` when it has no run.
    async fn stop_run(&self, uid: &str, request: StopRequest) -> bool {
        let ended = {
            let runs = self.runs();
            let Some(handle) = runs.get(uid) else {
                return false;
            };
            let _ = handle.stop.send(request);
            handle.ended.clone()
        };
        let mut ended = ended;
        let _ = ended.wait_for(|ended| *ended).await;
        true
    }

    /// Removes a job that no longer runs: records, then logs.
    fn remove(&self, record: &JobRecord) -> Result<(), SupervisorError> {
        let mut store = self.store();
        if store.delete_job(&record.uid)? {
            self.metrics.deleted(&record.job);
        }
        let _ = std::fs::remove_dir_all(store.logs_dir(&record.uid));
        let _ = std::fs::remove_dir_all(store.pods_dir(&record.uid));
        let _ = std::fs::remove_dir_all(store.tensorboard_dir(&record.uid));
        Ok(())
    }

    fn find(
        &self,
        namespace: &str,
        kind: JobKind,
        name: &str,
    ) -> Result<JobRecord, SupervisorError> {
        self.store()
            .job(namespace, Some(kind), name)?
            .into_iter()
            .next()
            .ok_or_else(|| {
                SupervisorError::NotFound(format!("{} {namespace}/{name}", kind.as_str()))
            })
    }

    fn view_of(&self, record: &JobRecord) -> Result<JobView, SupervisorError> {
        let replicas = self.store().replicas(&record.uid)?;
        Ok(job_view(record, &replicas, &[], self.waiting(record)))
    }

    /// Why a queued job waits: its namespace's quota, the jobs ahead of it and what keeps it
    /// from starting before them, or (at the head) what the engine said.
    fn waiting(&self, record: &JobRecord) -> Option<String> {
        if let Some(held) = self.queue.quota_hold(&record.uid) {
            return Some(held);
        }
        let ahead = self.queue.position(&record.uid)?;
        Some(if ahead > 0 {
            self.queue
                .why_behind(&record.uid)
                .unwrap_or_else(|| "queued behind other jobs".to_owned())
        } else {
            record
                .job
                .status()
                .and_then(|status| status.condition(JobConditionType::Created))
                .map(|created| created.message.clone())
                .filter(|message| message.contains("waiting"))
                .unwrap_or_else(|| "next in the queue".to_owned())
        })
    }

    fn priority(&self, job: &TrainingJob) -> i32 {
        job.run_policy()
            .scheduling_policy
            .as_ref()
            .and_then(|policy| policy.priority_class.as_deref())
            .and_then(|class| self.config.priorities.get(class).copied())
            .unwrap_or(0)
    }

    fn store(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn runs(&self) -> MutexGuard<'_, HashMap<String, RunHandle>> {
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests;
