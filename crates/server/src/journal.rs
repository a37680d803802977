//! What the server says it does: one line on its log (`tracing`, at `info`) per transition of a
//! job, with structured fields, so that a JSON log has them as fields:
//!
//! | `event` | fields besides `job` (`tfjob/default/mnist`) |
//! |---|---|
//! | `queued` | `priority`, `position` (1: the head) |
//! | `admitted` | `cpu_millis`, `memory_bytes`, `gpus` (`0,1`), `waited_ms`, `backfilled` |
//! | `restarted` | `replica` (`worker-0`), `exit_code`, `restarts` (this replica's, this one included) |
//! | `suspended`, `resumed`, `deleted` | |
//! | `finished` | `outcome` (`Succeeded`, `Failed`), `reason`, `details`, `duration_ms` |
//!
//! A restart is seen in the job's events, as its run records them: an exit (`ExitedWithCode`)
//! followed by the kubelet's back-off (`BackOff`, a restart in place) or by the engine's
//! `<Kind>Restarting` (the pod created again). The server reads the events of every admitted
//! job every [`READ_EVERY`], and once more when its run ends, before it says how it finished.
//! The store keeps alike events as one series with a count: what is new is how much each
//! series' count grew since the last read. A series of combined events
//! (`trainctl_local::store::COMBINED`) names only the latest of their pods: the restarts it adds
//! are that pod's.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use jiff::Timestamp;
use trainctl_api::{JobConditionType, TrainingJob};
use trainctl_local::kubelet::admission::Amounts;
use trainctl_local::runner::ResourceHold;
use trainctl_local::store::{COMBINED, EventRecord, Store};

use crate::queue::Admitted;

/// How often the events of admitted jobs are read for restarts.
pub const READ_EVERY: Duration = Duration::from_millis(250);

/// `tfjob/default/mnist`: how the log names a job.
#[must_use]
pub fn label(job: &TrainingJob) -> String {
    format!(
        "{}/{}/{}",
        job.kind().singular(),
        job.namespace(),
        job.name()
    )
}

/// The job was queued, with `ahead` jobs ahead of it.
pub fn queued(job: &TrainingJob, priority: i32, ahead: usize) {
    let label = label(job);
    let position = ahead.saturating_add(1);
    tracing::info!(
        job = label.as_str(),
        event = "queued",
        priority,
        position,
        "{label} queued: priority {priority}, position {position}"
    );
}

/// The job took `hold`, after waiting as `admitted` says.
fn admitted(label: &str, hold: &ResourceHold, admitted: &Admitted) {
    let gpus = hold
        .gpus
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let waited = admitted.waited.unwrap_or_default();
    let waited_ms = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX);
    let what = Amounts {
        cpu_millis: hold.cpu_millis,
        memory_bytes: hold.memory_bytes,
        gpus: 0,
    };
    let devices = if gpus.is_empty() {
        String::new()
    } else {
        format!(", GPUs {gpus}")
    };
    let backfilled = admitted.backfilled;
    let how = if backfilled {
        " (backfilled: started before jobs ahead of it, delaying none)"
    } else {
        ""
    };
    tracing::info!(
        job = label,
        event = "admitted",
        cpu_millis = hold.cpu_millis,
        memory_bytes = hold.memory_bytes,
        gpus = gpus.as_str(),
        waited_ms,
        backfilled,
        "{label} admitted after {}: {what}{devices}{how}",
        seconds(waited)
    );
}

/// The job's replicas were stopped and its resources given back, or its suspension recorded.
pub fn suspended(label: &str) {
    tracing::info!(job = label, event = "suspended", "{label} suspended");
}

/// The suspended job queues again.
pub fn resumed(label: &str) {
    tracing::info!(job = label, event = "resumed", "{label} resumed");
}

/// The job and its records were removed.
pub fn deleted(label: &str) {
    tracing::info!(job = label, event = "deleted", "{label} deleted");
}

/// The job finished (its status says how); `ran` is how long its run took, for a job whose
/// status has no start and completion time.
pub fn finished(job: &TrainingJob, ran: Duration) {
    let label = label(job);
    let status = job.status();
    let ending = status.and_then(|status| {
        if status.is_true(JobConditionType::Succeeded) {
            status.condition(JobConditionType::Succeeded)
        } else {
            status.condition(JobConditionType::Failed)
        }
    });
    let outcome = ending.map_or("Unknown", |condition| condition.type_.as_str());
    let reason = ending.map_or("", |condition| condition.reason.as_str());
    let details = ending.map_or("", |condition| condition.message.as_str());
    let took = status
        .and_then(|status| {
            let start = status.start_time.as_ref()?.0;
            let end = status.completion_time.as_ref()?.0;
            end.duration_since(start).try_into().ok()
        })
        .unwrap_or(ran);
    let duration_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
    tracing::info!(
        job = label.as_str(),
        event = "finished",
        outcome,
        reason,
        details,
        duration_ms,
        "{label} finished: {outcome} ({reason}) after {}",
        seconds(took)
    );
}

/// `0.3s`, `12.0s`, `2m5s`.
fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs();
    if secs < 60 {
        format!("{:.1}s", duration.as_secs_f64())
    } else {
        format!("{}m{}s", secs / 60, secs % 60)
    }
}

/// A replica restarted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restart {
    /// `worker-0`.
    pub replica: String,
    /// The exit that made it restart, when recorded.
    pub exit_code: Option<i32>,
    /// The replica's restarts so far, this one included.
    pub restarts: i32,
}

/// What is known of an admitted job's restarts.
#[derive(Debug, Clone)]
pub struct Restarts {
    /// `tfjob/default/mnist`.
    label: String,
    /// The job's name, which its pods' names begin with.
    job_name: String,
    /// Events before this time belong to an earlier run.
    since: Timestamp,
    /// How many occurrences of each series of the job's events were read.
    read: HashMap<Series, u32>,
    /// Restarts so far, by pod name.
    counts: HashMap<String, i32>,
    /// Exits not followed by a restart yet, by pod name.
    exits: BTreeMap<String, i32>,
}

impl Restarts {
    /// The job `label` named `job_name`, admitted at `since`, whose replicas (by pod name)
    /// restarted `counts` times before.
    #[must_use]
    pub fn new(
        label: String,
        job_name: String,
        since: Timestamp,
        counts: HashMap<String, i32>,
    ) -> Restarts {
        Restarts {
            label,
            job_name,
            since,
            read: HashMap::new(),
            counts,
            exits: BTreeMap::new(),
        }
    }

    /// The restarts that the job's `events` (all of them, as the store gives them) show beyond
    /// those read before.
    pub fn read(&mut self, events: &[EventRecord]) -> Vec<Restart> {
        let mut restarts = Vec::new();
        for event in events {
            let fresh = self.fresh(event);
            if fresh == 0 {
                continue;
            }
            let message = event
                .message
                .strip_prefix(COMBINED)
                .unwrap_or(&event.message);
            if event.reason == "ExitedWithCode" {
                if let Some((pod, code)) = exited(message) {
                    self.exits.insert(pod.to_owned(), code);
                }
            } else if event.reason == "BackOff" {
                if let Some(pod) = message.rsplit_once(" of pod ").map(|(_, pod)| pod) {
                    let code = self.exits.remove(pod);
                    for _ in 0..fresh {
                        restarts.push(self.restarted(pod, code));
                    }
                }
            } else if event.reason.ends_with("Restarting") {
                let exits = std::mem::take(&mut self.exits);
                for (pod, code) in exits.into_iter().filter(|(_, code)| *code != 0) {
                    restarts.push(self.restarted(&pod, Some(code)));
                }
            }
        }
        restarts
    }

    /// How many occurrences of `event`'s series are new since the last read. Those of a series
    /// first read are new from `since` on: none when it was last seen before, all when it was
    /// first seen after, else the last one.
    fn fresh(&mut self, event: &EventRecord) -> u32 {
        let key = Series::of(event);
        let read = match self.read.get(&key) {
            Some(&read) => read,
            None if event.time < self.since => event.count,
            None if event.first_time >= self.since => 0,
            None => event.count.saturating_sub(1),
        };
        self.read.insert(key, event.count);
        event.count.saturating_sub(read)
    }

    fn restarted(&mut self, pod: &str, exit_code: Option<i32>) -> Restart {
        let count = self.counts.entry(pod.to_owned()).or_default();
        *count += 1;
        let replica = pod
            .strip_prefix(&self.job_name)
            .and_then(|rest| rest.strip_prefix('-'))
            .unwrap_or(pod);
        Restart {
            replica: replica.to_owned(),
            exit_code,
            restarts: *count,
        }
    }
}

/// What tells a series of events from the others of its job: the combined events of a group
/// are one series whatever their latest message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Series {
    type_: String,
    reason: String,
    object: Option<String>,
    /// The message; `None` for the combined series.
    message: Option<String>,
}

impl Series {
    fn of(event: &EventRecord) -> Series {
        Series {
            type_: event.type_.clone(),
            reason: event.reason.clone(),
            object: event.object.clone(),
            message: (!event.message.starts_with(COMBINED)).then(|| event.message.clone()),
        }
    }
}

/// `(pod, code)` of an `ExitedWithCode` message, `Pod: default.mnist-worker-0 exited with code 1`.
fn exited(message: &str) -> Option<(&str, i32)> {
    let (pod, code) = message
        .strip_prefix("Pod: ")?
        .rsplit_once(" exited with code ")?;
    let (_, pod) = pod.split_once('.')?;
    Some((pod, code.parse().ok()?))
}

/// The jobs the server runs, by uid, as the log names them, and the restarts of those admitted.
#[derive(Debug, Default)]
pub struct Journal {
    state: Mutex<JournalState>,
}

#[derive(Debug, Default)]
struct JournalState {
    /// Every job with a run, by uid: `tfjob/default/mnist` and its name.
    jobs: HashMap<String, (String, String)>,
    /// The restarts of every admitted job, by uid.
    watched: HashMap<String, Restarts>,
}

impl Journal {
    /// The job `uid` has a run (queued, or taken over).
    pub fn launched(&self, uid: &str, job: &TrainingJob) {
        self.lock()
            .jobs
            .insert(uid.to_owned(), (label(job), job.name().to_owned()));
    }

    /// Says that the job `uid` was admitted, and reads its restarts from now on.
    pub fn admitted(&self, uid: &str, hold: &ResourceHold, how: &Admitted) {
        let mut state = self.lock();
        let Some((label, job_name)) = state.jobs.get(uid).cloned() else {
            return;
        };
        admitted(&label, hold, how);
        let restarts = Restarts::new(label, job_name, Timestamp::now(), HashMap::new());
        state.watched.insert(uid.to_owned(), restarts);
    }

    /// Reads the restarts of the job `uid`, taken over from a server that died, from now on; its
    /// replicas restarted `counts` times before (by pod name).
    pub fn adopted(&self, uid: &str, counts: HashMap<String, i32>) {
        let mut state = self.lock();
        let Some((label, job_name)) = state.jobs.get(uid).cloned() else {
            return;
        };
        let restarts = Restarts::new(label, job_name, Timestamp::now(), counts);
        state.watched.insert(uid.to_owned(), restarts);
    }

    /// Says the restarts recorded since the last read: of every admitted job, or of the job
    /// `only`.
    pub fn read(&self, store: &Store, only: Option<&str>) {
        let mut state = self.lock();
        for (uid, restarts) in &mut state.watched {
            if only.is_some_and(|only| only != uid) {
                continue;
            }
            let events = match store.events(uid) {
                Ok(events) => events,
                Err(error) => {
                    tracing::warn!(
                        job = restarts.label.as_str(),
                        "cannot read the job's events: {error}"
                    );
                    continue;
                }
            };
            for restart in restarts.read(&events) {
                say_restart(&restarts.label, &restart);
            }
        }
    }

    /// The run of the job `uid` ended: its restarts are no longer read.
    pub fn ended(&self, uid: &str) {
        let mut state = self.lock();
        state.jobs.remove(uid);
        state.watched.remove(uid);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, JournalState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn say_restart(label: &str, restart: &Restart) {
    let Restart {
        replica,
        exit_code,
        restarts,
    } = restart;
    let exit = exit_code.map_or_else(
        || "exited".to_owned(),
        |code| format!("exited with code {code}"),
    );
    tracing::info!(
        job = label,
        event = "restarted",
        replica = replica.as_str(),
        exit_code,
        restarts,
        "{label}: {replica} {exit}; restart {restarts}"
    );
}

#[cfg(test)]
mod tests;
