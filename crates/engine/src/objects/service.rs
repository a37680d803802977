//! One replica's headless service: a stable DNS name for its pod.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use trainctl_api::{ReplicaType, TrainingJob};

use super::owner::owner_reference;
use crate::naming::{replica_name, service_labels};

/// The headless service of replica slot `(replica_type, index)`, or `None` for MPI (which has
/// none) and for a type the job does not have.
///
/// It exposes every port of the default container, sorted by name **[fix: upstream's order was
/// Go's random map order]**; of two ports with the same name the last one counts, as upstream.
#[must_use]
pub fn build_service(job: &TrainingJob, replica_type: &ReplicaType, index: i32) -> Option<Service> {
    let container_name = job.kind().default_container()?;
    let replica = job.replica_specs().get(replica_type)?;
    let ports: BTreeMap<String, i32> = replica
        .template
        .spec
        .iter()
        .flat_map(|pod| &pod.containers)
        .filter(|container| container.name == container_name)
        .take(1)
        .flat_map(|container| container.ports.iter().flatten())
        .map(|port| (port.name.clone().unwrap_or_default(), port.container_port))
        .collect();
    let ports: Vec<ServicePort> = ports
        .into_iter()
        .map(|(name, port)| ServicePort {
            name: (!name.is_empty()).then_some(name),
            port,
            ..ServicePort::default()
        })
        .collect();
    let labels = service_labels(job, replica_type, index);
    Some(Service {
        metadata: ObjectMeta {
            name: Some(replica_name(job.name(), replica_type, index)),
            namespace: Some(job.namespace().to_owned()),
            labels: Some(labels.clone()),
            owner_references: Some(vec![owner_reference(job)]),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".to_owned()),
            selector: Some(labels),
            ports: (!ports.is_empty()).then_some(ports),
            ..ServiceSpec::default()
        }),
        status: None,
    })
}
