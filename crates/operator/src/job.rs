//! The training job as the operator sees it: a [`DynamicObject`] of one kind, read into the
//! api crate's [`TrainingJob`] and defaulted.
//!
//! ## Why `DynamicObject` rather than the typed CRDs
//! The six kinds are typed in `trainctl-api`, and a typed `Controller<TFJob>` would work. But a
//! typed watcher deserializes every object of the kind in one list: a single job that the API
//! server accepted and our types refuse (a CRD installed from elsewhere, an older schema) would
//! stall the whole kind. Watching `DynamicObject`s with the kind's [`ApiResource`] (derived from
//! the typed CRD, so the two cannot drift) keeps the watch healthy and lets that one job fail
//! with a message naming the field, like any other invalid job. One untyped reconcile then
//! serves all six controllers; the conversion costs one JSON round trip per reconcile.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{ApiResource, DynamicObject};
use serde_json::Value;
use trainctl_api::{
    JobKind, TrainingJob, defaults, jax, mpi, paddle, pytorch, tensorflow, xgboost,
};

/// The annotation where the operator keeps the job's restart ledger (the engine's
/// `retired_restarts`: restarts of pods that no longer exist, counted against `backoffLimit`).
pub const RETIRED_RESTARTS_ANNOTATION: &str = "training.kubeflow.org/retired-restarts";

/// The API resource of one job kind (`kubeflow.org/v1`, `tfjobs`), from its typed CRD.
#[must_use]
pub fn api_resource(kind: JobKind) -> ApiResource {
    match kind {
        JobKind::TFJob => ApiResource::erase::<tensorflow::TFJob>(&()),
        JobKind::PyTorchJob => ApiResource::erase::<pytorch::PyTorchJob>(&()),
        JobKind::XGBoostJob => ApiResource::erase::<xgboost::XGBoostJob>(&()),
        JobKind::PaddleJob => ApiResource::erase::<paddle::PaddleJob>(&()),
        JobKind::JAXJob => ApiResource::erase::<jax::JAXJob>(&()),
        JobKind::MPIJob => ApiResource::erase::<mpi::MPIJob>(&()),
    }
}

/// Reads a job object of `kind` and applies the defaults (there is no mutating webhook), or
/// says which field does not fit the type.
pub fn read(kind: JobKind, object: &DynamicObject) -> Result<TrainingJob, String> {
    let value = serde_json::to_value(object).map_err(|error| error.to_string())?;
    let mut job = match kind {
        JobKind::TFJob => typed(&value).map(TrainingJob::TF),
        JobKind::PyTorchJob => typed(&value).map(TrainingJob::PyTorch),
        JobKind::XGBoostJob => typed(&value).map(TrainingJob::XGBoost),
        JobKind::PaddleJob => typed(&value).map(TrainingJob::Paddle),
        JobKind::JAXJob => typed(&value).map(TrainingJob::Jax),
        JobKind::MPIJob => typed(&value).map(TrainingJob::Mpi),
    }?;
    defaults::apply(&mut job);
    Ok(job)
}

fn typed<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        if path == "." {
            inner.to_string()
        } else {
            format!("{path}: {inner}")
        }
    })
}

/// `namespace/name`, as logs and errors name a job.
#[must_use]
pub fn display_name(job: &TrainingJob) -> String {
    format!("{}/{}", job.namespace(), job.name())
}

/// The restart ledger kept on the job ([`RETIRED_RESTARTS_ANNOTATION`]); 0 when absent or
/// unreadable (a new job, or an annotation someone edited by hand).
#[must_use]
pub fn retired_restarts(job: &TrainingJob) -> u32 {
    job.metadata()
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(RETIRED_RESTARTS_ANNOTATION))
        .and_then(|value| value.parse().ok())
        .unwrap_or(0)
}

/// The reference events about the job point at.
#[must_use]
pub fn object_reference(job: &TrainingJob) -> ObjectReference {
    let metadata = job.metadata();
    ObjectReference {
        api_version: Some(trainctl_api::API_VERSION.to_owned()),
        kind: Some(job.kind().as_str().to_owned()),
        name: metadata.name.clone(),
        namespace: Some(job.namespace().to_owned()),
        uid: metadata.uid.clone(),
        resource_version: metadata.resource_version.clone(),
        field_path: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dynamic(value: Value) -> DynamicObject {
        serde_json::from_value(value).expect("a valid object")
    }

    #[test]
    fn api_resource_is_the_crd_plural_in_kubeflow_v1() {
        let resource = api_resource(JobKind::PyTorchJob);
        assert_eq!(resource.api_version, "kubeflow.org/v1");
        assert_eq!(resource.kind, "PyTorchJob");
        assert_eq!(resource.plural, "pytorchjobs");
    }

    #[test]
    fn read_applies_defaults() {
        let object = dynamic(serde_json::json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "mnist", "namespace": "ml"},
            "spec": {"tfReplicaSpecs": {"worker": {"template": {"spec": {
                "containers": [{"name": "tensorflow", "image": "tf"}]}}}}}
        }));
        let job = read(JobKind::TFJob, &object).expect("reads");
        let worker = &job.replica_specs()[&trainctl_api::ReplicaType::Worker];
        assert_eq!(worker.replicas, Some(1));
        assert_eq!(
            job.run_policy().clean_pod_policy,
            Some(trainctl_api::CleanPodPolicy::None)
        );
    }

    #[test]
    fn read_names_the_field_that_does_not_fit() {
        let object = dynamic(serde_json::json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "mnist"},
            "spec": {"tfReplicaSpecs": {"Worker": {"replicas": "two", "template": {}}}}
        }));
        let message = read(JobKind::TFJob, &object).expect_err("refused");
        assert!(
            message.starts_with("spec.tfReplicaSpecs.Worker.replicas: "),
            "{message}"
        );
    }

    #[test]
    fn retired_restarts_reads_the_annotation() {
        let object = dynamic(serde_json::json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "mnist", "annotations": {RETIRED_RESTARTS_ANNOTATION: "3"}},
            "spec": {"tfReplicaSpecs": {}}
        }));
        let job = read(JobKind::TFJob, &object).expect("reads");
        assert_eq!(retired_restarts(&job), 3);
    }
}
