//! `trainctl suspend` and `trainctl resume`: set a job's `spec.runPolicy.suspend` through the
//! local control plane, or in a cluster.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use crate::cli::JobArgs;
use crate::client::Client;
use crate::cluster::Cluster;
use crate::state::state_dir;
use crate::target::{DEFAULT_NAMESPACE, Target};

/// Suspends the job: its replicas stop and its resources are given back.
pub fn suspend(args: &JobArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    set_suspended(args, state, true)
}

/// Resumes the job: it is queued again.
pub fn resume(args: &JobArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    set_suspended(args, state, false)
}

fn set_suspended(args: &JobArgs, state: Option<&Path>, suspend: bool) -> anyhow::Result<ExitCode> {
    let dir = state_dir(state)?;
    let client = Client::find(&dir)?;
    let (command, done) = words(suspend);
    let job = Target::parse(args, DEFAULT_NAMESPACE)?.resolve(&dir, command)?;
    let view = client.set_suspended(job, suspend)?;
    println!("{} {done}", view.resource());
    Ok(ExitCode::SUCCESS)
}

/// Suspends (`true`) or resumes a job of the cluster: a merge patch of
/// `spec.runPolicy.suspend`, which the operator acts on.
pub async fn in_cluster(
    args: &JobArgs,
    cluster: &Cluster,
    suspend: bool,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let (command, done) = words(suspend);
    let target = Target::parse(args, &cluster.namespace)?;
    let job = cluster.job(&target, command).await?;
    let changed = cluster.set_suspended(&job, suspend).await?;
    writeln!(out, "{} {done}", changed.resource())?;
    Ok(ExitCode::SUCCESS)
}

/// The command and what it did: `suspend`, `suspended`.
fn words(suspend: bool) -> (&'static str, &'static str) {
    if suspend {
        ("suspend", "suspended")
    } else {
        ("resume", "resumed")
    }
}
