//! The arguments of `logs`, on this machine or on a cluster (`--kube`).

use clap::Args;

use super::JobArgs;

/// Arguments of `logs`.
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The job.
    #[command(flatten)]
    pub job: JobArgs,

    /// One replica, as `<type>-<index>` (`worker-1`, `chief-0`, `launcher`...).
    #[arg(long, value_name = "REPLICA")]
    pub replica: Option<String>,

    /// Every replica, each line prefixed with its replica (the default without --replica).
    #[arg(long, conflicts_with = "replica")]
    pub all: bool,

    /// Keep printing as the replicas write (a replica not started yet is printed once it
    /// starts), until the job has finished and every log is printed to its end.
    #[arg(short = 'f', long)]
    pub follow: bool,
}
