//! What a replica needs (CPU, memory, GPUs) and what this machine has.

use std::collections::BTreeMap;
use std::process::Command;

use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use trainctl_api::ReplicaType;

use trainctl_api::quantity::{self, InvalidQuantity};

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

/// What this machine offers replicas.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NodeCapacity {
    /// CPU in millicores.
    pub cpu_millis: u64,
    /// Memory in bytes; `u64::MAX` when it could not be detected, so memory never holds a job back.
    pub memory_bytes: u64,
    /// The GPUs' indices (as `CUDA_VISIBLE_DEVICES` names them), ascending.
    pub gpus: Vec<u32>,
}

/// Settings that replace what [`NodeCapacity::detect`] finds (flags; tests faking GPUs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CapacityOverrides {
    /// CPU in millicores.
    pub cpu_millis: Option<u64>,
    /// Memory in bytes.
    pub memory_bytes: Option<u64>,
    /// The number of GPUs, indexed from 0; detection runs no `nvidia-smi` when this is set.
    pub gpus: Option<u32>,
}

impl NodeCapacity {
    /// Detects this machine: its available cores, `MemTotal` of `/proc/meminfo` and the GPUs
    /// `nvidia-smi` lists (none when it is missing or fails).
    #[must_use]
    pub fn detect() -> Self {
        Self::detect_with(&CapacityOverrides::default())
    }

    /// Detects this machine, taking each overridden amount as given instead.
    #[must_use]
    pub fn detect_with(overrides: &CapacityOverrides) -> Self {
        let cpu_millis = overrides.cpu_millis.unwrap_or_else(|| {
            let cores = std::thread::available_parallelism().map_or(1, usize::from);
            (cores as u64).saturating_mul(1_000)
        });
        let memory_bytes = overrides.memory_bytes.unwrap_or_else(|| {
            std::fs::read_to_string("/proc/meminfo")
                .ok()
                .and_then(|text| mem_total_bytes(&text))
                .unwrap_or(u64::MAX)
        });
        let gpus = match overrides.gpus {
            Some(count) => (0..count).collect(),
            None => detect_nvidia_gpus(),
        };
        NodeCapacity {
            cpu_millis,
            memory_bytes,
            gpus,
        }
    }
}

/// The GPU indices `nvidia-smi` lists; none without the NVIDIA driver, or when it is not
/// installed or fails.
fn detect_nvidia_gpus() -> Vec<u32> {
    // Without the driver there is nothing to ask (and no process to start).
    if !std::path::Path::new("/proc/driver/nvidia").exists() {
        return Vec::new();
    }
    Command::new("nvidia-smi")
        .args(["--query-gpu=index", "--format=csv,noheader"])
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| gpu_indices(&String::from_utf8_lossy(&output.stdout)))
        .unwrap_or_default()
}

/// The indices in `nvidia-smi --query-gpu=index --format=csv,noheader` output, ascending,
/// skipping lines that are not numbers.
fn gpu_indices(output: &str) -> Vec<u32> {
    let mut indices: Vec<u32> = output
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect();
    indices.sort_unstable();
    indices.dedup();
    indices
}

/// `MemTotal` of `/proc/meminfo` in bytes (the file says `kB`, meaning KiB).
fn mem_total_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))?;
    let mut words = line.split_whitespace();
    let amount: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => amount.checked_mul(1024),
        None => Some(amount),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ResourceRequirements;

    use super::*;

    fn container(name: &str, requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
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

    #[test]
    fn meminfo_total_is_read_in_kib() {
        let text = "MemTotal:       16318948 kB\nMemFree:         1234 kB\n";
        assert_eq!(mem_total_bytes(text), Some(16_318_948 * 1024));
    }

    #[test]
    fn odd_meminfo_gives_nothing_rather_than_a_panic() {
        for text in [
            "",
            "MemTotal:",
            "MemTotal: lots kB",
            "MemTotal: 12 MB",
            "MemFree: 1 kB",
            "MemTotal: 99999999999999999999 kB",
        ] {
            assert_eq!(mem_total_bytes(text), None, "{text:?}");
        }
    }

    #[test]
    fn nvidia_smi_indices_are_sorted_and_junk_skipped() {
        assert_eq!(gpu_indices("1\n0\n\n3\nNo devices were found\n"), [0, 1, 3]);
        assert!(gpu_indices("").is_empty());
    }

    #[test]
    fn overrides_replace_detection() {
        let capacity = NodeCapacity::detect_with(&CapacityOverrides {
            cpu_millis: Some(8_000),
            memory_bytes: Some(1 << 34),
            gpus: Some(4),
        });
        assert_eq!(
            capacity,
            NodeCapacity {
                cpu_millis: 8_000,
                memory_bytes: 1 << 34,
                gpus: vec![0, 1, 2, 3],
            }
        );
    }

    #[test]
    fn detection_finds_at_least_one_core() {
        let capacity = NodeCapacity::detect_with(&CapacityOverrides {
            gpus: Some(0),
            ..CapacityOverrides::default()
        });
        assert!(capacity.cpu_millis >= 1_000);
        assert!(capacity.memory_bytes > 0);
    }
}
