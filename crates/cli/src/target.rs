//! A job a command names, in a namespace, and the errors that say it is not there.

use anyhow::Context;
use trainctl_api::JobKind;
use trainctl_api::kind::UnknownKind;

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
