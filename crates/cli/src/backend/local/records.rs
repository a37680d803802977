//! This machine's records of the jobs a command names.

use trainctl_api::JobKind;
use trainctl_local::store::{JobRecord, Store};

use crate::target::Target;

/// The job `target` names, or `None` when there is none; an error when several kinds have a
/// job of that name and no kind was given. `command` is the subcommand, for the hint.
pub fn find(
    store: &Store,
    target: &Target<'_>,
    command: &str,
) -> anyhow::Result<Option<JobRecord>> {
    let mut records = store.job(target.namespace, target.kind, target.name)?;
    match records.len() {
        0 => Ok(None),
        1 => Ok(Some(records.remove(0))),
        _ => {
            let kinds: Vec<JobKind> = records.iter().map(|r| r.kind).collect();
            Err(target.ambiguous(&kinds, command))
        }
    }
}

/// The job `target` names; an error when there is none (saying in which other namespaces a job
/// of that name is), or several.
pub fn get(store: &Store, target: &Target<'_>, command: &str) -> anyhow::Result<JobRecord> {
    match find(store, target, command)? {
        Some(record) => Ok(record),
        None => Err(not_found(store, target, Some("trainctl get"))?),
    }
}

/// The error for a job `target` names that does not exist in its namespace, with the
/// namespaces of the jobs of that name (and kind, when given) in the store; `see` is the
/// command that lists jobs, to point at (none from that command itself).
pub fn not_found(
    store: &Store,
    target: &Target<'_>,
    see: Option<&str>,
) -> anyhow::Result<anyhow::Error> {
    let elsewhere: Vec<String> = store
        .jobs(None, target.kind)?
        .into_iter()
        .filter(|record| record.name == target.name)
        .map(|record| record.namespace)
        .collect();
    Ok(target.not_found_elsewhere(see, &elsewhere))
}
