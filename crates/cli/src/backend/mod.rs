//! Where the job commands find and change jobs: this machine ([`Local`]: its state directory,
//! through its server when one runs) or a Kubernetes cluster ([`Cluster`], `--kube`). Each job
//! command (`get`, `describe`, `delete`, `suspend`/`resume`, `wait`, `logs`, `submit`) is
//! written once over [`Jobs`]; a backend only answers its questions. Cluster mode never opens
//! the state directory: only [`Local`] does.

mod cluster;
pub mod local;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use futures_util::Stream;
use jiff::Timestamp;
use serde_json::Value;
use trainctl_api::{JobKind, TrainingJob};

pub use local::Local;

pub use crate::cluster::Cluster;
use crate::target::Target;
use crate::view::description::Description;

/// A job as a backend found it: what every command reads of it.
pub trait FoundJob {
    /// Its kind.
    fn kind(&self) -> JobKind;
    /// The job, read into its type.
    fn job(&self) -> &TrainingJob;
    /// Its state in one word, as `get` shows it.
    fn state(&self) -> &'static str;
    /// When it was created, when known.
    fn created(&self) -> Option<Timestamp>;
    /// Whether it reached a final state.
    fn finished(&self) -> bool;
    /// The object as `get -o yaml|json` prints it.
    fn shown(&self) -> anyhow::Result<Value>;

    /// `metadata.name`.
    fn name(&self) -> &str {
        self.job().name()
    }

    /// `metadata.namespace`.
    fn namespace(&self) -> &str {
        self.job().namespace()
    }

    /// `metadata.labels`, for `-l`.
    fn labels(&self) -> BTreeMap<String, String> {
        self.job().metadata().labels.clone().unwrap_or_default()
    }
}

/// What `get -o wide` adds to a job's row.
#[derive(Debug, Default, Clone)]
pub struct Details {
    /// Every restart of every replica, in place or by re-creation.
    pub restarts: i64,
    /// The training progress in short (`step 1200 loss 0.31`), when known.
    pub progress: Option<String>,
    /// Why a queue holds the job back, when it does: the server's, with the job's place
    /// (`#2 in queue: ...`), or on a cluster Kueue's.
    pub held_by: Option<String>,
    /// Why the job failed, in a few words, when it did and its replicas say more than its
    /// status (`worker-0 OOMKilled (exit code 137)`).
    pub failure: Option<String>,
    /// Why a running job does not get on, when its status does not say: each of its replicas
    /// left waits out a restart back-off (`CrashLoopBackOff`).
    pub reason: Option<String>,
}

/// The jobs of this machine or of a cluster, as the job commands see them.
pub trait Jobs {
    /// A job as found.
    type Job: FoundJob;

    /// The namespace of a command that names none.
    fn default_namespace(&self) -> &str;

    /// The flags that choose this mode, as hints spell its commands: none, or `--kube `.
    fn flags(&self) -> &'static str;

    /// How often `get -w` looks again.
    fn poll(&self) -> Duration;

    /// This machine's jobs, for what only this machine has (replicas, quotas); `None` on a
    /// cluster.
    fn local(&self) -> Option<&Local>;

    /// The jobs of `kind` (every kind when `None`) in `namespace` (every namespace when
    /// `None`), oldest first.
    async fn list(
        &self,
        kind: Option<JobKind>,
        namespace: Option<&str>,
    ) -> anyhow::Result<Vec<Self::Job>>;

    /// The jobs `target` may mean: of its kind, or of every kind when it names none.
    async fn find(&self, target: &Target<'_>) -> anyhow::Result<Vec<Self::Job>>;

    /// The error for a job `target` names that does not exist, saying in which other
    /// namespaces a job of that name is; `see` is the command that lists jobs, to point at.
    async fn not_found(&self, target: &Target<'_>, see: Option<&str>) -> anyhow::Error;

    /// What `get -o wide` adds to each of `jobs`, found in `namespace` (every namespace when
    /// `None`).
    async fn details(
        &self,
        jobs: &[Self::Job],
        namespace: Option<&str>,
    ) -> anyhow::Result<Vec<Details>>;

    /// The job in detail, as `describe` prints it.
    async fn describe(&self, job: Self::Job) -> anyhow::Result<Description>;

    /// Deletes the job `target` names; the line that says so.
    async fn delete(&self, target: &Target<'_>) -> anyhow::Result<String>;

    /// Suspends (`true`) or resumes the job `target` names; the job's `KIND.GROUP/NAME`.
    async fn set_suspended(&self, target: &Target<'_>, suspend: bool) -> anyhow::Result<String>;

    /// `job` as it changes: `Some` after each change (or each look), `None` once it is deleted
    /// or replaced by another job of that name.
    fn changes<'a>(
        &'a self,
        job: &Self::Job,
    ) -> impl Stream<Item = anyhow::Result<Option<Self::Job>>> + use<'a, Self>;

    /// How this mode spells `command` in a hint: `trainctl --kube get`.
    fn command(&self, command: &str) -> String {
        format!("trainctl {}{command}", self.flags())
    }

    /// The one job `target` names, or `None`; an error when several kinds have a job of that
    /// name and `target` gives no kind (`command` is the subcommand, for the hint).
    async fn find_one(
        &self,
        target: &Target<'_>,
        command: &str,
    ) -> anyhow::Result<Option<Self::Job>> {
        let mut found = self.find(target).await?;
        if found.len() > 1 {
            let kinds: Vec<JobKind> = found.iter().map(FoundJob::kind).collect();
            let command = format!("{}{command}", self.flags());
            return Err(target.ambiguous(&kinds, &command));
        }
        Ok(found.pop())
    }

    /// The one job `target` names; an error when there is none, or several.
    async fn job(&self, target: &Target<'_>, command: &str) -> anyhow::Result<Self::Job> {
        match self.find_one(target, command).await? {
            Some(job) => Ok(job),
            None => Err(self.not_found(target, Some(&self.command("get"))).await),
        }
    }
}

/// Does `act` for each job named. With several, it goes on past a job it fails for (its error
/// printed, as kubectl does, after `out` is flushed so that what was done and what failed come
/// in order), and exits 1 when it failed for any; with one, its error is the command's.
pub async fn for_each_target<W: Write>(
    targets: &[Target<'_>],
    out: &mut W,
    mut act: impl AsyncFnMut(&Target<'_>, &mut W) -> anyhow::Result<()>,
) -> anyhow::Result<ExitCode> {
    if let [target] = targets {
        return act(target, out).await.map(|()| ExitCode::SUCCESS);
    }
    let mut code = ExitCode::SUCCESS;
    for target in targets {
        if let Err(error) = act(target, out).await {
            out.flush()?;
            eprintln!("error: {error:#}");
            code = ExitCode::FAILURE;
        }
    }
    Ok(code)
}
