//! Telling someone that a job finished: the `--on-finish` command and the `--webhook`s of
//! `trainctl run` and `trainctl server`.
//!
//! When a job succeeds or fails by itself, its run (`crate::runner`) starts a [`Delivery`] of
//! one [`Notification`] once the job's final state is stored. A job whose run was stopped from
//! outside is not notified: interrupted (Ctrl-C on `trainctl run`; its status says `Failed`,
//! reason `Interrupted`, but whoever pressed Ctrl-C knows), suspended, deleted (as kubectl users
//! get no notification for a deletion), or left unfinished by a server that shuts down.
//!
//! The notification is one JSON document, the same bytes for the command and every webhook:
//!
//! ```json
//! {
//!   "job": {
//!     "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
//!     "metadata": {...}, "spec": {...}, "status": {...}
//!   },
//!   "state": "Failed",
//!   "reason": "TFJobFailed",
//!   "message": "TFJob default/mnist has failed because 1 Worker replica(s) failed.",
//!   "cause": "worker-1 exited with code 1",
//!   "logTail": {"worker-1": ["Traceback (most recent call last):", "..."]}
//! }
//! ```
//!
//! `job` is the job as `trainctl get NAME -o json` prints it; `state` is `Succeeded` or `Failed`;
//! `reason` and `message` are those of the job's final condition; `cause`, for a failed job,
//! says which replica failed and how, as `trainctl get -o wide` does; `logTail` has, for a failed
//! job, the last [`TAIL_LINES`] lines of the log of each replica that failed by itself (none for
//! a job failed by its deadline, whose replicas were stopped), and is empty for a job that
//! succeeded.
//!
//! Delivery never holds the job: it runs on threads of its own, the command and each webhook
//! at once, each within the timeout (`--notify-timeout`): the command is killed with its process
//! group past it, and a webhook is tried at most 3 times within it (see `webhook`). Each
//! outcome is logged (`tracing`); [`Delivery::finished`] also gives back the failures, for
//! `trainctl run` to say before it exits.

mod hook;
mod pool;
mod tail;
mod text;
mod webhook;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::oneshot;
use trainctl_api::{JobConditionType, TrainingJob};

pub use self::hook::{HookFailure, HookGroup};
pub use self::tail::{MAX_LINE_BYTES, TAIL_LINES};
pub use self::webhook::{ATTEMPTS, FIRST_BACKOFF, TRY_TIMEOUT, Undelivered};

/// The file, in a job's log directory, of the command to run when that job finishes
/// (`trainctl submit --on-finish`), beside the server's own.
const JOB_COMMAND_FILE: &str = "on-finish";

/// Keeps `command` as the one to run when the job whose logs go to `logs_dir` finishes.
pub fn keep_job_command(logs_dir: &Path, command: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(logs_dir)?;
    crate::state_dir::write_private(&logs_dir.join(JOB_COMMAND_FILE), command.as_bytes())
}

/// The command to run when the job whose logs go to `logs_dir` finishes, if it was given one.
#[must_use]
pub fn job_command(logs_dir: &Path) -> Option<String> {
    std::fs::read_to_string(logs_dir.join(JOB_COMMAND_FILE)).ok()
}

/// The default of `--notify-timeout`: the longest the command may run, and the time within
/// which each webhook is tried.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Who is told when a job finishes, and how long telling may take.
#[derive(Debug, Clone)]
pub struct NotifySettings {
    /// The `--on-finish` command, run with `sh -c`.
    pub on_finish: Option<String>,
    /// The `--webhook` URLs (`http://`).
    pub webhooks: Vec<String>,
    /// The longest the command may run, and the time within which each webhook is tried.
    pub timeout: Duration,
}

impl Default for NotifySettings {
    fn default() -> Self {
        NotifySettings {
            on_finish: None,
            webhooks: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl NotifySettings {
    /// Whether no one is to be told.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.on_finish.is_none() && self.webhooks.is_empty()
    }
}

/// How a notified job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FinalState {
    /// The job succeeded.
    Succeeded,
    /// The job failed.
    Failed,
}

impl FinalState {
    /// `Succeeded` or `Failed`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            FinalState::Succeeded => "Succeeded",
            FinalState::Failed => "Failed",
        }
    }
}

/// What the command and the webhooks are told (see the module's documentation for its JSON).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Notification {
    /// The job, with its final status.
    pub job: TrainingJob,
    /// How it ended.
    pub state: FinalState,
    /// The reason of its final condition (`TFJobFailed`).
    pub reason: String,
    /// The message of its final condition.
    pub message: String,
    /// Why a failed job failed, in a few words (`worker-1 OOMKilled (exit code 137)`), as
    /// `trainctl get -o wide` says it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// The last lines of each replica that failed by itself, by replica (`worker-1`).
    pub log_tail: BTreeMap<String, Vec<String>>,
}

impl Notification {
    /// The notification of `job`, which ended in `state`, without log lines yet.
    #[must_use]
    pub fn new(job: TrainingJob, state: FinalState) -> Notification {
        let type_ = match state {
            FinalState::Succeeded => JobConditionType::Succeeded,
            FinalState::Failed => JobConditionType::Failed,
        };
        let condition = job.status().and_then(|status| status.condition(type_));
        Notification {
            reason: condition.map(|c| c.reason.clone()).unwrap_or_default(),
            message: condition.map(|c| c.message.clone()).unwrap_or_default(),
            job,
            state,
            cause: None,
            log_tail: BTreeMap::new(),
        }
    }

    /// The variables the command gets: the job's name, namespace, kind and final state.
    fn env(&self) -> [(&'static str, &str); 4] {
        [
            ("TRAINCTL_JOB_NAME", self.job.name()),
            ("TRAINCTL_JOB_NAMESPACE", self.job.namespace()),
            ("TRAINCTL_JOB_KIND", self.job.kind().as_str()),
            ("TRAINCTL_JOB_STATE", self.state.as_str()),
        ]
    }

    /// `TFJob default/mnist (Failed)`, for the log.
    fn subject(&self) -> String {
        format!(
            "{} {}/{} ({})",
            self.job.kind().as_str(),
            self.job.namespace(),
            self.job.name(),
            self.state.as_str()
        )
    }
}

/// A replica whose last log lines go into the notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedReplica {
    /// Its name, `worker-1`.
    pub name: String,
    /// Its log file (the one written; the rotated ones beside it are read too).
    pub log_path: PathBuf,
}

/// Why a notification did not reach one of its recipients.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeliveryFailure {
    /// No thread could be started to deliver it.
    #[error("cannot start a thread to deliver the notification: {0}")]
    Thread(String),
    /// The notification could not be written as JSON.
    #[error("cannot write the notification as JSON: {0}")]
    Payload(String),
    /// The `--on-finish` command failed.
    #[error("on-finish command: {0}")]
    Hook(HookFailure),
    /// A webhook was not delivered.
    #[error("webhook {url}: {}", undelivered_words(.undelivered))]
    Webhook {
        /// The URL.
        url: String,
        /// What happened.
        undelivered: Undelivered,
    },
}

/// `500 Internal Server Error after 3 tries`.
fn undelivered_words(undelivered: &Undelivered) -> String {
    let tries = match undelivered.attempts {
        1 => "1 try".to_owned(),
        n => format!("{n} tries"),
    };
    let timeout = if undelivered.out_of_time {
        " (--notify-timeout reached)"
    } else {
        ""
    };
    format!("{} after {tries}{timeout}", undelivered.problem)
}

/// A notification being delivered, in the background.
#[derive(Debug)]
pub struct Delivery {
    /// The failures, once every recipient was tried.
    failures: oneshot::Receiver<Vec<DeliveryFailure>>,
    /// The command's process group, to kill on abandonment.
    hook: Arc<HookGroup>,
}

impl Delivery {
    /// Waits until every recipient was tried (within the timeout, plus the reading of the log
    /// tails), and gives back the failures.
    pub async fn finished(&mut self) -> Vec<DeliveryFailure> {
        (&mut self.failures).await.unwrap_or_default()
    }

    /// Stops waiting: the command, if it runs, is killed with its process group; the webhooks'
    /// tries go on as long as this process does.
    pub fn abandon(self) {
        self.hook.abandon();
    }
}

/// Starts delivering `notification` to the recipients of `settings`, with the last log lines
/// of each of `failed`, on one of the few delivery threads ([`pool`], after the deliveries
/// before it); each outcome is logged.
#[must_use]
pub fn deliver(
    settings: &NotifySettings,
    mut notification: Notification,
    failed: Vec<FailedReplica>,
) -> Delivery {
    let (done, failures) = oneshot::channel();
    let hook = Arc::new(HookGroup::default());
    let group = Arc::clone(&hook);
    let settings = settings.clone();
    let subject = notification.subject();
    let delivering = move || {
        for replica in failed {
            let lines = tail::last_lines(replica.log_path.clone()).unwrap_or_else(|error| {
                vec![format!(
                    "(cannot read {}: {error})",
                    replica.log_path.display()
                )]
            });
            notification.log_tail.insert(replica.name, lines);
        }
        let _ = done.send(deliver_now(&settings, &notification, &group));
    };
    match pool::submit(delivering) {
        Ok(()) => Delivery { failures, hook },
        Err(error) => {
            let failure = DeliveryFailure::Thread(error);
            tracing::warn!("notification of {subject}: {failure}");
            let (done, failures) = oneshot::channel();
            let _ = done.send(vec![failure]);
            Delivery { failures, hook }
        }
    }
}

/// Delivers `notification` to every recipient at once, each on a thread of its own; the
/// failures.
fn deliver_now(
    settings: &NotifySettings,
    notification: &Notification,
    group: &Arc<HookGroup>,
) -> Vec<DeliveryFailure> {
    let subject = notification.subject();
    let payload = match serde_json::to_vec(notification) {
        Ok(payload) => payload,
        Err(error) => {
            let failure = DeliveryFailure::Payload(error.to_string());
            tracing::warn!("notification of {subject}: {failure}");
            return vec![failure];
        }
    };
    let timeout = settings.timeout;
    thread::scope(|scope| {
        let mut tries = Vec::new();
        if let Some(command) = &settings.on_finish {
            let payload = payload.clone();
            let env = notification.env();
            let recipient = "the on-finish command".to_owned();
            tries.push((
                recipient,
                try_on_thread(scope, "on-finish", move || {
                    hook::run(command, &env, payload, timeout, group).map_err(DeliveryFailure::Hook)
                }),
            ));
        }
        for url in &settings.webhooks {
            let payload = &payload;
            tries.push((
                url.clone(),
                try_on_thread(scope, "webhook", move || {
                    webhook::post(url, payload, timeout)
                        .map(|_| ())
                        .map_err(|undelivered| DeliveryFailure::Webhook {
                            url: url.clone(),
                            undelivered,
                        })
                }),
            ));
        }
        let mut failures = Vec::new();
        for (recipient, started) in tries {
            match outcome_of(started) {
                Ok(()) => tracing::info!("notified {recipient} of {subject}"),
                Err(failure) => {
                    tracing::warn!("notification of {subject}: {failure}");
                    failures.push(failure);
                }
            }
        }
        failures
    })
}

/// A delivery to one recipient, on a thread of its own, or why none could be started.
type Try<'scope> =
    Result<thread::ScopedJoinHandle<'scope, Result<(), DeliveryFailure>>, DeliveryFailure>;

/// Starts `deliver` on a thread of `scope` named `name`.
fn try_on_thread<'scope>(
    scope: &'scope thread::Scope<'scope, '_>,
    name: &str,
    deliver: impl FnOnce() -> Result<(), DeliveryFailure> + Send + 'scope,
) -> Try<'scope> {
    thread::Builder::new()
        .name(name.to_owned())
        .spawn_scoped(scope, deliver)
        .map_err(|error| DeliveryFailure::Thread(error.to_string()))
}

/// How a delivery to one recipient went; a panic of its thread goes on.
fn outcome_of(started: Try<'_>) -> Result<(), DeliveryFailure> {
    started?
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Checks a `--webhook` URL: `http://HOST[:PORT][/PATH]`. trainctl's HTTP client has no TLS:
/// an `https://` URL is refused with what to do instead.
pub fn check_webhook_url(url: &str) -> Result<(), String> {
    if url.starts_with("https://") {
        return Err(
            "https is not supported (trainctl's HTTP client is built without TLS): use an http:// \
             URL, or --on-finish with curl for an https endpoint"
                .to_owned(),
        );
    }
    let Some(rest) = url.strip_prefix("http://") else {
        return Err("expected an http:// URL".to_owned());
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() {
        return Err("the URL has no host".to_owned());
    }
    url.parse::<ureq::http::Uri>()
        .map(|_| ())
        .map_err(|error| format!("not a URL: {error}"))
}

#[cfg(test)]
mod tests;
