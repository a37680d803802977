//! `trainctl logs`: a job's replica logs, printed once or followed as the replicas write;
//! selected as `kubectl logs` selects (`--tail`, `--since`, `--previous`), with times
//! (`--timestamps`) and a separator line where a replica restarted. The job may be named by one
//! of its pods' names, as `kubectl logs` takes it (`mnist-worker-0`). On this machine they are
//! the replicas' log files ([`local`]), on a cluster the pods' logs ([`cluster`]).

mod cluster;
mod local;
mod pod;
mod tail;

use std::io::Write;
use std::process::ExitCode;

use trainctl_api::TrainingJob;
use trainctl_engine::ReplicaSlot;

use crate::backend::Jobs;
use crate::cli::LogsArgs;
use crate::target::Target;

/// Where a job's logs are read.
pub trait Logs: Jobs {
    /// Prints one replica's log, or every replica's with prefixes, once or (`-f`) until the job
    /// ends; exit 1 when the job or the replica does not exist, or `--previous` finds no
    /// previous run.
    async fn print_logs(
        &self,
        target: &Target<'_>,
        args: &LogsArgs,
        out: &mut impl Write,
    ) -> anyhow::Result<ExitCode>;
}

/// Prints the logs `args` ask for.
pub async fn run(
    args: &LogsArgs,
    jobs: &impl Logs,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let target = Target::parse(&args.job, jobs.default_namespace())?;
    jobs.print_logs(&target, args, out).await
}

/// The replica of the pod `pod` (`replica`), checked against `--replica` and `--all`.
fn replica_of_pod(pod: &str, replica: &str, args: &LogsArgs) -> anyhow::Result<String> {
    if args.all {
        anyhow::bail!(
            "{pod} is one replica's pod ({replica}): --all prints every replica, name the job \
             instead"
        );
    }
    match &args.replica {
        Some(asked) if !asked.eq_ignore_ascii_case(replica) => anyhow::bail!(
            "{pod} is the pod of replica {replica}, not of --replica {asked}: give one or the \
             other"
        ),
        _ => Ok(replica.to_owned()),
    }
}

/// The prefix of a slot's lines: `worker-1 | `, names padded to `width`, as `run` prints them.
fn prefix(slot: &ReplicaSlot, width: usize) -> String {
    format!("{:<width$} | ", slot.to_string())
}

/// The width of the longest slot name.
fn width(slots: &[ReplicaSlot]) -> usize {
    slots
        .iter()
        .map(|slot| slot.to_string().len())
        .max()
        .unwrap_or(0)
}

/// The slot `--replica` names (`None` without it); an error listing the job's slots when it
/// names none of them.
fn wanted(
    job: &TrainingJob,
    slots: &[ReplicaSlot],
    wanted: Option<&str>,
) -> anyhow::Result<Option<ReplicaSlot>> {
    let Some(wanted) = wanted else {
        return Ok(None);
    };
    if let Some(slot) = slots.iter().find(|slot| is_named(slot, wanted)) {
        return Ok(Some(slot.clone()));
    }
    let known: Vec<String> = slots.iter().map(ToString::to_string).collect();
    anyhow::bail!(
        "{}/{} has no replica \"{wanted}\" (it has: {})",
        job.kind().singular(),
        job.name(),
        known.join(", ")
    )
}

/// Whether `wanted` names `slot` (`worker-1`; a lone `launcher` or `chief` means index 0).
fn is_named(slot: &ReplicaSlot, wanted: &str) -> bool {
    slot.to_string().eq_ignore_ascii_case(wanted)
        || (slot.index == 0 && slot.replica_type.as_str().eq_ignore_ascii_case(wanted))
}
