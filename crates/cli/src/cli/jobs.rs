//! The job commands, on this machine or on a cluster (`--kube`): `submit`, `get`, `describe`,
//! `wait`, `suspend`, `resume` and `delete` (`logs` has its own module).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use trainctl_api::manifest::check_namespace;

use crate::wait_for::WaitFor;

/// Arguments of `get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// The kind (`tfjob`, `tfjobs`, `TFJob`, `pytorchjob`...); every kind when omitted.
    #[arg(value_name = "KIND")]
    pub kind: Option<String>,

    /// A job's name.
    #[arg(value_name = "NAME")]
    pub name: Option<String>,

    /// The namespace [default: `default`; with --kube, the context's namespace, else `default`].
    #[arg(short = 'n', long = "namespace", value_name = "NS", value_parser = namespace_name)]
    pub namespace: Option<String>,

    /// Every namespace.
    #[arg(short = 'A', long = "all-namespaces", conflicts_with = "namespace")]
    pub all_namespaces: bool,

    /// Output format: a table (`wide` adds columns), or the job objects.
    #[arg(short = 'o', long = "output", value_enum)]
    pub output: Option<GetFormat>,
}

/// How `get` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GetFormat {
    /// The table with more columns.
    Wide,
    /// YAML objects.
    Yaml,
    /// JSON objects.
    Json,
}

/// A job named on the command line: `[KIND] NAME`, in a namespace.
#[derive(Debug, Args)]
pub struct JobArgs {
    /// `NAME`, or `KIND NAME` when jobs of several kinds share the name (`tfjob`, `tfjobs`,
    /// `TFJob`...).
    #[arg(value_name = "[KIND] NAME", num_args = 1..=2, required = true)]
    pub target: Vec<String>,

    /// The namespace [default: `default`; with --kube, the context's namespace, else `default`].
    #[arg(short = 'n', long = "namespace", value_name = "NS", value_parser = namespace_name)]
    pub namespace: Option<String>,
}

/// Arguments of `submit`.
#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// The manifest: jobs, plus the ConfigMaps and Secrets their env reads; `-` reads stdin.
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub file: PathBuf,

    /// Namespace of the jobs that name none (default `default`); a job in another namespace is
    /// an error, as with kubectl.
    #[arg(short = 'n', long = "namespace", value_name = "NS", value_parser = namespace_name)]
    pub namespace: Option<String>,
}

/// Arguments of `wait`.
#[derive(Debug, Args)]
pub struct WaitArgs {
    /// The job.
    #[command(flatten)]
    pub job: JobArgs,

    /// What to wait for: `condition=NAME` (the condition holds; `condition=NAME=False`: it is
    /// recorded as not holding), or `delete` (the job is gone).
    #[arg(long = "for", value_name = "CONDITION", required = true)]
    pub wait_for: WaitFor,

    /// How long to wait before giving up (exit 1), as `30s`, `5m`, `2h`; `0s` checks once.
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub timeout: jiff::SignedDuration,
}

/// A namespace given on the command line (`-n`, `--namespace`): a DNS-1123 label, checked before
/// anything is read or contacted (clap names the flag in the error, and exits 2).
pub(super) fn namespace_name(text: &str) -> Result<String, String> {
    check_namespace(text).map(|()| text.to_owned())
}
