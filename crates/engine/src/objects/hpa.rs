//! The HorizontalPodAutoscaler of an elastic PyTorchJob that names `elasticPolicy.metrics`
//! (docs/semantics.md §3), as the Kubeflow training operator v1.9.4 builds it: named like the
//! job, scaling the job itself (its scale subresource moves the `Worker` replicas) between the
//! elastic bounds, by the job's metrics, and owned by the job.

use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use trainctl_api::TrainingJob;
use trainctl_api::pytorch::ElasticPolicy;

use super::owner::owner_reference;

/// The elastic policy of a job that is autoscaled: a PyTorchJob whose `elasticPolicy` sets
/// `metrics` (an empty list included, as upstream: only a missing one means no autoscaler).
fn autoscaled(job: &TrainingJob) -> Option<&ElasticPolicy> {
    match job {
        TrainingJob::PyTorch(pytorch) => pytorch
            .spec
            .elastic_policy
            .as_ref()
            .filter(|policy| policy.metrics.is_some()),
        _ => None,
    }
}

/// Whether the job has a HorizontalPodAutoscaler: a PyTorchJob whose `elasticPolicy` sets
/// `metrics`.
#[must_use]
pub fn has_hpa(job: &TrainingJob) -> bool {
    autoscaled(job).is_some()
}

/// The job's HorizontalPodAutoscaler (`autoscaling/v2`), or `None` when it has none
/// ([`has_hpa`]). The job is defaulted: `maxReplicas` is then always set (it defaults to
/// `minReplicas`, else to the `Worker` replicas), and so is `minReplicas`.
///
/// No labels and no annotations, as upstream's: only the name, the namespace and the
/// controller owner reference, through which Kubernetes deletes it with the job.
#[must_use]
pub fn build_hpa(job: &TrainingJob) -> Option<HorizontalPodAutoscaler> {
    let policy = autoscaled(job)?;
    Some(HorizontalPodAutoscaler {
        metadata: ObjectMeta {
            name: Some(job.name().to_owned()),
            namespace: Some(job.namespace().to_owned()),
            owner_references: Some(vec![owner_reference(job)]),
            ..ObjectMeta::default()
        },
        spec: HorizontalPodAutoscalerSpec {
            scale_target_ref: CrossVersionObjectReference {
                api_version: Some(trainctl_api::API_VERSION.to_owned()),
                kind: job.kind().as_str().to_owned(),
                name: job.name().to_owned(),
            },
            min_replicas: policy.min_replicas,
            max_replicas: policy.max_replicas?,
            metrics: policy.metrics.clone(),
            behavior: None,
        },
        status: None,
    })
}

#[cfg(test)]
mod tests;
