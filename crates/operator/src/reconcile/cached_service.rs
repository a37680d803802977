//! A Service as the children's cache holds it ([`children`](super::children)): its slimmed
//! metadata and the labels that are read ([`cached_meta`](super::cached_meta)). A job's services
//! are only ever looked at for whether they exist and which replica slot they stand for.

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

use super::cached_meta::{ChildLabels, read_as, slim_meta};

/// A Service as cached: its metadata and, once [slimmed](CachedService::slim), its labels'
/// facts.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct CachedService {
    /// The service's metadata.
    pub metadata: ObjectMeta,
    /// What its labels say, taken out of the metadata by [`CachedService::slim`].
    #[serde(skip)]
    pub labels: ChildLabels,
}

impl CachedService {
    /// Keeps only what is read of the metadata ([`slim_meta`]), the labels taken out.
    pub fn slim(&mut self) {
        self.labels = slim_meta(&mut self.metadata);
    }
}

read_as!(CachedService, Service);

#[cfg(test)]
mod tests {
    use super::*;
    use kube::Resource as _;
    use serde_json::json;
    use trainctl_api::ReplicaType;
    use trainctl_engine::ReplicaSlot;

    #[test]
    fn a_cached_service_is_read_as_a_service_and_keeps_its_slot() {
        assert_eq!(
            CachedService::url_path(&(), Some("ml")),
            "/api/v1/namespaces/ml/services"
        );
        let mut service: CachedService = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "mnist-ps-1", "namespace": "ml", "uid": "u",
                "labels": {"training.kubeflow.org/replica-type": "ps",
                    "training.kubeflow.org/replica-index": "1"}},
            "spec": {"clusterIP": "None", "ports": [{"port": 2222}]}
        }))
        .expect("a service");
        service.slim();
        assert_eq!(service.metadata.name.as_deref(), Some("mnist-ps-1"));
        assert_eq!(service.metadata.labels, None);
        assert_eq!(
            service.labels.slot,
            Some(ReplicaSlot::new(ReplicaType::PS, 1))
        );
    }
}
