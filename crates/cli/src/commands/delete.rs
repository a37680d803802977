//! `trainctl delete`: deletes a job through the local control plane, or in a cluster; with no
//! server running, straight from the state directory.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use trainctl_local::runner::remove_unowned_job;
use trainctl_local::store::Store;

use crate::cli::JobArgs;
use crate::client::{Client, ClientError};
use crate::cluster::Cluster;
use crate::state::state_dir;
use crate::target::{DEFAULT_NAMESPACE, Target};

/// Deletes the job once its replicas have stopped; exit 1 when it does not exist. With no server
/// running for the state directory, the job is removed from it directly, after what it left
/// running is stopped: `delete` then also clears a job that kept a server from starting.
pub fn run(args: &JobArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    let dir = state_dir(state)?;
    let target = Target::parse(args, DEFAULT_NAMESPACE)?;
    let client = match Client::find(&dir) {
        Ok(client) => client,
        Err(ClientError::NoServer { .. }) => return without_server(&dir, &target),
        Err(error) => return Err(error.into()),
    };
    match client.delete(target.resolve(&dir, "delete")?) {
        Ok(deleted) => {
            println!("{} deleted", deleted.resource());
            Ok(ExitCode::SUCCESS)
        }
        // `server.json` names a server that is gone (killed).
        Err(ClientError::NoServer { .. }) => without_server(&dir, &target),
        Err(error) => Err(error.into()),
    }
}

/// Removes the job from the state directory `dir`, no server running.
fn without_server(dir: &Path, target: &Target<'_>) -> anyhow::Result<ExitCode> {
    let mut store = Store::open(dir)?;
    let record = target.get(&store, "delete")?;
    let stopped = remove_unowned_job(&mut store, &record)?;
    let processes = match stopped {
        0 => String::new(),
        1 => ", and its replica that still ran stopped".to_owned(),
        n => format!(", and its {n} replicas that still ran stopped"),
    };
    println!(
        "{}.{}/{} deleted (no server runs for {}: removed from the state directory{processes})",
        record.kind.singular(),
        trainctl_api::GROUP,
        record.name,
        dir.display()
    );
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
