//! `trainctl delete`: deletes a job through the local control plane, or in a cluster.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use crate::cli::JobArgs;
use crate::client::Client;
use crate::cluster::Cluster;
use crate::state::state_dir;
use crate::target::{DEFAULT_NAMESPACE, Target};

/// Deletes the job once its replicas have stopped; exit 1 when it does not exist.
pub fn run(args: &JobArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    let dir = state_dir(state)?;
    let client = Client::find(&dir)?;
    let job = Target::parse(args, DEFAULT_NAMESPACE)?.resolve(&dir, "delete")?;
    let deleted = client.delete(job)?;
    println!("{} deleted", deleted.resource());
    Ok(ExitCode::SUCCESS)
}

/// Deletes a job of the cluster, as kubectl does by default: in the background (the job goes
/// at once, the garbage collector removes its pods and services after); exit 1 when it does
/// not exist.
pub async fn in_cluster(
    args: &JobArgs,
    cluster: &Cluster,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let target = Target::parse(args, &cluster.namespace)?;
    let job = cluster.job(&target, "delete").await?;
    if !cluster.delete_job(&job).await? {
        return Err(target.not_found_by("trainctl --kube get"));
    }
    writeln!(out, "{} deleted", job.resource())?;
    Ok(ExitCode::SUCCESS)
}
