//! The owner reference that ties each object of a job to the job.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use trainctl_api::TrainingJob;

/// The controller owner reference every object of the job carries, so that Kubernetes deletes
/// them with the job (no finalizers needed).
#[must_use]
pub fn owner_reference(job: &TrainingJob) -> OwnerReference {
    OwnerReference {
        api_version: trainctl_api::API_VERSION.to_owned(),
        kind: job.kind().as_str().to_owned(),
        name: job.name().to_owned(),
        uid: job.metadata().uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}
