//! `trainctl delete`: deletes a job through the local control plane (with no server running,
//! straight from the state directory), or in a cluster.

use std::io::Write;
use std::process::ExitCode;

use crate::backend::{Jobs, for_each_target};
use crate::cli::JobsArgs;
use crate::selection::Selection;

/// Deletes each job named; exit 1 when one does not exist (the others are deleted). On this
/// machine, once its replicas have stopped; with no server running for the state directory,
/// the job is removed from it directly, after what it left running is stopped, so `delete` also
/// clears a job that kept a server from starting. On a cluster, as kubectl does by default: in
/// the background (the job goes at once, the garbage collector removes its pods and services
/// after). `delete quota NAME...` deletes quotas, on this machine.
pub async fn run(
    args: &JobsArgs,
    jobs: &impl Jobs,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    if let Some(local) = jobs.local()
        && let Some(names) = super::quotas::asked(&args.words)
    {
        return super::quotas::delete(names, args.namespace.as_deref(), local);
    }
    let selection = match Selection::of(args)? {
        Ok(selection) => selection,
        Err(code) => return Ok(code),
    };
    let namespace = args
        .namespace
        .as_deref()
        .unwrap_or(jobs.default_namespace());
    let targets = selection.targets(namespace, "delete")?;
    for_each_target(&targets, out, async |target, out| {
        writeln!(out, "{}", jobs.delete(target).await?)?;
        Ok(())
    })
    .await
}
