//! `trainctl describe`: one job in detail, as `kubectl describe` shows an object: identity and
//! times, the spec in short, the replicas' processes, the conditions and the events. The text is
//! [`Description`]'s, the same on a cluster.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use futures_util::future::try_join;
use jiff::Timestamp;
use trainctl_local::store::Store;

use super::{for_each_target, for_each_target_in_cluster, selection_of};
use crate::cli::JobsArgs;
use crate::cluster::Cluster;
use crate::state::state_dir;
use crate::target::{DEFAULT_NAMESPACE, Target};
use crate::view::description::{Description, Placement};

/// Prints each job named, a blank line between two; exit 1 when one does not exist (the others
/// are printed).
pub fn run(args: &JobsArgs, state: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    if let Some(names) = super::quotas::asked(&args.words) {
        return super::quotas::describe(names, args.namespace.as_deref(), state);
    }
    let selection = match selection_of(args)? {
        Ok(selection) => selection,
        Err(code) => return Ok(code),
    };
    let namespace = args.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
    let targets = selection.targets(namespace, "describe")?;
    let store = Store::open(&state_dir(state)?)?;
    let mut stdout = std::io::stdout().lock();
    let mut separator = "";
    for_each_target(&targets, |target| {
        let record = target.get(&store, "describe")?;
        let replicas = store.replicas(&record.uid)?;
        let events = store.events(&record.uid)?;
        let claims = super::volumes::backings(&store, &record.job)?;
        let progress = super::progress::Progresses::default().of(&store, &record)?;
        let mut description =
            Description::local(record.state(), record, &replicas, &events, claims);
        description.progress = progress;
        write!(
            stdout,
            "{separator}{}",
            description.render(Timestamp::now())
        )?;
        separator = "\n\n";
        Ok(())
    })
}

/// Prints each job of the cluster named, as [`run`] does those of this machine.
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
    let targets = selection.targets(namespace, "describe")?;
    let mut separator = "";
    for_each_target_in_cluster(&targets, out, async |target, out| {
        let text = describe_in_cluster(target, cluster).await?;
        write!(out, "{separator}{text}")?;
        separator = "\n\n";
        Ok(())
    })
    .await
}

/// The description of the cluster's job `target`.
async fn describe_in_cluster(target: &Target<'_>, cluster: &Cluster) -> anyhow::Result<String> {
    let found = cluster.job(target, "describe").await?;
    let (pods, events) = try_join(cluster.pods_of(&found), cluster.events_of(&found)).await?;
    let held_by = cluster
        .queue_reasons(std::slice::from_ref(&found), Some(found.namespace()))
        .await
        .remove(found.uid());
    let description = Description {
        state: found.state().to_owned(),
        uid: found.uid().to_owned(),
        created: found.created(),
        replicas: crate::cluster::replica_rows(&found.job, &pods),
        placement: Placement::Node,
        events,
        claims: BTreeMap::new(),
        progress: None,
        held_by,
        job: found.job,
    };
    Ok(description.render(Timestamp::now()))
}
