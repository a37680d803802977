//! What a replica's pod asks of a node: CPU, memory and GPUs, counted from its containers'
//! requests and limits as the Kubernetes scheduler counts them. The local runtime admits replicas
//! by it, the server's quotas count it, and the CLI shows it for a cluster's pods.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::ReplicaType;
use crate::quantity::{self, InvalidQuantity};

/// The extended resource that counts NVIDIA GPUs.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";

/// A container's resource amount that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("container `{container}`: resources {field}: {problem}")]
pub struct InvalidResource {
    /// The container's name.
    pub container: String,
    /// Where the amount is, e.g. `requests.cpu`.
    pub field: String,
    /// What is wrong with the amount.
    pub problem: InvalidQuantity,
}

/// What one replica slot needs to start.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReplicaNeeds {
    /// The replica slot, `(type, index)`.
    pub slot: (ReplicaType, i32),
    /// CPU in millicores (requests, else limits).
    pub cpu_millis: u64,
    /// Memory in bytes (requests, else limits).
    pub memory_bytes: u64,
    /// Whole GPUs (`nvidia.com/gpu` limits, else requests).
    pub gpus: u32,
}

impl ReplicaNeeds {
    /// The needs of a pod: its containers together, or its largest init container if that is
    /// more, as the Kubernetes scheduler counts them.
    pub fn of_pod(
        replica_type: ReplicaType,
        index: i32,
        pod: &PodSpec,
    ) -> Result<Self, InvalidResource> {
        let mut needs = ReplicaNeeds {
            slot: (replica_type, index),
            cpu_millis: 0,
            memory_bytes: 0,
            gpus: 0,
        };
        for container in &pod.containers {
            let (cpu, memory, gpus) = container_needs(container)?;
            needs.cpu_millis = needs.cpu_millis.saturating_add(cpu);
            needs.memory_bytes = needs.memory_bytes.saturating_add(memory);
            needs.gpus = needs.gpus.saturating_add(gpus);
        }
        for container in pod.init_containers.iter().flatten() {
            let (cpu, memory, gpus) = container_needs(container)?;
            needs.cpu_millis = needs.cpu_millis.max(cpu);
            needs.memory_bytes = needs.memory_bytes.max(memory);
            needs.gpus = needs.gpus.max(gpus);
        }
        Ok(needs)
    }
}

/// A container's CPU and memory limits (`limits.cpu`, `limits.memory`), in millicores and
/// bytes: what the kubelet enforces in its cgroup.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ContainerLimits {
    /// `limits.cpu` in millicores.
    pub cpu_millis: Option<u64>,
    /// `limits.memory` in bytes.
    pub memory_bytes: Option<u64>,
}

impl ContainerLimits {
    /// The limits of `container`.
    pub fn of(container: &Container) -> Result<Self, InvalidResource> {
        let limits = container.resources.as_ref().and_then(|r| r.limits.as_ref());
        let read = |resource: &str, read: fn(&Quantity) -> Result<u64, InvalidQuantity>| {
            limits
                .and_then(|limits| limits.get(resource))
                .map(|quantity| {
                    read(quantity).map_err(|problem| InvalidResource {
                        container: container.name.clone(),
                        field: format!("limits.{resource}"),
                        problem,
                    })
                })
                .transpose()
        };
        Ok(ContainerLimits {
            cpu_millis: read("cpu", quantity::to_millis)?,
            memory_bytes: read("memory", quantity::to_units)?,
        })
    }
}

/// A container's `(millicores, bytes, GPUs)`.
fn container_needs(container: &Container) -> Result<(u64, u64, u32), InvalidResource> {
    let resources = container.resources.as_ref();
    let requests = resources.and_then(|r| r.requests.as_ref());
    let limits = resources.and_then(|r| r.limits.as_ref());
    let amount = |first: Option<&BTreeMap<String, Quantity>>,
                  first_name: &str,
                  second: Option<&BTreeMap<String, Quantity>>,
                  second_name: &str,
                  resource: &str,
                  read: fn(&Quantity) -> Result<u64, InvalidQuantity>| {
        let (field, quantity) = match first.and_then(|m| m.get(resource)) {
            Some(quantity) => (first_name, quantity),
            None => match second.and_then(|m| m.get(resource)) {
                Some(quantity) => (second_name, quantity),
                None => return Ok(0),
            },
        };
        read(quantity).map_err(|problem| InvalidResource {
            container: container.name.clone(),
            field: format!("{field}.{resource}"),
            problem,
        })
    };
    let cpu = amount(
        requests,
        "requests",
        limits,
        "limits",
        "cpu",
        quantity::to_millis,
    )?;
    let memory = amount(
        requests,
        "requests",
        limits,
        "limits",
        "memory",
        quantity::to_units,
    )?;
    let gpus = amount(
        limits,
        "limits",
        requests,
        "requests",
        GPU_RESOURCE,
        quantity::to_units,
    )?;
    Ok((cpu, memory, u32::try_from(gpus).unwrap_or(u32::MAX)))
}

#[cfg(test)]
pub(crate) mod tests {
    use k8s_openapi::api::core::v1::ResourceRequirements;

    use super::*;

    /// A container `name` with these `requests` and `limits` (resource, quantity).
    pub(crate) fn container(
        name: &str,
        requests: &[(&str, &str)],
        limits: &[(&str, &str)],
    ) -> Container {
        let map = |pairs: &[(&str, &str)]| {
            Some(
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
                    .collect(),
            )
        };
        Container {
            name: name.to_owned(),
            resources: Some(ResourceRequirements {
                requests: map(requests),
                limits: map(limits),
                ..ResourceRequirements::default()
            }),
            ..Container::default()
        }
    }

    fn needs(
        containers: Vec<Container>,
        init: Vec<Container>,
    ) -> Result<ReplicaNeeds, InvalidResource> {
        let pod = PodSpec {
            containers,
            init_containers: Some(init),
            ..PodSpec::default()
        };
        ReplicaNeeds::of_pod(ReplicaType::Worker, 0, &pod)
    }

    #[test]
    fn requests_win_over_limits_for_cpu_and_memory() {
        let c = container(
            "main",
            &[("cpu", "500m"), ("memory", "1Gi")],
            &[("cpu", "2"), ("memory", "2Gi")],
        );
        let needs = needs(vec![c], vec![]).unwrap();
        assert_eq!((needs.cpu_millis, needs.memory_bytes), (500, 1 << 30));
    }

    #[test]
    fn limits_stand_in_for_missing_requests() {
        let c = container("main", &[], &[("cpu", "2"), ("memory", "1G")]);
        let needs = needs(vec![c], vec![]).unwrap();
        assert_eq!(
            (needs.cpu_millis, needs.memory_bytes),
            (2_000, 1_000_000_000)
        );
    }

    #[test]
    fn gpus_come_from_limits() {
        let c = container("main", &[(GPU_RESOURCE, "1")], &[(GPU_RESOURCE, "2")]);
        assert_eq!(needs(vec![c], vec![]).unwrap().gpus, 2);
    }

    #[test]
    fn containers_add_up_and_init_containers_count_at_their_largest() {
        let a = container("a", &[("cpu", "1")], &[(GPU_RESOURCE, "1")]);
        let b = container("b", &[("cpu", "500m")], &[(GPU_RESOURCE, "1")]);
        let init = container("init", &[("cpu", "4")], &[]);
        let needs = needs(vec![a, b], vec![init]).unwrap();
        assert_eq!((needs.cpu_millis, needs.gpus), (4_000, 2));
    }

    #[test]
    fn no_resources_need_nothing() {
        let needs = needs(vec![Container::default()], vec![]).unwrap();
        assert_eq!(
            (needs.cpu_millis, needs.memory_bytes, needs.gpus),
            (0, 0, 0)
        );
    }

    #[test]
    fn invalid_amount_names_container_and_field() {
        let c = container("trainer", &[("memory", "lots")], &[]);
        let error = needs(vec![c], vec![]).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("container `trainer`: resources requests.memory: `lots`"),
            "{error}"
        );
    }
}
