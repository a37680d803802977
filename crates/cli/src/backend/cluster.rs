//! A cluster's jobs (`--kube`): read from and changed through its API server.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::try_join;
use futures_util::{Stream, StreamExt};
use jiff::Timestamp;
use serde_json::Value;
use trainctl_api::{JobKind, TrainingJob};

use super::{Details, FoundJob, Jobs, Local};
use crate::cluster::{
    Cluster, ClusterJob, controller_uid, pods_reason, replica_rows, restarts_by_job,
};
use crate::target::Target;
use crate::view::description::{Description, Placement};

/// How often `get -w` lists a cluster's jobs again.
const GET_POLL: Duration = Duration::from_secs(2);

impl FoundJob for ClusterJob {
    fn kind(&self) -> JobKind {
        self.kind
    }

    fn job(&self) -> &TrainingJob {
        &self.job
    }

    fn state(&self) -> &'static str {
        ClusterJob::state(self)
    }

    fn created(&self) -> Option<Timestamp> {
        ClusterJob::created(self)
    }

    fn finished(&self) -> bool {
        ClusterJob::finished(self)
    }

    fn shown(&self) -> anyhow::Result<Value> {
        Ok(serde_json::to_value(ClusterJob::shown(self))?)
    }
}

impl Jobs for Cluster {
    type Job = ClusterJob;

    fn default_namespace(&self) -> &str {
        &self.namespace
    }

    fn flags(&self) -> &'static str {
        "--kube "
    }

    fn poll(&self) -> Duration {
        GET_POLL
    }

    fn local(&self) -> Option<&Local> {
        None
    }

    async fn list(
        &self,
        kind: Option<JobKind>,
        namespace: Option<&str>,
    ) -> anyhow::Result<Vec<ClusterJob>> {
        let listed = self.list_jobs(kind, namespace).await?;
        for unreadable in &listed.unreadable {
            eprintln!("warning: {unreadable}");
        }
        Ok(listed.jobs)
    }

    async fn find(&self, target: &Target<'_>) -> anyhow::Result<Vec<ClusterJob>> {
        Ok(self.find_jobs(target).await?)
    }

    async fn not_found(&self, target: &Target<'_>, see: Option<&str>) -> anyhow::Error {
        Cluster::not_found(self, target, see).await
    }

    async fn details(
        &self,
        jobs: &[ClusterJob],
        namespace: Option<&str>,
    ) -> anyhow::Result<Vec<Details>> {
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        let pods = self.training_pods(namespace).await?;
        let restarts = restarts_by_job(jobs, &pods);
        let mut held = self.queue_reasons(jobs, namespace).await;
        Ok(jobs
            .iter()
            .map(|job| {
                let owned = pods
                    .iter()
                    .filter(|pod| controller_uid(pod) == Some(job.uid()));
                Details {
                    restarts: restarts.get(job.uid()).copied().unwrap_or_default(),
                    progress: None,
                    held_by: held.remove(job.uid()),
                    failure: None,
                    reason: pods_reason(job, owned).map(str::to_owned),
                }
            })
            .collect())
    }

    async fn describe(&self, found: ClusterJob) -> anyhow::Result<Description> {
        let (pods, events) = try_join(self.pods_of(&found), self.events_of(&found)).await?;
        let held_by = self
            .queue_reasons(std::slice::from_ref(&found), Some(found.namespace()))
            .await
            .remove(found.uid());
        Ok(Description {
            state: found.state().to_owned(),
            uid: found.uid().to_owned(),
            created: found.created(),
            replicas: replica_rows(&found.job, &pods),
            placement: Placement::Node,
            events,
            claims: BTreeMap::new(),
            progress: None,
            event_dirs: Vec::new(),
            held_by,
            failure: None,
            job: found.job,
        })
    }

    /// Deletes the job as kubectl does by default: in the background (the job goes at once,
    /// the garbage collector removes its pods and services after).
    async fn delete(&self, target: &Target<'_>) -> anyhow::Result<String> {
        let job = self.job(target, "delete").await?;
        if !self.delete_job(&job).await? {
            return Err(target.not_found_by("trainctl --kube get"));
        }
        Ok(format!("{} deleted", job.resource()))
    }

    /// A merge patch of `spec.runPolicy.suspend`, which the operator acts on.
    async fn set_suspended(&self, target: &Target<'_>, suspend: bool) -> anyhow::Result<String> {
        let command = if suspend { "suspend" } else { "resume" };
        let job = self.job(target, command).await?;
        let changed = Cluster::set_suspended(self, &job, suspend).await?;
        Ok(changed.resource())
    }

    fn changes<'a>(
        &'a self,
        job: &ClusterJob,
    ) -> impl Stream<Item = anyhow::Result<Option<ClusterJob>>> + use<'a> {
        self.watch_job(job).map(|change| change.map_err(Into::into))
    }
}
