//! `get replicas`: the replicas of the jobs run here, as `kubectl get pods` shows pods; and a job
//! named as `NAME` or `KIND/NAME`, which `events` and `top job` take too.

use clap::{Args, ValueEnum};
use trainctl_api::JobKind;

use super::values::namespace_name;
use trainctl_api::selector::Selector;

/// Arguments of `get replicas`.
#[derive(Debug, Clone, Args)]
pub struct ReplicasArgs {
    /// Only this job's replicas: `NAME`, or `KIND/NAME` (`tfjob/mnist`) when jobs of several
    /// kinds share the name.
    #[arg(value_name = "JOB", value_parser = job_name)]
    pub job: Option<JobName>,

    /// The namespace [default: `default`].
    #[arg(short = 'n', long = "namespace", value_name = "NS", value_parser = namespace_name)]
    pub namespace: Option<String>,

    /// Every namespace.
    #[arg(short = 'A', long = "all-namespaces", conflicts_with = "namespace")]
    pub all_namespaces: bool,

    /// Only the replicas whose pod labels match: `key=value`, `key==value`, `key!=value`,
    /// `key`, `!key`, `key in (a,b)`, `key notin (a,b)`, comma-separated, all of which must
    /// hold (`training.kubeflow.org/replica-type=worker`).
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR", value_parser = Selector::parse_arg)]
    pub selector: Option<Selector>,

    /// Output format: `wide` adds PID, GPUS and JOB.
    #[arg(short = 'o', long = "output", value_enum)]
    pub output: Option<ReplicasFormat>,
}

/// How `get replicas` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReplicasFormat {
    /// The table with more columns.
    Wide,
}

/// A job named on the command line as `NAME` or `KIND/NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobName {
    /// The kind, when given.
    pub kind: Option<JobKind>,
    /// The job's name.
    pub name: String,
}

/// Reads `NAME` or `KIND/NAME` (any kubectl spelling of the kind: `tfjob`, `tfjobs`, `TFJob`).
pub fn job_name(text: &str) -> Result<JobName, String> {
    let (kind, name) = match text.split_once('/') {
        Some((kind, name)) => (
            Some(kind.parse::<JobKind>().map_err(|error| error.to_string())?),
            name,
        ),
        None => (None, text),
    };
    if name.is_empty() || name.contains('/') {
        return Err(format!(
            "`{text}`: expected a job as NAME or KIND/NAME (`mnist`, `tfjob/mnist`)"
        ));
    }
    Ok(JobName {
        kind,
        name: name.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_is_a_name_or_a_kind_and_a_name() {
        assert_eq!(
            job_name("mnist"),
            Ok(JobName {
                kind: None,
                name: "mnist".to_owned()
            })
        );
        assert_eq!(
            job_name("pytorchjobs/mnist"),
            Ok(JobName {
                kind: Some(JobKind::PyTorchJob),
                name: "mnist".to_owned()
            })
        );
        for bad in ["", "tfjob/", "tfjob/a/b"] {
            assert_eq!(
                job_name(bad),
                Err(format!(
                    "`{bad}`: expected a job as NAME or KIND/NAME (`mnist`, `tfjob/mnist`)"
                ))
            );
        }
        assert!(job_name("pods/mnist").is_err());
    }
}
