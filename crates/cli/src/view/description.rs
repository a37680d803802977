//! What `describe` shows of a job, as `kubectl describe` shows an object: identity and times, the
//! spec in short, the replicas (processes here, pods on a cluster), the conditions and the
//! events. The same text in both modes: only the column that locates a replica differs.
//!
//! On this machine, a replica's log that lost output (its oldest files deleted by rotation, or
//! output a full disk refused) says so among the events, at the time it last lost some: the log
//! files' marker is what tells (`trainctl_local::process::logs::log_usage`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use jiff::{SignedDuration, Timestamp};
use trainctl_api::{CleanPodPolicy, ConditionStatus, RunPolicy, TrainingJob};
use trainctl_events::Progress;
use trainctl_local::process::logs::log_usage;
use trainctl_local::store::{EventRecord, JobRecord, NEXT_START, ReplicaRecord, ReplicaState};

use self::spec::replica_spec;
use super::events::last_seen;
use super::jobs::age;
use super::volumes::ClaimBacking;
use super::{UNSET, fields, section};
use crate::table::Table;

/// Everything `describe` shows of a job, on this machine or on a cluster.
#[derive(Debug)]
pub struct Description {
    /// The job, status included.
    pub job: TrainingJob,
    /// Its `metadata.uid`.
    pub uid: String,
    /// When it was recorded here, or created in the cluster.
    pub created: Option<Timestamp>,
    /// Its state in one word, as `get` shows it.
    pub state: String,
    /// Its replicas, in slot order.
    pub replicas: Vec<ReplicaRow>,
    /// What locates a replica.
    pub placement: Placement,
    /// Its events, oldest last occurrence first.
    pub events: Vec<EventRow>,
    /// What backs each claim its replicas mount, by claim: on this machine only.
    pub claims: BTreeMap<String, ClaimBacking>,
    /// Its training progress, from its TensorBoard event files: on this machine only.
    pub progress: Option<Progress>,
    /// Where its TensorBoard event files are looked for, in order
    /// (`trainctl_local::claims::event_roots`): on this machine only.
    pub event_dirs: Vec<PathBuf>,
    /// Why a queue holds the job back: the server's, with the job's place (`#2 in queue: ...`),
    /// or on a cluster Kueue's words for a job its queue has not admitted.
    pub held_by: Option<String>,
    /// Why the job failed, when its replicas say more than its status: on this machine only.
    pub failure: Option<String>,
}

/// What locates a replica: the column between RESTARTS and PORT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Its process id (a replica on this machine).
    Process,
    /// Its pod's node (a replica on a cluster).
    Node,
}

impl Placement {
    fn header(self) -> &'static str {
        match self {
            Placement::Process => "PID",
            Placement::Node => "NODE",
        }
    }
}

/// One replica as `describe` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaRow {
    /// `worker-1`.
    pub name: String,
    /// Its state (here) or its pod's phase (on a cluster).
    pub state: String,
    /// The last exit code.
    pub exit_code: Option<i32>,
    /// How many times it restarted.
    pub restarts: i32,
    /// Its process id or its node ([`Placement`]).
    pub place: Option<String>,
    /// Its port.
    pub port: Option<u16>,
    /// Its GPUs: their indices here, their count on a cluster.
    pub gpus: Option<String>,
    /// When its process or container last started.
    pub started: Option<Timestamp>,
}

/// One event as `describe` shows it: alike events are one, counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRow {
    /// When it (last) happened.
    pub time: Timestamp,
    /// When it first happened.
    pub first_time: Timestamp,
    /// How many times it happened.
    pub count: u32,
    /// `Normal` or `Warning`.
    pub type_: String,
    /// The reason, one word.
    pub reason: String,
    /// What happened.
    pub message: String,
}

/// A replica's state as `describe` says it: the word, for one waiting out its back-off when it
/// starts again (`CrashLoopBackOff (next start in 35s)`), and for one the kernel ended why
/// (`Failed (OOMKilled)`).
fn state_words(replica: &ReplicaRecord, now: Timestamp) -> String {
    let next = replica
        .reason
        .as_deref()
        .and_then(|reason| reason.strip_prefix(NEXT_START))
        .and_then(|at| at.parse::<Timestamp>().ok())
        .filter(|_| replica.state == ReplicaState::CrashLoopBackOff);
    match next {
        Some(at) => format!(
            "{} (next start in {})",
            replica.state,
            age(at.duration_since(now))
        ),
        // Why it ended, when the kernel says (`Failed (OOMKilled)`).
        None => match replica.reason.as_deref() {
            Some(reason) if !reason.starts_with(NEXT_START) => {
                format!("{} ({reason})", replica.state)
            }
            _ => replica.state.as_str().to_owned(),
        },
    }
}

impl Description {
    /// The description of a job recorded on this machine, in `state`, its claims backed by
    /// `claims`; what its replicas' logs lost is among its events.
    pub fn local(
        state: &str,
        record: JobRecord,
        replicas: &[ReplicaRecord],
        events: &[EventRecord],
        claims: BTreeMap<String, ClaimBacking>,
    ) -> Description {
        Description {
            uid: record.uid,
            created: Some(record.created_at),
            state: state.to_owned(),
            replicas: replicas
                .iter()
                .map(|replica| ReplicaRow {
                    name: replica.name(),
                    state: state_words(replica, Timestamp::now()),
                    exit_code: replica.exit_code,
                    restarts: replica.restarts,
                    place: replica.pid.map(|pid| pid.pid.to_string()),
                    port: replica.port,
                    gpus: (!replica.gpus.is_empty()).then(|| {
                        let gpus: Vec<String> = replica.gpus.iter().map(u32::to_string).collect();
                        gpus.join(",")
                    }),
                    started: replica.started_at,
                })
                .collect(),
            placement: Placement::Process,
            events: with_log_losses(
                events
                    .iter()
                    .map(|event| EventRow {
                        time: event.time,
                        first_time: event.first_time,
                        count: event.count,
                        type_: event.type_.clone(),
                        reason: event.reason.clone(),
                        message: event.message.clone(),
                    })
                    .collect(),
                replicas,
                record.created_at,
            ),
            claims,
            progress: None,
            event_dirs: Vec::new(),
            held_by: None,
            failure: None,
            job: record.job,
        }
    }

    /// The text, ages counted up to `now`.
    pub fn render(&self, now: Timestamp) -> String {
        let job = &self.job;
        let status = job.status();
        let started = status.and_then(|s| s.start_time.as_ref()).map(|t| t.0);
        let completed = status.and_then(|s| s.completion_time.as_ref()).map(|t| t.0);
        let mut head = vec![
            ("Name:", job.name().to_owned()),
            ("Namespace:", job.namespace().to_owned()),
            ("Kind:", job.kind().as_str().to_owned()),
            ("UID:", self.uid.clone()),
        ];
        if let Some(labels) = &job.metadata().labels
            && !labels.is_empty()
        {
            let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            head.push(("Labels:", labels.join("\n")));
        }
        head.push(("State:", self.state.clone()));
        if let Some(why) = &self.held_by {
            head.push(("Waiting:", why.clone()));
        }
        let failure = self
            .failure
            .as_deref()
            .or_else(|| status.and_then(trainctl_api::JobStatus::failure_message));
        if let Some(why) = failure {
            head.push(("Reason:", why.to_owned()));
        }
        if let Some(created) = self.created {
            head.push((
                "Created:",
                format!(
                    "{} ({} ago)",
                    time(created),
                    age(now.duration_since(created))
                ),
            ));
        }
        if let Some(started) = started {
            head.push(("Started:", time(started)));
        }
        if let Some(completed) = completed {
            head.push(("Completed:", time(completed)));
            if let Some(started) = started {
                head.push(("Duration:", duration(completed.duration_since(started))));
            }
        }
        if let Some(progress) = &self.progress {
            head.push(("Progress:", super::progress::long(progress, now)));
        }
        if !self.event_dirs.is_empty() {
            let dirs: Vec<String> = self
                .event_dirs
                .iter()
                .map(|dir| dir.display().to_string())
                .collect();
            head.push(("TensorBoard:", dirs.join("\n")));
        }
        let mut out = String::new();
        fields(&mut out, 0, &head);
        out.push_str("Spec:\n");
        for (replica_type, spec) in job.replica_specs().iter() {
            replica_spec(&mut out, job, replica_type, spec, &self.claims);
        }
        run_policy(&mut out, job.run_policy());
        section(&mut out, "Replicas:", self.replicas_table());
        section(&mut out, "Conditions:", self.conditions_table());
        section(&mut out, "Events:", self.events_table(now));
        out
    }

    fn replicas_table(&self) -> Option<Table> {
        let mut table = Table::new([
            "REPLICA",
            "STATE",
            "EXIT",
            "RESTARTS",
            self.placement.header(),
            "PORT",
            "GPUS",
            "STARTED",
        ]);
        for replica in &self.replicas {
            table.row([
                replica.name.clone(),
                replica.state.clone(),
                or_dash(replica.exit_code),
                replica.restarts.to_string(),
                or_dash(replica.place.as_ref()),
                or_dash(replica.port),
                or_dash(replica.gpus.as_ref()),
                or_dash(replica.started.map(time)),
            ]);
        }
        (!self.replicas.is_empty()).then_some(table)
    }

    fn conditions_table(&self) -> Option<Table> {
        let conditions = self
            .job
            .status()
            .map(|status| status.conditions.as_slice())
            .unwrap_or_default();
        let mut table = Table::new(["TYPE", "STATUS", "REASON", "MESSAGE", "LAST TRANSITION"]);
        for condition in conditions {
            table.row([
                condition.type_.as_str().to_owned(),
                match condition.status {
                    ConditionStatus::True => "True",
                    ConditionStatus::False => "False",
                    ConditionStatus::Unknown => "Unknown",
                }
                .to_owned(),
                condition.reason.clone(),
                condition.message.clone(),
                or_dash(condition.last_transition_time.as_ref().map(|t| time(t.0))),
            ]);
        }
        (!conditions.is_empty()).then_some(table)
    }

    fn events_table(&self, now: Timestamp) -> Option<Table> {
        let mut table = Table::new(["AGE", "TYPE", "REASON", "MESSAGE"]);
        for event in &self.events {
            table.row([
                last_seen(now, event.time, event.first_time, event.count),
                event.type_.clone(),
                event.reason.clone(),
                event.message.clone(),
            ]);
        }
        (!self.events.is_empty()).then_some(table)
    }
}

/// `events`, with what each replica's log lost, in time order: bytes deleted by rotation
/// (`LogRotated`), bytes a full disk refused (`LogIncomplete`), at the time the log last lost
/// some (`fallback` when that is unknown).
fn with_log_losses(
    mut events: Vec<EventRow>,
    replicas: &[ReplicaRecord],
    fallback: Timestamp,
) -> Vec<EventRow> {
    for replica in replicas {
        let usage = log_usage(&replica.log_path);
        let time = usage
            .dropped_at
            .and_then(|time| Timestamp::try_from(time).ok())
            .unwrap_or(fallback);
        let name = replica.name();
        if usage.dropped.rotated > 0 {
            events.push(EventRow {
                time,
                first_time: time,
                count: 1,
                type_: "Normal".to_owned(),
                reason: "LogRotated".to_owned(),
                message: format!(
                    "{name}'s log was rotated: its oldest {} were dropped; {} in {} file{} are kept",
                    bytes(usage.dropped.rotated),
                    bytes(usage.kept),
                    usage.files,
                    if usage.files == 1 { "" } else { "s" }
                ),
            });
        }
        if usage.dropped.unwritten > 0 {
            events.push(EventRow {
                time,
                first_time: time,
                count: 1,
                type_: "Warning".to_owned(),
                reason: "LogIncomplete".to_owned(),
                message: format!(
                    "{name}'s log misses {} of its output: the disk was full",
                    bytes(usage.dropped.unwritten)
                ),
            });
        }
    }
    // Stable: events of the same time keep their order.
    events.sort_by_key(|event| event.time);
    events
}

/// A size in bytes, as `3.0 MiB (3145728 bytes)`, or `512 bytes` below 1 KiB.
fn bytes(size: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    let mut unit = None;
    let mut divisor: u128 = 1;
    for (index, _) in UNITS.iter().enumerate() {
        if u128::from(size) < divisor * 1024 {
            break;
        }
        divisor *= 1024;
        unit = Some(index);
    }
    let Some(unit) = unit else {
        return format!("{size} bytes");
    };
    let tenths = (u128::from(size) * 10 + divisor / 2) / divisor;
    format!(
        "{}.{} {} ({size} bytes)",
        tenths / 10,
        tenths % 10,
        UNITS[unit]
    )
}

/// The policies of `runPolicy`.
fn run_policy(out: &mut String, policy: &RunPolicy) {
    out.push_str("  Run Policy:\n");
    let set = |value: Option<String>| value.unwrap_or_else(|| UNSET.to_owned());
    fields(
        out,
        4,
        &[
            (
                "Clean Pod Policy:",
                set(policy.clean_pod_policy.map(|policy| {
                    match policy {
                        CleanPodPolicy::All => "All",
                        CleanPodPolicy::Running => "Running",
                        CleanPodPolicy::None => "None",
                    }
                    .to_owned()
                })),
            ),
            (
                "Backoff Limit:",
                set(policy.backoff_limit.map(|n| n.to_string())),
            ),
            (
                "Active Deadline Seconds:",
                set(policy.active_deadline_seconds.map(|n| n.to_string())),
            ),
            (
                "TTL Seconds After Finished:",
                set(policy.ttl_seconds_after_finished.map(|n| n.to_string())),
            ),
            ("Suspend:", policy.is_suspended().to_string()),
            (
                "Priority Class:",
                set(policy
                    .scheduling_policy
                    .as_ref()
                    .and_then(|s| s.priority_class.clone())),
            ),
        ],
    );
}

/// A time to the second, in UTC.
fn time(timestamp: Timestamp) -> String {
    timestamp.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `1h2m3s`, `4m0s`, `59s`.
fn duration(duration: SignedDuration) -> String {
    let seconds = duration.as_secs().max(0);
    let (hours, minutes, seconds) = (seconds / 3_600, seconds / 60 % 60, seconds % 60);
    if hours > 0 {
        format!("{hours}h{minutes}m{seconds}s")
    } else if minutes > 0 {
        format!("{minutes}m{seconds}s")
    } else {
        format!("{seconds}s")
    }
}

/// The value, or `-` when there is none.
fn or_dash<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(|| "-".to_owned(), |value| value.to_string())
}

pub(crate) mod spec;
#[cfg(test)]
mod tests;
