//! What a cached child ([`CachedPod`](super::cached_pod::CachedPod),
//! [`CachedService`](super::cached_service::CachedService)) keeps of its metadata: what identifies
//! it and its controller, with the labels a reconcile reads taken out of the label map.
//!
//! The operator caches every pod and service of its jobs ([`children`](super::children)), so each
//! byte kept is kept 20,000 times at 10,000 pods. A label map costs about 800 bytes even with the
//! three labels that are read (a `BTreeMap` node holds room for eleven entries); taken out as
//! [`ChildLabels`], the same facts take about 100.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use trainctl_api::ReplicaType;
use trainctl_engine::ReplicaSlot;
use trainctl_engine::naming::{JOB_NAME_LABEL, REPLICA_TYPE_LABEL, replica_index};

/// What a child's labels say that a reconcile reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildLabels {
    /// The job it was made for (`training.kubeflow.org/job-name`), which a job without a uid
    /// (never stored) goes by.
    pub job_name: Option<String>,
    /// The replica slot its `replica-type` and `replica-index` labels name.
    pub slot: Option<ReplicaSlot>,
}

/// Drops from an object's metadata what no reconcile reads, and returns the labels that are
/// read: `managedFields` (often the largest part of a small object), annotations, finalizers, the
/// generated fields, the resource version (the watch has read it already) and the label map go.
pub fn slim_meta(metadata: &mut ObjectMeta) -> ChildLabels {
    metadata.managed_fields = None;
    metadata.annotations = None;
    metadata.finalizers = None;
    metadata.generate_name = None;
    metadata.creation_timestamp = None;
    metadata.resource_version = None;
    let Some(mut labels) = metadata.labels.take() else {
        return ChildLabels::default();
    };
    let slot = labels.get(REPLICA_TYPE_LABEL).and_then(|replica_type| {
        let replica_type = ReplicaType::parse(replica_type);
        let index = replica_index(&replica_type, &labels)?;
        Some(ReplicaSlot::new(replica_type, index))
    });
    ChildLabels {
        job_name: labels.remove(JOB_NAME_LABEL),
        slot,
    }
}

/// Implements [`kube::Resource`] for a cached type (a struct with a `metadata: ObjectMeta`
/// field) as the Kubernetes kind it is read from: its watch lists and watches that kind's
/// objects, decoded into the cached type.
macro_rules! read_as {
    ($cached:ty, $kind:ty) => {
        #[doc = concat!("Read from the API server as a `", stringify!($kind), "`.")]
        impl ::kube::Resource for $cached {
            type DynamicType = ();
            type Scope = ::k8s_openapi::NamespaceResourceScope;

            fn kind(&(): &()) -> ::std::borrow::Cow<'_, str> {
                ::std::borrow::Cow::Borrowed(<$kind as ::k8s_openapi::Resource>::KIND)
            }

            fn group(&(): &()) -> ::std::borrow::Cow<'_, str> {
                ::std::borrow::Cow::Borrowed(<$kind as ::k8s_openapi::Resource>::GROUP)
            }

            fn version(&(): &()) -> ::std::borrow::Cow<'_, str> {
                ::std::borrow::Cow::Borrowed(<$kind as ::k8s_openapi::Resource>::VERSION)
            }

            fn plural(&(): &()) -> ::std::borrow::Cow<'_, str> {
                ::std::borrow::Cow::Borrowed(<$kind as ::k8s_openapi::Resource>::URL_PATH_SEGMENT)
            }

            fn meta(&self) -> &ObjectMeta {
                &self.metadata
            }

            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }
    };
}
pub(crate) use read_as;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{TF_JOB, job, owned_pod};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, Time};

    #[test]
    fn slim_metadata_keeps_what_identifies_a_child_its_owner_and_its_slot() {
        let job = job(TF_JOB);
        let mut pod = owned_pod(&job, "mnist-worker-1");
        pod.metadata.managed_fields = Some(vec![ManagedFieldsEntry::default()]);
        pod.metadata.annotations = Some([("a".to_owned(), "b".to_owned())].into());
        pod.metadata.creation_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        pod.metadata.resource_version = Some("12".to_owned());
        pod.metadata
            .labels
            .get_or_insert_default()
            .insert("team".to_owned(), "vision".to_owned());
        let full = pod.metadata.clone();
        let labels = slim_meta(&mut pod.metadata);
        assert_eq!(
            labels,
            ChildLabels {
                job_name: Some("mnist".to_owned()),
                slot: Some(ReplicaSlot::new(ReplicaType::Worker, 1)),
            }
        );
        assert_eq!(
            pod.metadata,
            ObjectMeta {
                name: full.name,
                namespace: full.namespace,
                uid: full.uid,
                owner_references: full.owner_references,
                ..ObjectMeta::default()
            }
        );
    }

    #[test]
    fn labels_that_name_no_slot_give_none() {
        let labels = |pairs: &[(&str, &str)]| {
            let mut metadata = ObjectMeta {
                labels: Some(
                    pairs
                        .iter()
                        .map(|&(key, value)| (key.to_owned(), value.to_owned()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            };
            slim_meta(&mut metadata)
        };
        assert_eq!(labels(&[]).slot, None);
        assert_eq!(
            labels(&[
                (REPLICA_TYPE_LABEL, "worker"),
                ("training.kubeflow.org/replica-index", "x")
            ])
            .slot,
            None
        );
        // The MPI launcher has no index label: it is index 0.
        assert_eq!(
            labels(&[(REPLICA_TYPE_LABEL, "launcher")]).slot,
            Some(ReplicaSlot::new(ReplicaType::Launcher, 0))
        );
        assert_eq!(
            slim_meta(&mut ObjectMeta::default()),
            ChildLabels::default()
        );
    }
}
