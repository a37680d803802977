//! The arguments of `logs`, on this machine or on a cluster (`--kube`).

use clap::Args;
use jiff::SignedDuration;

use super::JobArgs;

/// Arguments of `logs`.
#[derive(Debug, Args)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "each is a switch of `kubectl logs`, independent of the others"
)]
pub struct LogsArgs {
    /// The job; or one of its pods' names, as `kubectl logs` takes them (`mnist-worker-0`: the
    /// job `mnist`, replica `worker-0`).
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

    /// Only the last N lines of each replica's log (then, with -f, what follows); -1: all.
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        value_parser = clap::value_parser!(i64).range(-1..)
    )]
    pub tail: Option<i64>,

    /// Only the lines written within this long before now, as `30s`, `5m`, `2h` (lines whose
    /// time is not known are left out).
    #[arg(long, value_name = "DURATION", value_parser = positive_duration)]
    pub since: Option<SignedDuration>,

    /// Each line after the time it was written, in RFC 3339 with nanoseconds
    /// (`2026-11-26T10:00:00.123456789Z line`); a line whose time is not known has none.
    #[arg(long)]
    pub timestamps: bool,

    /// The log of each replica's run before its last restart, not followed (it has ended); an
    /// error when the replica asked for has not restarted, or no replica has.
    #[arg(short = 'p', long)]
    pub previous: bool,
}

impl LogsArgs {
    /// How many lines `--tail` keeps; `None` for all.
    #[must_use]
    pub fn tail_lines(&self) -> Option<usize> {
        self.tail.and_then(|lines| usize::try_from(lines).ok())
    }
}

/// A duration that is more than zero (`--since`).
fn positive_duration(text: &str) -> Result<SignedDuration, String> {
    let duration: SignedDuration = text
        .parse()
        .map_err(|error| format!("not a duration (as `30s`, `5m`, `2h`): {error}"))?;
    if duration.is_positive() {
        Ok(duration)
    } else {
        Err("must be more than zero".to_owned())
    }
}
