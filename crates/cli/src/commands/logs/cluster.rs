//! `logs --kube`: the job's pods' logs, through the API server.

use std::io::Write;
use std::process::ExitCode;

use trainctl_engine::ReplicaSlot;

use super::{Logs, replica_of_pod, wanted, width};
use crate::backend::Cluster;
use crate::cli::LogsArgs;
use crate::cluster::{LogRequest, slot_of};
use crate::target::Target;

impl Logs for Cluster {
    /// Prints the logs of the job's pods' framework containers, through the API server.
    async fn print_logs(
        &self,
        target: &Target<'_>,
        args: &LogsArgs,
        out: &mut impl Write,
    ) -> anyhow::Result<ExitCode> {
        print(self, target, args, out).await
    }
}

/// [`Cluster`]'s [`Logs::print_logs`].
async fn print(
    cluster: &Cluster,
    target: &Target<'_>,
    args: &LogsArgs,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let mut jobs = cluster.find_jobs(target).await?;
    let (found, replica) = match jobs.len() {
        1 => (jobs.remove(0), args.replica.clone()),
        0 => {
            let not_found = || target.not_found_by("trainctl --kube get");
            let pod = cluster
                .pod_replica(target.namespace, target.name, target.kind)
                .await?
                .ok_or_else(not_found)?;
            let replica = replica_of_pod(target.name, &pod.slot.to_string(), args)?;
            let job = cluster
                .get_job(pod.kind, target.namespace, &pod.job)
                .await?
                .ok_or_else(not_found)?;
            (job, Some(replica))
        }
        _ => {
            let kinds: Vec<_> = jobs.iter().map(|job| job.kind).collect();
            return Err(target.ambiguous(&kinds, "--kube logs"));
        }
    };
    let pods = cluster.pods_of(&found).await?;
    let slots = ReplicaSlot::all_of(&found.job, pods.iter().filter_map(slot_of));
    let wanted = wanted(&found.job, &slots, replica.as_deref())?;
    let request = LogRequest {
        job: &found,
        replica: wanted.as_ref(),
        width: width(&slots),
        follow: args.follow && !args.previous,
        tail_lines: args.tail_lines(),
        since: args.since,
        timestamps: args.timestamps,
        previous: args.previous,
    };
    cluster.print_logs(request, &pods, out).await?;
    Ok(ExitCode::SUCCESS)
}
