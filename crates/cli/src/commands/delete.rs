//! `trainctl delete`: deletes a job through the local control plane, or in a cluster; with no
//! server running, straight from the state directory.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use trainctl_local::runner::remove_unowned_job;
use trainctl_local::store::Store;

use super::{for_each_target, for_each_target_in_cluster, selection_of};
use crate::cli::JobsArgs;
use crate::client::{Client, ClientError};
use crate::cluster::Cluster;
use crate::state::state_dir;
use crate::target::{DEFAULT_NAMESPACE, Target};

/// Deletes each job named once its replicas have stopped; exit 1 when one does not exist (the
/// others are deleted). With no server running for the state directory, the job is removed from
/// it directly, after what it left running is stopped: `delete` then also clears a job that kept
/// a server from starting.
pub fn run(args: &JobsArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    if let Some(names) = super::quotas::asked(&args.words) {
        return super::quotas::delete(names, args.namespace.as_deref(), state);
    }
    let selection = match selection_of(args)? {
        Ok(selection) => selection,
        Err(code) => return Ok(code),
    };
    let targets = selection.targets(
        args.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE),
        "delete",
    )?;
    let dir = state_dir(state)?;
    let client = match Client::find(&dir) {
        Ok(client) => Some(client),
        Err(ClientError::NoServer { .. }) => None,
        Err(error) => return Err(error.into()),
    };
    for_each_target(&targets, |target| {
        let Some(client) = &client else {
            return without_server(&dir, target);
        };
        match client.delete(target.resolve(&dir, "delete")?) {
            Ok(deleted) => {
                println!("{} deleted", deleted.resource());
                Ok(())
            }
            // `server.json` names a server that is gone (killed).
            Err(ClientError::NoServer { .. }) => without_server(&dir, target),
            Err(error) => Err(error.into()),
        }
    })
}

/// Removes the job from the state directory `dir`, no server running.
fn without_server(dir: &Path, target: &Target<'_>) -> anyhow::Result<()> {
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
    Ok(())
}

/// Deletes each job of the cluster named, as kubectl does by default: in the background (the
/// job goes at once, the garbage collector removes its pods and services after); exit 1 when
/// one does not exist (the others are deleted).
pub async fn in_cluster(
    args: &JobsArgs,
    cluster: &Cluster,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let selection = match selection_of(args)? {
        Ok(selection) => selection,
        Err(code) => return Ok(code),
    };
    let namespace = args.namespace.as_deref().unwrap_or(&cluster.namespace);
    let targets = selection.targets(namespace, "delete")?;
    for_each_target_in_cluster(&targets, out, async |target, out| {
        let resource = delete_in_cluster(target, cluster).await?;
        writeln!(out, "{resource} deleted")?;
        Ok(())
    })
    .await
}

/// Deletes the cluster's job `target`; its `KIND.GROUP/NAME`.
async fn delete_in_cluster(target: &Target<'_>, cluster: &Cluster) -> anyhow::Result<String> {
    let job = cluster.job(target, "delete").await?;
    if !cluster.delete_job(&job).await? {
        return Err(target.not_found_by("trainctl --kube get"));
    }
    Ok(job.resource())
}
