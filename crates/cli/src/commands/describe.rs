//! `trainctl describe`: one job in detail, as `kubectl describe` shows an object: identity and
//! times, the spec in short, the replicas' processes, the conditions and the events. The text is
//! [`Description`]'s, the same on a cluster.

use std::io::Write;
use std::process::ExitCode;

use futures_util::future::try_join;
use jiff::Timestamp;
use trainctl_local::store::Store;

use crate::cli::JobArgs;
use crate::cluster::Cluster;
use crate::state::state_dir;
use crate::target::{DEFAULT_NAMESPACE, Target};
use crate::view::description::{Description, Placement};

/// Prints the job; exit 1 when it does not exist.
pub fn run(args: &JobArgs, state: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    let target = Target::parse(args, DEFAULT_NAMESPACE)?;
    let store = Store::open(&state_dir(state)?)?;
    let record = target.get(&store, "describe")?;
    let replicas = store.replicas(&record.uid)?;
    let events = store.events(&record.uid)?;
    let description = Description::local(record.state(), record, &replicas, &events);
    print!("{}", description.render(Timestamp::now()));
    Ok(ExitCode::SUCCESS)
}

/// Prints a job of the cluster; exit 1 when it does not exist.
pub async fn in_cluster(
    args: &JobArgs,
    cluster: &Cluster,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let target = Target::parse(args, &cluster.namespace)?;
    let found = cluster.job(&target, "describe").await?;
    let (pods, events) = try_join(cluster.pods_of(&found), cluster.events_of(&found)).await?;
    let description = Description {
        state: found.state().to_owned(),
        uid: found.uid().to_owned(),
        created: found.created(),
        replicas: crate::cluster::replica_rows(&found.job, &pods),
        placement: Placement::Node,
        events,
        job: found.job,
    };
    out.write_all(description.render(Timestamp::now()).as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
