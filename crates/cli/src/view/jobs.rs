//! The table `get` prints of jobs, as kubectl prints objects: NAMESPACE (with `-A`, or when the
//! jobs span several), NAME, STATE, AGE, with `-o wide` REPLICAS, RESTARTS, DURATION, REASON
//! (why a job waits, why it failed, or `CrashLoopBackOff` for one whose replicas crash loop) and
//! PROGRESS (the latest step and main scalar of its TensorBoard event files: `-` on a cluster,
//! whose files are not read), and with `--show-labels` LABELS; the same for jobs of this machine
//! and of a cluster.

use jiff::{SignedDuration, Timestamp};
use trainctl_api::{JobKind, JobStatus, TrainingJob};

use crate::table::Table;

/// One job as the table shows it, wherever it runs.
#[derive(Debug, Clone)]
pub struct JobRow<'a> {
    /// Its namespace.
    pub namespace: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Its kind.
    pub kind: JobKind,
    /// Its state in one word.
    pub state: &'a str,
    /// When it was recorded here, or created in the cluster.
    pub created: Option<Timestamp>,
    /// The job, for its replicas and its start and completion times.
    pub job: &'a TrainingJob,
    /// Its replicas' restarts, when counted (`-o wide`).
    pub restarts: Option<i64>,
    /// Its training progress in words (`step 120 loss=0.2310`), when known (`-o wide`).
    pub progress: Option<String>,
    /// Why a queue holds the job back, in more words than its status (the server's queue with
    /// the job's place, or Kueue's words on a cluster; `-o wide`).
    pub held_by: Option<&'a str>,
    /// Why it failed, when its replicas say more than its status (`-o wide`).
    pub failure: Option<&'a str>,
    /// Why a running job does not get on, when its status does not say: `CrashLoopBackOff`
    /// for a job each of whose replicas left waits out a restart back-off (`-o wide`).
    pub reason: Option<&'a str>,
}

/// Which columns the table has.
#[derive(Debug, Clone, Copy, Default)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "each column is shown or not, independently of the others"
)]
pub struct Columns {
    /// NAME is `kind/name`.
    pub with_kind: bool,
    /// NAMESPACE first.
    pub with_namespace: bool,
    /// REPLICAS, RESTARTS, DURATION, REASON and PROGRESS (`-o wide`).
    pub wide: bool,
    /// LABELS last (`--show-labels`).
    pub labels: bool,
}

/// The table of `rows` with `columns`, ages counted up to `now`.
pub fn table(rows: &[JobRow<'_>], columns: Columns, now: Timestamp) -> Table {
    let mut table = Table::new([
        "NAMESPACE",
        "NAME",
        "STATE",
        "AGE",
        "REPLICAS",
        "RESTARTS",
        "DURATION",
        "REASON",
        "PROGRESS",
        "LABELS",
    ]);
    for row in rows {
        let name = if columns.with_kind {
            format!("{}/{}", row.kind.singular(), row.name)
        } else {
            row.name.to_owned()
        };
        let status = row.job.status();
        let started = status.and_then(|s| s.start_time.as_ref()).map(|t| t.0);
        let ended = status.and_then(|s| s.completion_time.as_ref()).map(|t| t.0);
        let duration = started.map(|start| ended.unwrap_or(now).duration_since(start));
        table.row([
            row.namespace.to_owned(),
            name,
            row.state.to_owned(),
            row.created.map_or_else(
                || "-".to_owned(),
                |created| age(now.duration_since(created)),
            ),
            replicas(row.job),
            row.restarts.map_or_else(String::new, |n| n.to_string()),
            duration.map_or_else(|| "-".to_owned(), age),
            row.held_by
                .or_else(|| status.and_then(JobStatus::waiting_reason))
                .or(row.failure)
                .or_else(|| status.and_then(JobStatus::failure_message))
                .or(row.reason)
                .unwrap_or("-")
                .to_owned(),
            row.progress.clone().unwrap_or_else(|| "-".to_owned()),
            labels(row.job),
        ]);
    }
    let mut keep = vec![columns.with_namespace, true, true, true];
    keep.extend([columns.wide; 5]);
    keep.push(columns.labels);
    table.keep_columns(&keep);
    table
}

/// `key=value,key2=value2`, as kubectl's `--show-labels`; `<none>` without labels.
fn labels(job: &TrainingJob) -> String {
    match &job.metadata().labels {
        Some(labels) if !labels.is_empty() => labels
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect::<Vec<_>>()
            .join(","),
        _ => "<none>".to_owned(),
    }
}

/// `Worker:2 PS:1`.
fn replicas(job: &TrainingJob) -> String {
    job.replica_specs()
        .iter()
        .map(|(replica_type, spec)| format!("{replica_type}:{}", spec.replicas_or_default()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// kubectl's age: `45s`, `3m`, `2h`, `5d`.
pub fn age(duration: SignedDuration) -> String {
    let seconds = duration.as_secs().max(0);
    match seconds {
        0..120 => format!("{seconds}s"),
        120..7_200 => format!("{}m", seconds / 60),
        7_200..172_800 => format!("{}h", seconds / 3_600),
        _ => format!("{}d", seconds / 86_400),
    }
}
