//! This machine's jobs: read from the state directory's database, changed through the server
//! that runs for it (`trainctl server`), or, with none running, in the database itself
//! (`delete`).

pub mod claims;
mod progress;
pub mod queue;
pub mod records;

use std::cell::{OnceCell, RefCell};
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::Stream;
use jiff::Timestamp;
use serde_json::Value;
use trainctl_api::{JobKind, TrainingJob};
use trainctl_local::claims::event_roots;
use trainctl_local::runner::{failure_cause, remove_unowned_job};
use trainctl_local::store::{JobRecord, Store, replicas_reason};

pub use self::progress::Progresses;
use super::{Details, FoundJob, Jobs};
use crate::client::{Client, ClientError, JobPath};
use crate::state::state_dir;
use crate::target::{DEFAULT_NAMESPACE, Target};
use crate::view::description::Description;

/// How often `get -w` reads the state database again.
const GET_POLL: Duration = Duration::from_millis(250);

/// How often `wait` looks at a job again.
const WAIT_POLL: Duration = Duration::from_millis(100);

/// The jobs of this machine's state directory.
#[derive(Debug)]
pub struct Local {
    /// The state directory, made ready.
    dir: PathBuf,
    /// Its database, opened at the first question that needs it.
    store: OnceCell<Store>,
    /// The event files of the jobs asked about so far (`get -o wide -w`).
    progresses: RefCell<Progresses>,
}

impl Local {
    /// The jobs of the state directory `flag` names (`--state-dir`), else the default one.
    pub fn new(flag: Option<&Path>) -> anyhow::Result<Local> {
        Ok(Local {
            dir: state_dir(flag)?,
            store: OnceCell::new(),
            progresses: RefCell::default(),
        })
    }

    /// The state directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The state database.
    pub fn store(&self) -> anyhow::Result<&Store> {
        if let Some(store) = self.store.get() {
            return Ok(store);
        }
        let opened = Store::open(&self.dir)?;
        Ok(self.store.get_or_init(|| opened))
    }

    /// The server that runs for the state directory, or `None` when none does.
    fn server(&self) -> anyhow::Result<Option<Client>> {
        match Client::find(&self.dir) {
            Ok(client) => Ok(Some(client)),
            Err(ClientError::NoServer { .. }) => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    /// The job's address on the server; its kind, when not given, is the one of the job of that
    /// name in the state database.
    fn path<'a>(&self, target: &Target<'a>, command: &str) -> anyhow::Result<JobPath<'a>> {
        let kind = match target.kind {
            Some(kind) => kind,
            None => records::get(self.store()?, target, command)?.kind,
        };
        Ok(JobPath {
            namespace: target.namespace,
            kind,
            name: target.name,
        })
    }

    /// Removes the job `target` names from the state directory, no server running; what it
    /// left running is stopped first.
    fn delete_without_server(&self, target: &Target<'_>) -> anyhow::Result<String> {
        let mut store = Store::open(&self.dir)?;
        let record = records::get(&store, target, "delete")?;
        let stopped = remove_unowned_job(&mut store, &record)?;
        let processes = match stopped {
            0 => String::new(),
            1 => ", and its replica that still ran stopped".to_owned(),
            n => format!(", and its {n} replicas that still ran stopped"),
        };
        Ok(format!(
            "{} deleted (no server runs for {}: removed from the state directory{processes})",
            record.kind.qualified_name(&record.name),
            self.dir.display()
        ))
    }
}

impl FoundJob for JobRecord {
    fn kind(&self) -> JobKind {
        self.kind
    }

    fn job(&self) -> &TrainingJob {
        &self.job
    }

    fn state(&self) -> &'static str {
        JobRecord::state(self)
    }

    fn created(&self) -> Option<Timestamp> {
        Some(self.created_at)
    }

    fn finished(&self) -> bool {
        self.finished
    }

    fn shown(&self) -> anyhow::Result<Value> {
        Ok(serde_json::to_value(&self.job)?)
    }
}

impl Jobs for Local {
    type Job = JobRecord;

    fn default_namespace(&self) -> &str {
        DEFAULT_NAMESPACE
    }

    fn flags(&self) -> &'static str {
        ""
    }

    fn poll(&self) -> Duration {
        GET_POLL
    }

    fn local(&self) -> Option<&Local> {
        Some(self)
    }

    async fn list(
        &self,
        kind: Option<JobKind>,
        namespace: Option<&str>,
    ) -> anyhow::Result<Vec<JobRecord>> {
        Ok(self.store()?.jobs(namespace, kind)?)
    }

    async fn find(&self, target: &Target<'_>) -> anyhow::Result<Vec<JobRecord>> {
        Ok(self
            .store()?
            .job(target.namespace, target.kind, target.name)?)
    }

    async fn not_found(&self, target: &Target<'_>, see: Option<&str>) -> anyhow::Error {
        match self.store() {
            Ok(store) => records::not_found(store, target, see).unwrap_or_else(|error| error),
            Err(error) => error,
        }
    }

    async fn details(
        &self,
        jobs: &[JobRecord],
        _namespace: Option<&str>,
    ) -> anyhow::Result<Vec<Details>> {
        let store = self.store()?;
        let mut progresses = self.progresses.borrow_mut();
        let server = self.server().ok().flatten();
        let mut queued = queue::waiting_words(server.as_ref(), &jobs.iter().collect::<Vec<_>>());
        jobs.iter()
            .map(|record| {
                let replicas = store.replicas(&record.uid)?;
                let progress = progresses.of(store, record)?;
                Ok(Details {
                    restarts: replicas.iter().map(|r| i64::from(r.restarts)).sum(),
                    progress: progress.as_ref().map(crate::view::progress::short),
                    held_by: queued.remove(&record.uid),
                    failure: failure_cause(&record.job, &replicas),
                    reason: replicas_reason(record.state(), &replicas).map(str::to_owned),
                })
            })
            .collect()
    }

    async fn describe(&self, record: JobRecord) -> anyhow::Result<Description> {
        let store = self.store()?;
        let replicas = store.replicas(&record.uid)?;
        let events = store.events(&record.uid)?;
        let claims = claims::backings(store, &record.job)?;
        let event_dirs = event_roots(store, &record)?;
        let progress = progress::read_once(event_dirs.clone());
        let failure = failure_cause(&record.job, &replicas);
        let server = self.server().ok().flatten();
        let held_by = queue::waiting_words(server.as_ref(), &[&record]).remove(&record.uid);
        let mut description =
            Description::local(record.state(), record, &replicas, &events, claims);
        description.failure = failure;
        description.held_by = held_by;
        description.progress = progress;
        description.event_dirs = event_dirs;
        Ok(description)
    }

    async fn delete(&self, target: &Target<'_>) -> anyhow::Result<String> {
        let Some(server) = self.server()? else {
            return self.delete_without_server(target);
        };
        match server.delete(self.path(target, "delete")?) {
            Ok(deleted) => Ok(format!("{} deleted", deleted.resource())),
            // `server.json` names a server that is gone (killed).
            Err(ClientError::NoServer { .. }) => self.delete_without_server(target),
            Err(error) => Err(error.into()),
        }
    }

    async fn set_suspended(&self, target: &Target<'_>, suspend: bool) -> anyhow::Result<String> {
        let server = Client::find(&self.dir)?;
        let command = if suspend { "suspend" } else { "resume" };
        let changed = server.set_suspended(self.path(target, command)?, suspend)?;
        Ok(changed.resource())
    }

    fn changes<'a>(
        &'a self,
        job: &JobRecord,
    ) -> impl Stream<Item = anyhow::Result<Option<JobRecord>>> + use<'a> {
        // The job seen first is the one followed: a later job of the same name is another job.
        let uid = job.uid.clone();
        futures_util::stream::unfold(uid, move |uid| async move {
            tokio::time::sleep(WAIT_POLL).await;
            let record = self.store().and_then(|store| Ok(store.job_by_uid(&uid)?));
            Some((record, uid))
        })
    }
}
