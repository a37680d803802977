//! `events`: what happened to the jobs run here, as `kubectl events` lists a cluster's.

use clap::{Args, ValueEnum};

use super::replicas::{JobName, job_name};
use super::values::namespace_name;

/// Arguments of `events`.
#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Only this job's events: `NAME`, or `KIND/NAME` (`tfjob/mnist`) when jobs of several kinds
    /// share the name.
    #[arg(value_name = "JOB", value_parser = job_name, conflicts_with = "for_job")]
    pub job: Option<JobName>,

    /// Only the events of this job, as `KIND/NAME` (kubectl's `--for`); the same as JOB.
    #[arg(long = "for", value_name = "KIND/NAME", value_parser = job_name)]
    pub for_job: Option<JobName>,

    /// The namespace [default: `default`].
    #[arg(short = 'n', long = "namespace", value_name = "NS", value_parser = namespace_name)]
    pub namespace: Option<String>,

    /// Every namespace.
    #[arg(short = 'A', long = "all-namespaces", conflicts_with = "namespace")]
    pub all_namespaces: bool,

    /// Only events of these types (comma-separated).
    #[arg(
        long,
        value_name = "TYPES",
        value_enum,
        value_delimiter = ',',
        ignore_case = true
    )]
    pub types: Vec<EventType>,

    /// After the events so far, print new ones as they happen, until interrupted (Ctrl-C).
    #[arg(short = 'w', long)]
    pub watch: bool,
}

impl EventsArgs {
    /// The job named, by JOB or `--for`.
    pub fn named_job(&self) -> Option<&JobName> {
        self.job.as_ref().or(self.for_job.as_ref())
    }
}

/// The type of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EventType {
    /// What is expected to happen.
    #[value(name = "Normal")]
    Normal,
    /// What may need a look.
    #[value(name = "Warning")]
    Warning,
}

impl EventType {
    /// As events spell it (`Normal`).
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}
