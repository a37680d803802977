//! The job commands, on this machine or on a cluster (`--kube`): `submit`, `get`, `describe`,
//! `wait`, `suspend`, `resume` and `delete` (`logs` has its own module).

use std::path::PathBuf;

use clap::Args;
use trainctl_local::claims::VolumeBinding;

use super::values::{namespace_name, volume_binding};
use crate::wait_for::WaitFor;
use trainctl_api::selector::Selector;

/// Arguments of `get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// What to list: every job when omitted; `KIND` (`tfjob`, `tfjobs`, `TFJob`...) for the jobs
    /// of a kind; `[KIND] NAME...` or `KIND/NAME...` for the jobs named.
    #[arg(value_name = "[KIND] [NAME]...")]
    pub words: Vec<String>,

    /// The jobs of a manifest (their kinds, names and namespaces); may be given more than once.
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "FILE",
        conflicts_with = "words"
    )]
    pub files: Vec<PathBuf>,

    /// The namespace [default: `default`; with --kube, the context's namespace, else `default`].
    #[arg(short = 'n', long = "namespace", value_name = "NS", value_parser = namespace_name)]
    pub namespace: Option<String>,

    /// Every namespace.
    #[arg(short = 'A', long = "all-namespaces", conflicts_with = "namespace")]
    pub all_namespaces: bool,

    /// Output format: `wide` (the table with more columns), `yaml`, `json` (the job objects),
    /// `name` (`tfjob.kubeflow.org/NAME`), `jsonpath=TEMPLATE` (kubectl's JSONPath template, as
    /// `{.items[*].metadata.name}`) or `custom-columns=HEADER:PATH,...`.
    #[arg(short = 'o', long = "output", value_name = "FORMAT", value_parser = GetFormat::parse)]
    pub output: Option<GetFormat>,

    /// Only the jobs whose labels match: `key=value`, `key!=value`, `key`, `!key`,
    /// `key in (a,b)`, several separated by commas (all must hold).
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR", value_parser = Selector::parse_arg)]
    pub selector: Option<Selector>,

    /// Adds a LABELS column to the table.
    #[arg(long)]
    pub show_labels: bool,

    /// Sorts by the value a JSONPath expression gives each job (`.metadata.creationTimestamp`,
    /// `{.metadata.name}`): numbers by value, text in order.
    #[arg(long, value_name = "PATH")]
    pub sort_by: Option<String>,

    /// After the list, print each job again as it changes (its row, or its object), until
    /// interrupted.
    #[arg(short = 'w', long)]
    pub watch: bool,
}

/// How `get` prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GetFormat {
    /// The table with more columns.
    Wide,
    /// YAML objects.
    Yaml,
    /// JSON objects.
    Json,
    /// `KIND.GROUP/NAME` a line.
    Name,
    /// A kubectl JSONPath template, applied to the job (one named) or to the `List` of jobs.
    JsonPath(String),
    /// A table of the columns given as `HEADER:PATH` pairs.
    CustomColumns(String),
}

impl GetFormat {
    /// Reads `-o`'s value, as kubectl spells the formats.
    fn parse(text: &str) -> Result<GetFormat, String> {
        if let Some(template) = text.strip_prefix("jsonpath=") {
            return Ok(GetFormat::JsonPath(template.to_owned()));
        }
        if let Some(columns) = text.strip_prefix("custom-columns=") {
            return Ok(GetFormat::CustomColumns(columns.to_owned()));
        }
        match text {
            "wide" => Ok(GetFormat::Wide),
            "yaml" => Ok(GetFormat::Yaml),
            "json" => Ok(GetFormat::Json),
            "name" => Ok(GetFormat::Name),
            _ => Err(
                "expected one of wide, yaml, json, name, jsonpath=TEMPLATE, \
                 custom-columns=HEADER:PATH,..."
                    .to_owned(),
            ),
        }
    }
}

/// The jobs a command acts on: named on the command line, or the jobs of manifests.
#[derive(Debug, Args)]
pub struct JobsArgs {
    /// `NAME...`, `KIND NAME...` (`tfjob`, `tfjobs`, `TFJob`...: needed only when jobs of
    /// several kinds share a name) or `KIND/NAME...`, the form `get -o name` prints.
    #[arg(value_name = "[KIND] NAME", required_unless_present = "files")]
    pub words: Vec<String>,

    /// The jobs of a manifest (their kinds, names and namespaces); may be given more than once.
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "FILE",
        conflicts_with = "words"
    )]
    pub files: Vec<PathBuf>,

    /// The namespace [default: `default`; with --kube, the context's namespace, else `default`].
    #[arg(short = 'n', long = "namespace", value_name = "NS", value_parser = namespace_name)]
    pub namespace: Option<String>,
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

    /// Bind the claim CLAIM (a volume's `persistentVolumeClaim.claimName`) to the existing
    /// directory PATH of this machine before the jobs are queued, such as your dataset
    /// (`--volume training-data-pvc=/srv/datasets/mnist`): in -n's namespace, else in each
    /// job's; `NAMESPACE/CLAIM=PATH` for another. Repeatable. Refused while a job that has not
    /// finished mounts the claim from another directory. Not with --kube.
    #[arg(long = "volume", value_name = "CLAIM=PATH", value_parser = volume_binding)]
    pub volumes: Vec<VolumeBinding>,

    /// Wait until every job submitted has finished, saying how each ended (and why a failed
    /// one failed); exit 0 when all succeeded, 1 when one failed. Ctrl-C stops waiting, not
    /// the jobs.
    #[arg(long)]
    pub wait: bool,

    /// Run `sh -c CMD` when each job of the manifest finishes (succeeded or failed by itself),
    /// with the notification (JSON: the job, its state, why it failed, its last log lines) on
    /// its standard input and `TRAINCTL_JOB_NAME`, `_NAMESPACE`, `_KIND` and `_STATE` set; run
    /// by the server, as its own --on-finish, beside it. Not with --kube.
    #[arg(long, value_name = "CMD")]
    pub on_finish: Option<String>,
}

/// Arguments of `wait`.
#[derive(Debug, Args)]
pub struct WaitArgs {
    /// The jobs: each must meet the condition.
    #[command(flatten)]
    pub jobs: JobsArgs,

    /// What to wait for: `condition=NAME` (the condition holds; `condition=NAME=False`: it is
    /// recorded as not holding), or `delete` (the job is gone).
    #[arg(long = "for", value_name = "CONDITION", required = true)]
    pub wait_for: WaitFor,

    /// How long to wait before giving up (exit 1), as `30s`, `5m`, `2h`; `0s` checks once.
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub timeout: jiff::SignedDuration,
}
