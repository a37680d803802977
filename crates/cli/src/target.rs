//! A job a command names, in a namespace, and finding it in the state database.

use anyhow::Context;
use trainctl_api::JobKind;
use trainctl_api::kind::UnknownKind;
use trainctl_local::store::{JobRecord, Store};

use crate::cli::JobArgs;

/// The namespace of a command that names none, on this machine.
pub const DEFAULT_NAMESPACE: &str = "default";

/// A job named on the command line.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The kind, when given.
    pub kind: Option<JobKind>,
    /// The job's name.
    pub name: &'a str,
    /// The namespace.
    pub namespace: &'a str,
}

impl<'a> Target<'a> {
    /// Reads `[KIND] NAME` or `KIND/NAME`, and `-n`, in `default_namespace` without `-n`.
    pub fn parse(args: &'a JobArgs, default_namespace: &'a str) -> anyhow::Result<Target<'a>> {
        let (kind, name) = match args.target.as_slice() {
            [word] => match word.split_once('/') {
                Some((kind, name)) if !name.is_empty() && !name.contains('/') => (
                    Some(
                        kind.parse::<JobKind>()
                            .with_context(|| format!("`{word}`"))?,
                    ),
                    name,
                ),
                Some(_) => anyhow::bail!("`{word}`: expected KIND/NAME, as `tfjob/mnist`"),
                None => (None, word.as_str()),
            },
            [kind, name] => (
                Some(kind.parse::<JobKind>().context("KIND")?),
                name.as_str(),
            ),
            _ => unreachable!("clap takes one or two values"),
        };
        Ok(Target {
            kind,
            name,
            namespace: args.namespace.as_deref().unwrap_or(default_namespace),
        })
    }

    /// The job named, or `None` when there is none; an error when several kinds have a job of
    /// that name and no kind was given. `command` is the subcommand, for the hint.
    pub fn find(&self, store: &Store, command: &str) -> anyhow::Result<Option<JobRecord>> {
        let mut records = store.job(self.namespace, self.kind, self.name)?;
        match records.len() {
            0 => Ok(None),
            1 => Ok(Some(records.remove(0))),
            _ => {
                let kinds: Vec<JobKind> = records.iter().map(|r| r.kind).collect();
                Err(self.ambiguous(&kinds, command))
            }
        }
    }

    /// The error for a name that jobs of several `kinds` have. `command` is the subcommand (with
    /// its global flags), for the hint.
    pub fn ambiguous(&self, kinds: &[JobKind], command: &str) -> anyhow::Error {
        let kinds: Vec<&str> = kinds.iter().map(|kind| kind.singular()).collect();
        anyhow::anyhow!(
            "several jobs are named \"{}\" ({}); say which: `trainctl {command} KIND {}`",
            self.name,
            kinds.join(", "),
            self.name
        )
    }

    /// The job named; an error when there is none (saying in which other namespaces a job of
    /// that name is), or several.
    pub fn get(&self, store: &Store, command: &str) -> anyhow::Result<JobRecord> {
        match self.find(store, command)? {
            Some(record) => Ok(record),
            None => Err(self.not_found_in(store, Some("trainctl get"))?),
        }
    }

    /// The error for a job that does not exist in its namespace, with the namespaces of the
    /// jobs of that name (and kind, when given) in the store; `see` is the command that lists
    /// jobs, to point at (none from that command itself).
    pub fn not_found_in(&self, store: &Store, see: Option<&str>) -> anyhow::Result<anyhow::Error> {
        let elsewhere: Vec<String> = store
            .jobs(None, self.kind)?
            .into_iter()
            .filter(|record| record.name == self.name)
            .map(|record| record.namespace)
            .collect();
        Ok(self.not_found_elsewhere(see, &elsewhere))
    }

    /// The error for a job that does not exist.
    pub fn not_found(&self) -> anyhow::Error {
        self.not_found_by("trainctl get")
    }

    /// The error for a job that does not exist, pointing at `get`, the command that lists jobs.
    pub fn not_found_by(&self, get: &str) -> anyhow::Error {
        self.not_found_elsewhere(Some(get), &[])
    }

    /// The error for a job that does not exist in its namespace, when jobs of that name are in
    /// the namespaces `elsewhere`: it says where, as a user would look next. A name that is a
    /// mistyped kind (`tfjbs`) gets the kind's spelling.
    pub fn not_found_elsewhere(&self, see: Option<&str>, elsewhere: &[String]) -> anyhow::Error {
        let what = self.kind.map_or("job", JobKind::singular);
        let (name, namespace) = (self.name, self.namespace);
        let hint = match elsewhere {
            [] => match UnknownKind(name.to_owned()).closest_spelling() {
                Some(kind) if self.kind.is_none() => {
                    format!("; to list a kind: `trainctl get {kind}`")
                }
                _ => see.map(|get| format!(" (see `{get}`)")).unwrap_or_default(),
            },
            [other] => format!(" (found in namespace {other}: add -n {other}, or -A)"),
            several => format!(
                " (found in namespaces {}: add -n NAMESPACE, or -A)",
                several.join(", ")
            ),
        };
        anyhow::anyhow!("{what} \"{name}\" not found in namespace \"{namespace}\"{hint}")
    }
}
