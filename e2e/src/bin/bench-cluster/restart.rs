//! `--restart`: an operator killed (`SIGKILL`) on top of the jobs it has made, and started again,
//! as an upgrade, a leader change or an out-of-memory kill would.
//!
//! Before the kill, the driver lists every Pod and Service (name and uid) and every TFJob's
//! status. It kills the operator, starts the same command again (`t0`) and at once creates a new
//! TFJob of one Worker: the restart is served when that job's first Pod appears. Once nothing
//! changed for the quiet time, it reads the new process's peak memory (`VmHWM`: its first list of
//! everything, and the new job), lists again, and counts what the restart did to what existed: a
//! Pod or Service whose uid changed or that is gone (re-created, deleted), a new one that is not
//! the new job's, and a job whose status (conditions and replica counts) changed.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::core::{NamespaceResourceScope, PartialObjectMeta};
use kube::{Client, Resource, ResourceExt as _};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use trainctl_api::JobKind;
use trainctl_operator::job;

use crate::observe::{Limits, Observed, Watches};
use crate::process::Process;
use crate::workload::{NAMESPACE, tfjob};

/// The job created right after the restart.
pub const NEW_JOB: &str = "after-restart";

/// What a restart cost and changed. Times are seconds from the new process's start; memory in
/// KiB.
#[derive(Debug, Default, Serialize)]
pub struct Restart {
    /// When the new job's first Pod appeared.
    pub served_s: Option<f64>,
    /// `VmHWM` of the new process once settled: its first list, and the new job.
    pub peak_kib: Option<u64>,
    /// `VmRSS` of the new process once settled.
    pub rss_kib: Option<u64>,
    /// CPU seconds the new process used until settled.
    pub cpu_s: Option<f64>,
    /// Pods that existed before and were re-created or are gone.
    pub pods_replaced: usize,
    /// Services that existed before and were re-created or are gone.
    pub services_replaced: usize,
    /// Pods and Services that are new and not the new job's.
    pub extra_objects: usize,
    /// Jobs whose conditions or replica counts changed.
    pub statuses_changed: usize,
    /// Deletions watched from the kill until settled.
    pub deletions: usize,
}

/// Kills `process`, starts it again with `restart`, and measures the restart (see the module).
pub async fn measure(
    client: &Client,
    watches: &mut Watches,
    process: Process,
    restart: impl FnOnce() -> Result<Process>,
    limits: Limits,
) -> Result<Restart> {
    let before = Snapshot::take(client).await?;
    process.stop(Duration::ZERO).await;
    let t0 = Instant::now();
    let process = restart()?;
    let jobs: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        NAMESPACE,
        &job::api_resource(JobKind::TFJob),
    );
    jobs.create(&PostParams::default(), &tfjob(NEW_JOB, 1)?)
        .await
        .context("creating the job after the restart")?;
    let mut observed = Observed::default();
    let served = watches
        .until(&mut observed, t0, t0 + limits.timeout, |observed| {
            observed.pod_jobs.values().any(|job| job == NEW_JOB)
        })
        .await;
    watches.settle(&mut observed, t0, limits.settle).await;
    let sample = process.sample();
    let after = Snapshot::take(client).await?;
    process.stop(Duration::ZERO).await;
    let sample = sample?;
    let mut restart = before.compare(&after);
    restart.served_s = observed
        .done
        .filter(|_| served)
        .map(|served| served.as_secs_f64());
    restart.peak_kib = Some(sample.hwm_kib);
    restart.rss_kib = Some(sample.rss_kib);
    restart.cpu_s = Some(sample.cpu_seconds);
    restart.deletions = observed.deletions;
    Ok(restart)
}

/// What exists, by name: the Pods' and Services' uids, the jobs' statuses in short.
#[derive(Debug, Default)]
struct Snapshot {
    pods: BTreeMap<String, String>,
    services: BTreeMap<String, String>,
    jobs: BTreeMap<String, Value>,
}

impl Snapshot {
    async fn take(client: &Client) -> Result<Snapshot> {
        let jobs: Api<DynamicObject> = Api::namespaced_with(
            client.clone(),
            NAMESPACE,
            &job::api_resource(JobKind::TFJob),
        );
        let jobs = jobs
            .list(&ListParams::default())
            .await
            .context("listing the TFJobs")?
            .items
            .into_iter()
            .map(|job| (job.name_any(), status_in_short(&job.data)))
            .collect();
        Ok(Snapshot {
            pods: uids::<Pod>(client).await?,
            services: uids::<Service>(client).await?,
            jobs,
        })
    }

    /// What changed from `self` to `after`, leaving out the new job and its children.
    fn compare(&self, after: &Snapshot) -> Restart {
        let replaced = |before: &BTreeMap<String, String>, after: &BTreeMap<String, String>| {
            before
                .iter()
                .filter(|(name, uid)| after.get(*name) != Some(*uid))
                .count()
        };
        let is_new_jobs = |name: &str| name.starts_with(&format!("{NEW_JOB}-"));
        let extra = |before: &BTreeMap<String, String>, after: &BTreeMap<String, String>| {
            after
                .keys()
                .filter(|name| !before.contains_key(*name) && !is_new_jobs(name))
                .count()
        };
        Restart {
            pods_replaced: replaced(&self.pods, &after.pods),
            services_replaced: replaced(&self.services, &after.services),
            extra_objects: extra(&self.pods, &after.pods) + extra(&self.services, &after.services),
            statuses_changed: self
                .jobs
                .iter()
                .filter(|(name, status)| after.jobs.get(*name) != Some(*status))
                .count(),
            ..Restart::default()
        }
    }
}

/// The names and uids of the namespace's `K`s.
async fn uids<K>(client: &Client) -> Result<BTreeMap<String, String>>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<PartialObjectMeta<K>> = Api::namespaced(client.clone(), NAMESPACE);
    let listed = api
        .list_metadata(&ListParams::default())
        .await
        .with_context(|| format!("listing the {}s", K::kind(&())))?;
    Ok(listed
        .items
        .into_iter()
        .map(|object| {
            let uid = object.uid().unwrap_or_default();
            (object.name_any(), uid)
        })
        .collect())
}

/// A job's status without its times: each condition's type, status and reason, and the replica
/// counts.
fn status_in_short(job: &Value) -> Value {
    let conditions: Vec<Value> = job
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|condition| {
            serde_json::json!([condition["type"], condition["status"], condition["reason"]])
        })
        .collect();
    serde_json::json!({
        "conditions": conditions,
        "replicaStatuses": job.pointer("/status/replicaStatuses"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(name, uid)| ((*name).to_owned(), (*uid).to_owned()))
            .collect()
    }

    #[test]
    fn a_restart_is_compared_by_uid_and_status_leaving_out_the_new_job() {
        let running = |active: u64| {
            status_in_short(&json!({"status": {
                "conditions": [{"type": "Running", "status": "True", "reason": "TFJobRunning",
                                "lastTransitionTime": "2026-12-07T00:00:00Z"}],
                "replicaStatuses": {"Worker": {"active": active}},
            }}))
        };
        let before = Snapshot {
            pods: names(&[
                ("a-worker-0", "1"),
                ("a-worker-1", "2"),
                ("b-worker-0", "3"),
            ]),
            services: names(&[("a-worker-0", "4")]),
            jobs: BTreeMap::from([("a".to_owned(), running(2)), ("b".to_owned(), running(1))]),
        };
        let after = Snapshot {
            pods: names(&[
                ("a-worker-0", "1"),
                ("a-worker-1", "9"),
                ("c-worker-0", "5"),
                ("after-restart-worker-0", "6"),
            ]),
            services: names(&[("a-worker-0", "4"), ("after-restart-worker-0", "7")]),
            jobs: BTreeMap::from([("a".to_owned(), running(2)), ("b".to_owned(), running(0))]),
        };
        let restart = before.compare(&after);
        assert_eq!(
            restart.pods_replaced, 2,
            "a-worker-1 re-created, b-worker-0 gone"
        );
        assert_eq!(restart.services_replaced, 0);
        assert_eq!(restart.extra_objects, 1, "c-worker-0");
        assert_eq!(restart.statuses_changed, 1, "b");
        // The times of a condition are no change.
        let later = json!({"status": {"conditions": [{"type": "Running", "status": "True",
            "reason": "TFJobRunning", "lastTransitionTime": "2026-12-08T00:00:00Z"}],
            "replicaStatuses": {"Worker": {"active": 2}}}});
        assert_eq!(status_in_short(&later), running(2));
    }
}
