//! Kueue's words on the jobs it holds back (docs/operator.md, "Sharing a cluster"). Kueue
//! keeps a job that its queue has not admitted suspended, and says why on the `Workload` it
//! made for the job (`kueue.x-k8s.io`), not on the job: `get -o wide` and `describe` read them
//! there for the suspended jobs labelled with a queue. Where Kueue is not installed, or its
//! Workloads may not be read, nothing is shown.

use std::collections::HashMap;

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use serde_json::Value;

use super::{Cluster, ClusterJob};

/// The label that puts a job in a Kueue `LocalQueue`.
pub const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";

/// Kueue's Workloads (`v1beta2`, its storage version since 0.15).
fn workloads_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", "Workload"),
        "workloads",
    )
}

/// The queue `job` waits in: labelled with one and suspended.
fn waiting_queue(job: &ClusterJob) -> Option<&str> {
    let queue = job.object.metadata.labels.as_ref()?.get(QUEUE_LABEL)?;
    (job.object.data["spec"]["runPolicy"]["suspend"] == true).then_some(queue.as_str())
}

impl Cluster {
    /// Why Kueue holds back each of `jobs` that waits in a queue, by the job's uid:
    /// `Kueue (LocalQueue team-a): couldn't assign flavors to pod set master: insufficient
    /// unused quota ...`. One list of Workloads in `namespace` (every namespace when `None`),
    /// made only when a job waits in a queue.
    pub async fn queue_reasons(
        &self,
        jobs: &[ClusterJob],
        namespace: Option<&str>,
    ) -> HashMap<String, String> {
        let queues: HashMap<&str, &str> = jobs
            .iter()
            .filter_map(|job| Some((job.uid(), waiting_queue(job)?)))
            .collect();
        if queues.is_empty() {
            return HashMap::new();
        }
        let resource = workloads_resource();
        let api: Api<DynamicObject> = match namespace {
            Some(namespace) => Api::namespaced_with(self.client.clone(), namespace, &resource),
            None => Api::all_with(self.client.clone(), &resource),
        };
        // Kueue not installed (404) or its Workloads not readable (403): no words, as without
        // Kueue; the jobs themselves were read.
        let Ok(workloads) = api.list(&ListParams::default()).await else {
            return HashMap::new();
        };
        workloads
            .items
            .iter()
            .filter_map(|workload| {
                let owner = workload
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .find(|owner| owner.controller == Some(true))?;
                let queue = queues.get(owner.uid.as_str())?;
                let why = pending_words(&workload.data["status"]["conditions"])?;
                Some((
                    owner.uid.clone(),
                    format!("Kueue (LocalQueue {queue}): {why}"),
                ))
            })
            .collect()
    }
}

/// Why a Workload is not admitted, from its conditions: `QuotaReserved=False`'s message (Kueue
/// could not reserve the quota), else `Evicted=True`'s; `None` once admitted.
fn pending_words(conditions: &Value) -> Option<String> {
    let conditions = conditions.as_array()?;
    let condition = |type_: &str| conditions.iter().find(|c| c["type"] == type_);
    if condition("Admitted").is_some_and(|c| c["status"] == "True") {
        return None;
    }
    let words = |c: &Value| {
        c["message"]
            .as_str()
            .or_else(|| c["reason"].as_str())
            .map(str::to_owned)
    };
    match (condition("QuotaReserved"), condition("Evicted")) {
        (Some(reserved), _) if reserved["status"] == "False" => words(reserved),
        (_, Some(evicted)) if evicted["status"] == "True" => {
            words(evicted).map(|why| format!("evicted: {why}"))
        }
        _ => Some("waiting for its queue".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::pending_words;

    #[test]
    fn kueue_says_why_until_it_admits() {
        let quota = "couldn't assign flavors to pod set master: insufficient unused quota for \
                     nvidia.com/gpu in flavor gpus, 4 more needed";
        assert_eq!(
            pending_words(&json!([{"type": "QuotaReserved", "status": "False",
                                   "reason": "Pending", "message": quota}])),
            Some(quota.to_owned())
        );
        assert_eq!(
            pending_words(&json!([
                {"type": "QuotaReserved", "status": "True"},
                {"type": "Admitted", "status": "True"},
            ])),
            None
        );
        assert_eq!(
            pending_words(
                &json!([{"type": "Evicted", "status": "True", "reason": "Preempted",
                                   "message": "Preempted to accommodate a workload"}])
            ),
            Some("evicted: Preempted to accommodate a workload".to_owned())
        );
        assert_eq!(
            pending_words(&json!([])),
            Some("waiting for its queue".to_owned())
        );
    }
}
