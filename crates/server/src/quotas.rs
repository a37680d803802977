//! What a job counts against its namespace's `ResourceQuota`s ([`charge_of`]), and a quota as
//! the API shows it: the document with `status.hard` and `status.used` ([`with_status`]).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PodSpec, ResourceQuota, ResourceQuotaStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use trainctl_api::TrainingJob;
use trainctl_api::quota::{QuotaResource, Usage};
use trainctl_api::resources::ReplicaNeeds;

/// What `job` counts against quotas once admitted: its replicas' requests (CPU and memory:
/// requests, else limits; GPUs: limits, else requests, as the local runtime accounts them), their
/// limits (limits, else requests), one pod per replica, and one job of its kind. A replica whose
/// resources cannot be read counts nothing (its job fails before it is admitted).
#[must_use]
pub fn charge_of(job: &TrainingJob) -> Usage {
    let mut usage = Usage::default();
    let mut count = |resource, amount: u64| {
        let total = usage.0.entry(resource).or_insert(0);
        *total = total.saturating_add(amount);
    };
    count(QuotaResource::Count(job.kind()), 1);
    for (replica_type, spec) in job.replica_specs().iter() {
        let Some(pod) = spec.template.spec.as_ref() else {
            continue;
        };
        let limits_pod = limits_first(pod);
        for index in 0..spec.replicas_or_default() {
            count(QuotaResource::Pods, 1);
            if let Ok(needs) = ReplicaNeeds::of_pod(replica_type.clone(), index, pod) {
                count(QuotaResource::RequestsCpu, needs.cpu_millis);
                count(QuotaResource::RequestsMemory, needs.memory_bytes);
                count(QuotaResource::RequestsGpu, u64::from(needs.gpus));
            }
            if let Ok(needs) = ReplicaNeeds::of_pod(replica_type.clone(), index, &limits_pod) {
                count(QuotaResource::LimitsCpu, needs.cpu_millis);
                count(QuotaResource::LimitsMemory, needs.memory_bytes);
                count(QuotaResource::LimitsGpu, u64::from(needs.gpus));
            }
        }
    }
    usage
}

/// `pod` with each container's limits standing as its requests (requests kept where no limit
/// is set), so that [`ReplicaNeeds::of_pod`] reads limits first.
fn limits_first(pod: &PodSpec) -> PodSpec {
    let mut pod = pod.clone();
    let containers = pod
        .containers
        .iter_mut()
        .chain(pod.init_containers.iter_mut().flatten());
    for container in containers {
        if let Some(resources) = container.resources.as_mut() {
            let mut merged: BTreeMap<String, Quantity> =
                resources.requests.clone().unwrap_or_default();
            merged.extend(resources.limits.clone().unwrap_or_default());
            resources.requests = Some(merged);
        }
    }
    pod
}

/// `quota` with `status.hard` (its `spec.hard`) and `status.used`: what the admitted jobs of its
/// namespace count, for each key trainctl counts.
#[must_use]
pub fn with_status(mut quota: ResourceQuota, used: &Usage) -> ResourceQuota {
    let hard = quota
        .spec
        .as_ref()
        .and_then(|spec| spec.hard.clone())
        .unwrap_or_default();
    let used_now: BTreeMap<String, Quantity> = hard
        .keys()
        .filter_map(|key| {
            let resource = QuotaResource::from_key(key)?;
            Some((
                key.clone(),
                Quantity(resource.quantity_text(used.get(resource))),
            ))
        })
        .collect();
    quota.status = Some(ResourceQuotaStatus {
        hard: Some(hard),
        used: Some(used_now),
    });
    quota
}

#[cfg(test)]
mod tests {
    use super::*;
    use QuotaResource::{
        Count, LimitsCpu, LimitsGpu, LimitsMemory, Pods, RequestsCpu, RequestsGpu, RequestsMemory,
    };

    fn job(yaml: &str) -> TrainingJob {
        let manifests = trainctl_api::manifest::load_str("job.yaml", yaml);
        assert!(!manifests.has_errors(), "{:?}", manifests.diagnostics);
        manifests.jobs.into_iter().next().expect("a job").job
    }

    #[test]
    fn a_job_counts_its_replicas_requests_limits_pods_and_itself() {
        let job = job(
            "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: t, namespace: team-a}\n\
             spec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 2\n      template:\n        spec:\n          \
             containers:\n          - name: tensorflow\n            image: tf\n            resources:\n              \
             requests: {cpu: 500m, memory: 1Gi}\n              limits: {cpu: '1', nvidia.com/gpu: '2'}\n",
        );
        let usage = charge_of(&job);
        let expected: Vec<(QuotaResource, u64)> = vec![
            (RequestsCpu, 1_000),
            (RequestsMemory, 2 << 30),
            (RequestsGpu, 4),
            (LimitsCpu, 2_000),
            (LimitsMemory, 2 << 30),
            (LimitsGpu, 4),
            (Pods, 2),
            (Count(trainctl_api::JobKind::TFJob), 1),
        ];
        assert_eq!(usage, Usage(expected.into_iter().collect()));
    }
}
