//! The training job as the operator sees it: a `JobObject` of one kind, read into the api
//! crate's [`TrainingJob`] and defaulted.
//!
//! ## Why not the typed CRDs
//! The seven kinds are typed in `trainctl-api`, and a typed `Controller<TFJob>` would work. But a
//! typed watcher deserializes every object of the kind in one list: a single job that the API
//! server accepted and our types refuse (a CRD installed from elsewhere, an older schema) would
//! stall the whole kind. Watching `JobObject`s with the kind's [`ApiResource`] (derived from
//! the typed CRD, so the two cannot drift) keeps the watch healthy and lets that one job fail
//! with a message naming the field, like any other invalid job. One untyped reconcile then
//! serves all seven controllers.
//!
//! ## Why not `DynamicObject`
//! The controllers cache every job they watch. A [`kube::api::DynamicObject`] keeps all but the
//! metadata as a `serde_json::Value` tree, a map and an allocation per field: several times the
//! size of the JSON it came from, and kube's reflector holds a copy of each.
//! A `JobObject` keeps the spec and the status as the JSON text itself, read into a
//! [`TrainingJob`] when a reconcile starts (microseconds, once per reconcile).

use std::borrow::Cow;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::api::ApiResource;
use kube::core::DynamicResourceScope;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use trainctl_api::{
    JobKind, JobStatus, TrainingJob, defaults, jax, mpi, mxnet, paddle, pytorch, tensorflow,
    xgboost,
};

/// A job object of any of the seven kinds as the API server sent it, compactly: the metadata,
/// and the spec and the status as JSON text (see the module's documentation). Other top-level
/// fields (`apiVersion`, `kind`: the watch's resource says them) are dropped, so the serialized
/// form is for [`read`] only, never an object to send.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct JobObject {
    /// The object's metadata.
    #[serde(default)]
    pub(crate) metadata: ObjectMeta,
    /// The spec, as JSON text (`null` included); `None` when absent.
    #[serde(
        default,
        deserialize_with = "json_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) spec: Option<Box<RawValue>>,
    /// The status, as JSON text (`null` included); `None` when absent.
    #[serde(
        default,
        deserialize_with = "json_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) status: Option<Box<RawValue>>,
}

impl JobObject {
    /// The status recorded on the object, if it has one that reads as a job status.
    #[must_use]
    pub(crate) fn recorded_status(&self) -> Option<JobStatus> {
        serde_json::from_str(self.status.as_ref()?.get()).ok()
    }
}

/// A JSON value kept as its text, `null` too (so that a null spec is refused as it is in the
/// whole object). Deserialized through a `Value` rather than as a `RawValue` directly: kube may
/// hand the object over from serde's buffered content (a watch event), which a `RawValue`
/// cannot be read from.
fn json_text<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Box<RawValue>>, D::Error> {
    let value = Value::deserialize(deserializer)?;
    serde_json::value::to_raw_value(&value)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

impl Resource for JobObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(resource: &ApiResource) -> Cow<'_, str> {
        resource.kind.as_str().into()
    }

    fn group(resource: &ApiResource) -> Cow<'_, str> {
        resource.group.as_str().into()
    }

    fn version(resource: &ApiResource) -> Cow<'_, str> {
        resource.version.as_str().into()
    }

    fn api_version(resource: &ApiResource) -> Cow<'_, str> {
        resource.api_version.as_str().into()
    }

    fn plural(resource: &ApiResource) -> Cow<'_, str> {
        resource.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

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
        JobKind::MXJob => ApiResource::erase::<mxnet::MXJob>(&()),
    }
}

/// Reads a job object of `kind` (a `JobObject`, or any other form of it that serializes to
/// its JSON, such as a `DynamicObject`) and applies the defaults (there is no mutating webhook),
/// or says which field does not fit the type.
pub fn read(kind: JobKind, object: &impl Serialize) -> Result<TrainingJob, String> {
    let value = serde_json::to_value(object).map_err(|error| error.to_string())?;
    let mut job = match kind {
        JobKind::TFJob => typed(&value).map(TrainingJob::TF),
        JobKind::PyTorchJob => typed(&value).map(TrainingJob::PyTorch),
        JobKind::XGBoostJob => typed(&value).map(TrainingJob::XGBoost),
        JobKind::PaddleJob => typed(&value).map(TrainingJob::Paddle),
        JobKind::JAXJob => typed(&value).map(TrainingJob::Jax),
        JobKind::MPIJob => typed(&value).map(TrainingJob::Mpi),
        JobKind::MXJob => typed(&value).map(TrainingJob::MXNet),
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
pub(crate) fn display_name(job: &TrainingJob) -> String {
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
pub(crate) fn object_reference(job: &TrainingJob) -> ObjectReference {
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

    fn object(value: Value) -> JobObject {
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
        let object = object(serde_json::json!({
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
        let object = object(serde_json::json!({
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
    fn a_job_object_keeps_spec_and_status_as_their_json_text() {
        let json = serde_json::json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "mnist", "namespace": "ml"},
            "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2}}},
            "status": {"conditions": [{"type": "Created", "status": "True"}]}
        });
        let object = object(json.clone());
        assert_eq!(object.metadata.name.as_deref(), Some("mnist"));
        assert_eq!(
            object.spec.as_ref().map(|spec| spec.get()),
            Some(r#"{"tfReplicaSpecs":{"Worker":{"replicas":2}}}"#)
        );
        let status = object.recorded_status().expect("a status");
        assert_eq!(status.conditions.len(), 1);
        let dynamic: kube::api::DynamicObject = serde_json::from_value(json).expect("an object");
        assert_eq!(
            read(JobKind::TFJob, &object).expect("reads"),
            read(JobKind::TFJob, &dynamic).expect("reads"),
            "read the same as the whole object"
        );
    }

    #[test]
    fn a_job_object_is_refused_as_the_whole_object_is() {
        for json in [
            serde_json::json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                "metadata": {"name": "mnist"}, "spec": null}),
            serde_json::json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                "metadata": {"name": "mnist"}}),
            serde_json::json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                "metadata": {"name": "mnist"},
                "spec": {"tfReplicaSpecs": {"Worker": {"replicas": "two"}}}}),
        ] {
            let dynamic: kube::api::DynamicObject =
                serde_json::from_value(json.clone()).expect("an object");
            let whole = read(JobKind::TFJob, &dynamic).expect_err("refused");
            assert_eq!(
                read(JobKind::TFJob, &object(json)).expect_err("refused"),
                whole
            );
        }
    }

    #[test]
    fn a_job_object_reads_from_a_watch_event_in_either_field_order() {
        // serde buffers an adjacently tagged enum's content that comes before its tag.
        for event in [
            r#"{"type":"ADDED","object":{"metadata":{"name":"a"},"spec":{"x":1},"status":null}}"#,
            r#"{"object":{"metadata":{"name":"a"},"spec":{"x":1},"status":null},"type":"ADDED"}"#,
        ] {
            let event: kube::core::WatchEvent<JobObject> =
                serde_json::from_str(event).expect("an event");
            let kube::core::WatchEvent::Added(object) = event else {
                panic!("an ADDED event");
            };
            assert_eq!(
                object.spec.as_ref().map(|spec| spec.get()),
                Some(r#"{"x":1}"#)
            );
            assert_eq!(
                object.status.as_ref().map(|status| status.get()),
                Some("null")
            );
            assert!(object.recorded_status().is_none());
        }
    }

    #[test]
    fn retired_restarts_reads_the_annotation() {
        let object = object(serde_json::json!({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "mnist", "annotations": {RETIRED_RESTARTS_ANNOTATION: "3"}},
            "spec": {"tfReplicaSpecs": {}}
        }));
        let job = read(JobKind::TFJob, &object).expect("reads");
        assert_eq!(retired_restarts(&job), 3);
    }
}
