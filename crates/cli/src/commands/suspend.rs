//! `trainctl suspend` and `trainctl resume`: set a job's `spec.runPolicy.suspend` through the
//! local control plane, or in a cluster.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use super::{for_each_target, for_each_target_in_cluster, selection_of};
use crate::cli::JobsArgs;
use crate::client::Client;
use crate::cluster::Cluster;
use crate::state::state_dir;
use crate::target::DEFAULT_NAMESPACE;

/// Suspends the jobs named: their replicas stop and their resources are given back.
pub fn suspend(args: &JobsArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    set_suspended(args, state, true)
}

/// Resumes the jobs named: they are queued again.
pub fn resume(args: &JobsArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    set_suspended(args, state, false)
}

/// Suspends (`true`) or resumes each job named; exit 1 when one does not exist (the others are
/// changed).
fn set_suspended(args: &JobsArgs, state: Option<&Path>, suspend: bool) -> anyhow::Result<ExitCode> {
    let (command, done) = words(suspend);
    let selection = match selection_of(args)? {
        Ok(selection) => selection,
        Err(code) => return Ok(code),
    };
    let targets = selection.targets(
        args.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE),
        command,
    )?;
    let dir = state_dir(state)?;
    let client = Client::find(&dir)?;
    for_each_target(&targets, |target| {
        let view = client.set_suspended(target.resolve(&dir, command)?, suspend)?;
        println!("{} {done}", view.resource());
        Ok(())
    })
}

/// Suspends (`true`) or resumes each job of the cluster named: a merge patch of
/// `spec.runPolicy.suspend`, which the operator acts on.
pub async fn in_cluster(
    args: &JobsArgs,
    cluster: &Cluster,
    suspend: bool,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let (command, done) = words(suspend);
    let selection = match selection_of(args)? {
        Ok(selection) => selection,
        Err(code) => return Ok(code),
    };
    let namespace = args.namespace.as_deref().unwrap_or(&cluster.namespace);
    let targets = selection.targets(namespace, command)?;
    for_each_target_in_cluster(&targets, out, async |target, out| {
        let job = cluster.job(target, command).await?;
        let changed = cluster.set_suspended(&job, suspend).await?;
        writeln!(out, "{} {done}", changed.resource())?;
        Ok(())
    })
    .await
}

/// The command and what it did: `suspend`, `suspended`.
fn words(suspend: bool) -> (&'static str, &'static str) {
    if suspend {
        ("suspend", "suspended")
    } else {
        ("resume", "resumed")
    }
}
