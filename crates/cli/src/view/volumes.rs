//! What `trainctl volumes` prints of the claims (`persistentVolumeClaim` volumes) of this
//! machine's jobs, as `kubectl get pvc` prints a cluster's: NAMESPACE (with `-A`, or when the
//! claims span several), NAME, PATH, SIZE, SOURCE and USED BY, with `-o wide` FILES and AGE;
//! and what backs a claim, which `describe` shows too.

use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde_json::{Value, json};
use trainctl_api::JobKind;

use super::NONE;
use super::jobs::age;
use crate::table::Table;

/// What backs a claim on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimBacking {
    /// A directory of the user's, bound with `--volume`.
    Bound(PathBuf),
    /// The claim's own directory, under the state directory.
    Own(PathBuf),
}

impl ClaimBacking {
    /// The directory.
    #[must_use]
    pub fn path(&self) -> &Path {
        match self {
            ClaimBacking::Bound(path) | ClaimBacking::Own(path) => path,
        }
    }

    /// Where it comes from, in one word: `bound` or `trainctl`.
    #[must_use]
    pub fn source(&self) -> &'static str {
        match self {
            ClaimBacking::Bound(_) => "bound",
            ClaimBacking::Own(_) => "trainctl",
        }
    }

    /// How `describe` says it: `bound to PATH`, or `at PATH`.
    #[must_use]
    pub fn words(&self) -> String {
        match self {
            ClaimBacking::Bound(path) => format!("bound to {}", path.display()),
            ClaimBacking::Own(path) => format!("at {}", path.display()),
        }
    }
}

/// What a claim's directory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskUsage {
    /// The size of its files, in bytes.
    pub bytes: u64,
    /// How many files.
    pub files: u64,
    /// Whether every entry was counted (else the count stopped, at a limit or an unreadable
    /// directory, and is a lower bound).
    pub complete: bool,
}

/// A job that mounts a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimUser {
    /// Its kind.
    pub kind: JobKind,
    /// Its name.
    pub name: String,
    /// Its state in one word, as `get` says it.
    pub state: String,
}

/// One claim as `volumes` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRow {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its directory.
    pub backing: ClaimBacking,
    /// What the directory holds; `None` while there is no directory.
    pub usage: Option<DiskUsage>,
    /// When it was bound, or its own directory made (when known).
    pub since: Option<Timestamp>,
    /// The jobs of this machine that mount it.
    pub used_by: Vec<ClaimUser>,
}

/// Which columns the table has.
#[derive(Debug, Clone, Copy, Default)]
pub struct Columns {
    /// NAMESPACE first.
    pub with_namespace: bool,
    /// FILES and AGE (`-o wide`).
    pub wide: bool,
}

/// The table of `rows`, ages counted up to `now`; NAMESPACE also when the rows span namespaces.
#[must_use]
pub fn table(rows: &[ClaimRow], columns: Columns, now: Timestamp) -> Table {
    let mut table = Table::new([
        "NAMESPACE",
        "NAME",
        "PATH",
        "SIZE",
        "FILES",
        "SOURCE",
        "AGE",
        "USED BY",
    ]);
    for row in rows {
        table.row([
            row.namespace.clone(),
            row.name.clone(),
            row.backing.path().display().to_string(),
            row.usage
                .map_or_else(|| "-".to_owned(), |usage| counted(size(usage.bytes), usage)),
            row.usage.map_or_else(
                || "-".to_owned(),
                |usage| counted(usage.files.to_string(), usage),
            ),
            row.backing.source().to_owned(),
            row.since
                .map_or_else(|| "-".to_owned(), |since| age(now.duration_since(since))),
            used_by(&row.used_by),
        ]);
    }
    let spans = rows
        .first()
        .is_some_and(|first| rows.iter().any(|row| row.namespace != first.namespace));
    table.keep_columns(&[
        columns.with_namespace || spans,
        true,
        true,
        true,
        columns.wide,
        true,
        columns.wide,
    ]);
    table
}

/// A count, with `+` when it stopped before the end.
fn counted(text: String, usage: DiskUsage) -> String {
    if usage.complete { text } else { text + "+" }
}

/// `tfjob/mnist (Running), pytorchjob/bert (Succeeded)`, or `<none>`.
fn used_by(users: &[ClaimUser]) -> String {
    if users.is_empty() {
        return NONE.to_owned();
    }
    users
        .iter()
        .map(|user| format!("{}/{} ({})", user.kind.singular(), user.name, user.state))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A size in bytes as a binary quantity, short: `512`, `12Ki`, `3.4Mi`, `1Gi` (one decimal
/// below 10, none from 10).
#[must_use]
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let bytes = u128::from(bytes);
    if bytes < 1024 {
        return bytes.to_string();
    }
    let mut divisor: u128 = 1024;
    for (index, unit) in UNITS.iter().enumerate() {
        let tenths = (bytes * 10 + divisor / 2) / divisor;
        if tenths < 100 {
            return match tenths % 10 {
                0 => format!("{}{unit}", tenths / 10),
                decimal => format!("{}.{decimal}{unit}", tenths / 10),
            };
        }
        let whole = (bytes + divisor / 2) / divisor;
        if whole < 1024 || index == UNITS.len() - 1 {
            return format!("{whole}{unit}");
        }
        divisor *= 1024;
    }
    bytes.to_string()
}

/// The document `-o json` and `-o yaml` print: `{"items": [...]}`, one object per claim with
/// every field (sizes in bytes; `null` while there is no directory).
#[must_use]
pub fn document(rows: &[ClaimRow]) -> Value {
    let items: Vec<Value> = rows
        .iter()
        .map(|row| {
            json!({
                "namespace": row.namespace,
                "name": row.name,
                "path": row.backing.path().display().to_string(),
                "source": row.backing.source(),
                "sizeBytes": row.usage.map(|usage| usage.bytes),
                "files": row.usage.map(|usage| usage.files),
                "counted": row.usage.map(|usage| if usage.complete { "all" } else { "partly" }),
                "since": row.since.map(|since| since.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
                "usedBy": row.used_by.iter().map(|user| json!({
                    "kind": user.kind.as_str(),
                    "name": user.name,
                    "state": user.state,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "items": items })
}

#[cfg(test)]
mod tests;
