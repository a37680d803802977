//! What a replica needs (CPU, memory, GPUs) and what this machine has.

use std::process::Command;

pub use trainctl_api::resources::{ContainerLimits, GPU_RESOURCE, InvalidResource, ReplicaNeeds};

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
    use super::*;

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
