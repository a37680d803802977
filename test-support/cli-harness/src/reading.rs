//! Readers of what `trainctl` prints: a job's conditions and replica counts, `run`'s summary,
//! tables, prefixed lines and `env` output.

use std::collections::BTreeMap;

use serde_json::Value;

/// A condition as `(type, status, reason, message)`.
pub type Condition = (String, String, String, String);

/// The job's `status.conditions`, oldest first, as `(type, status, reason, message)`.
pub fn conditions(job: &Value) -> Vec<Condition> {
    let text = |condition: &Value, field: &str| {
        condition[field]
            .as_str()
            .unwrap_or_else(|| panic!("condition without {field}: {condition}"))
            .to_owned()
    };
    job["status"]["conditions"]
        .as_array()
        .unwrap_or_else(|| panic!("no status.conditions in {job:#}"))
        .iter()
        .map(|c| {
            (
                text(c, "type"),
                text(c, "status"),
                text(c, "reason"),
                text(c, "message"),
            )
        })
        .collect()
}

/// Builds the expected conditions from `(type, status, reason, message)` literals.
pub fn expect_conditions(expected: &[(&str, &str, &str, &str)]) -> Vec<Condition> {
    expected
        .iter()
        .map(|&(t, s, r, m)| (t.to_owned(), s.to_owned(), r.to_owned(), m.to_owned()))
        .collect()
}

/// The conditions of a job that ended with `last` after it ran: Created, Running (now False),
/// then `last` (`Succeeded` or `Failed`) with its reason and message.
pub fn ran_then(kind: &str, created: &str, running: &str, last: (&str, &str)) -> Vec<Condition> {
    let (type_, message) = last;
    expect_conditions(&[
        ("Created", "True", &format!("{kind}Created"), created),
        ("Running", "False", &format!("{kind}Running"), running),
        (type_, "True", &format!("{kind}{type_}"), message),
    ])
}

/// `status.replicaStatuses` without the selectors: `{Type: {active, succeeded, failed}}`,
/// absent counts as 0.
pub fn replica_counts(job: &Value) -> BTreeMap<String, (u64, u64, u64)> {
    job["status"]["replicaStatuses"]
        .as_object()
        .unwrap_or_else(|| panic!("no status.replicaStatuses in {job:#}"))
        .iter()
        .map(|(replica_type, counts)| {
            let count = |field: &str| counts[field].as_u64().unwrap_or(0);
            (
                replica_type.clone(),
                (count("active"), count("succeeded"), count("failed")),
            )
        })
        .collect()
}

/// Builds the expected replica counts from `(type, active, succeeded, failed)` literals.
pub fn expect_counts(expected: &[(&str, u64, u64, u64)]) -> BTreeMap<String, (u64, u64, u64)> {
    expected
        .iter()
        .map(|&(t, a, s, f)| (t.to_owned(), (a, s, f)))
        .collect()
}

/// One row of the summary `trainctl run` prints at its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryRow {
    /// `Succeeded`, `Failed`, `Stopped`...
    pub state: String,
    /// The last exit code, `-` if none.
    pub exit: String,
    /// In-place restarts.
    pub restarts: u32,
    /// The replica's loopback port.
    pub port: Option<u16>,
    /// Its GPUs, `-` if none.
    pub gpus: String,
}

/// The summary table at the end of `run`'s stderr, by replica (`worker-0`).
pub fn summary(stderr: &str) -> BTreeMap<String, SummaryRow> {
    let mut lines = stderr.lines().skip_while(|line| {
        !(line.starts_with("  REPLICA") && line.split_whitespace().count() == 6)
    });
    assert!(lines.next().is_some(), "no summary table in:\n{stderr}");
    lines
        .take_while(|line| line.starts_with("  "))
        .map(|line| {
            let cells: Vec<&str> = line.split_whitespace().collect();
            let [replica, state, exit, restarts, port, gpus] = cells[..] else {
                panic!("summary row `{line}` has not 6 cells");
            };
            (
                replica.to_owned(),
                SummaryRow {
                    state: state.to_owned(),
                    exit: exit.to_owned(),
                    restarts: restarts.parse().expect("RESTARTS is a number"),
                    port: port.parse().ok(),
                    gpus: gpus.to_owned(),
                },
            )
        })
        .collect()
}

/// The rows of a `get` table as maps from column header to cell (cells are three or more
/// spaces apart; a cell may hold single spaces, as `Chief:1 Worker:2`).
pub fn table(stdout: &str) -> Vec<BTreeMap<String, String>> {
    let split = |line: &str| -> Vec<String> {
        line.split("   ")
            .map(str::trim)
            .filter(|cell| !cell.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let mut lines = stdout.lines();
    let headers = split(
        lines
            .next()
            .unwrap_or_else(|| panic!("no table in:\n{stdout}")),
    );
    lines
        .map(|line| headers.iter().cloned().zip(split(line)).collect())
        .collect()
}

/// The lines of `text` that start with `prefix`, without it.
pub fn lines_after<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.lines()
        .filter_map(|line| line.strip_prefix(prefix))
        .collect()
}

/// `NAME=value` lines (as `env` prints them) as a map; lines without `=` are skipped.
pub fn env_lines(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}
