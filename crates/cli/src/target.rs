//! The job a command names as `[KIND] NAME` in a namespace, and finding it in the state database.

use std::path::Path;

use anyhow::Context;
use trainctl_api::JobKind;
use trainctl_local::store::{JobRecord, Store};

use crate::cli::JobArgs;
use crate::client::JobPath;

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
    /// Reads `[KIND] NAME` and `-n`, in `default_namespace` without `-n`.
    pub fn parse(args: &'a JobArgs, default_namespace: &'a str) -> anyhow::Result<Target<'a>> {
        let (kind, name) = match args.target.as_slice() {
            [name] => (None, name.as_str()),
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

    /// The job named; an error when there is none, or several.
    pub fn get(&self, store: &Store, command: &str) -> anyhow::Result<JobRecord> {
        self.find(store, command)?.ok_or_else(|| self.not_found())
    }

    /// The job's address on the server; its kind, when not given, is the one of the job of
    /// that name in the state database of `state_dir`.
    pub fn resolve(&self, state_dir: &Path, command: &str) -> anyhow::Result<JobPath<'a>> {
        let kind = match self.kind {
            Some(kind) => kind,
            None => self.get(&Store::open(state_dir)?, command)?.kind,
        };
        Ok(JobPath {
            namespace: self.namespace,
            kind,
            name: self.name,
        })
    }

    /// The error for a job that does not exist.
    pub fn not_found(&self) -> anyhow::Error {
        self.not_found_by("trainctl get")
    }

    /// The error for a job that does not exist, pointing at `get`, the command that lists jobs.
    pub fn not_found_by(&self, get: &str) -> anyhow::Error {
        anyhow::anyhow!(
            "{} \"{}\" not found in namespace \"{}\" (see `{get}`)",
            self.kind.map_or("job", JobKind::singular),
            self.name,
            self.namespace
        )
    }
}
