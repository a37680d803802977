//! What the job commands print, the same whether a job runs on this machine or on a cluster:
//! `get`'s table of jobs, `describe`'s text, and the prefixed lines of `logs`. The commands fill
//! these from the state database here, and from what `cluster` reads in cluster mode. Beside
//! them, what `volumes` prints of this machine's claims.

pub mod description;
pub mod events;
pub mod jobs;
pub mod prefixed;
pub mod progress;
pub mod replicas;
pub mod top;
pub mod volumes;

use std::fmt::Write as _;

use crate::table::Table;

/// What a section holds when it is empty.
const NONE: &str = "<none>";

/// A titled table, indented, or `Title:  <none>` when it has no rows (`describe`, `top node`).
fn section(out: &mut String, title: &str, table: Option<Table>) {
    match table {
        None => {
            let _ = writeln!(out, "{title}  {NONE}");
        }
        Some(table) => {
            let _ = writeln!(out, "{title}");
            for line in table.render().lines() {
                let _ = writeln!(out, "  {line}");
            }
        }
    }
}

/// What a field holds when the spec does not set it.
pub const UNSET: &str = "<unset>";

/// `Label:   value` lines, values aligned; a value of several lines keeps the alignment.
pub fn fields(out: &mut String, indent: usize, fields: &[(&str, String)]) {
    let width = fields
        .iter()
        .map(|(label, _)| label.len())
        .max()
        .unwrap_or(0)
        + 2;
    for (label, value) in fields {
        let mut lines = value.lines();
        let first = lines.next().unwrap_or_default();
        let _ = writeln!(out, "{:indent$}{label:<width$}{first}", "");
        for line in lines {
            let _ = writeln!(out, "{:indent$}{:width$}{line}", "", "");
        }
    }
}
