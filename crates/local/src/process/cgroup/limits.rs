//! A replica's resource limits in its cgroup, as the kubelet sets a container's: `memory.max`
//! and `cpu.max` in the cgroup v2 hierarchy where this process may give the `memory` and `cpu`
//! controllers to its children, else `memory.limit_in_bytes` and `cpu.cfs_quota_us` in the
//! controllers' cgroup v1 hierarchies (a hybrid system); and whether the kernel killed a process
//! of the replica for its memory limit (`oom_kill` in `memory.events`, or `memory.oom_control`).

use std::fs;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};
use trainctl_api::resources::ContainerLimits;

/// The CFS period the kubelet gives a container's CPU quota: 100 ms.
const CPU_PERIOD_MICROS: u64 = 100_000;

/// The smallest CPU quota the kernel takes: 1 ms a period.
const MIN_CPU_QUOTA_MICROS: u64 = 1_000;

/// A container's `resources.limits` that its cgroup enforces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// `limits.memory` in bytes: past it, the kernel reclaims and then kills (`OOMKilled`).
    pub memory_bytes: Option<u64>,
    /// `limits.cpu` in millicores: the replica gets that share of a CPU's time each period.
    pub cpu_millis: Option<u64>,
}

impl From<ContainerLimits> for Limits {
    fn from(limits: ContainerLimits) -> Limits {
        Limits {
            memory_bytes: limits.memory_bytes,
            cpu_millis: limits.cpu_millis,
        }
    }
}

/// A controller whose limits trainctl sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Controller {
    /// Memory: `limits.memory`.
    Memory,
    /// CPU bandwidth: `limits.cpu`.
    Cpu,
}

impl Controller {
    /// Both, in the order they are reported.
    pub(super) const ALL: [Controller; 2] = [Controller::Memory, Controller::Cpu];

    /// The controller's name in `cgroup.controllers` and `/proc/self/cgroup`.
    pub(super) fn name(self) -> &'static str {
        match self {
            Controller::Memory => "memory",
            Controller::Cpu => "cpu",
        }
    }

    /// Its place in [`Controller::ALL`].
    pub(super) fn index(self) -> usize {
        match self {
            Controller::Memory => 0,
            Controller::Cpu => 1,
        }
    }

    /// Whether `limits` sets a limit of this controller.
    pub(super) fn is_limited(self, limits: &Limits) -> bool {
        match self {
            Controller::Memory => limits.memory_bytes.is_some(),
            Controller::Cpu => limits.cpu_millis.is_some(),
        }
    }
}

/// The CPU quota of `millis` millicores per [`CPU_PERIOD_MICROS`], as the kubelet computes it.
fn cpu_quota_micros(millis: u64) -> u64 {
    (millis.saturating_mul(CPU_PERIOD_MICROS) / 1_000).max(MIN_CPU_QUOTA_MICROS)
}

/// Writes `controller`'s limit of `limits` to `cgroup`, in the cgroup v2 hierarchy (`unified`,
/// whose parent gives it the controller) or in that controller's v1 hierarchy. Memory: the
/// limit, no swap beyond it (where swap is accounted) and, in v2, the whole cgroup killed
/// together on an out-of-memory kill (`memory.oom.group`), as the kubelet does.
pub(super) fn write(
    cgroup: &Path,
    unified: bool,
    controller: Controller,
    limits: &Limits,
) -> io::Result<()> {
    match controller {
        Controller::Memory => {
            let Some(bytes) = limits.memory_bytes else {
                return Ok(());
            };
            let bytes = bytes.to_string();
            if unified {
                fs::write(cgroup.join("memory.max"), &bytes)?;
                let _ = fs::write(cgroup.join("memory.swap.max"), "0");
                let _ = fs::write(cgroup.join("memory.oom.group"), "1");
            } else {
                fs::write(cgroup.join("memory.limit_in_bytes"), &bytes)?;
                let _ = fs::write(cgroup.join("memory.memsw.limit_in_bytes"), &bytes);
            }
        }
        Controller::Cpu => {
            let Some(millis) = limits.cpu_millis else {
                return Ok(());
            };
            let quota = cpu_quota_micros(millis);
            if unified {
                fs::write(
                    cgroup.join("cpu.max"),
                    format!("{quota} {CPU_PERIOD_MICROS}"),
                )?;
            } else {
                fs::write(
                    cgroup.join("cpu.cfs_period_us"),
                    CPU_PERIOD_MICROS.to_string(),
                )?;
                fs::write(cgroup.join("cpu.cfs_quota_us"), quota.to_string())?;
            }
        }
    }
    Ok(())
}

/// Whether the kernel's out-of-memory killer killed a process in `cgroup` (a v2 cgroup's
/// `memory.events`, or a v1 memory cgroup's `memory.oom_control`).
pub(super) fn oom_killed(cgroup: &Path) -> bool {
    ["memory.events", "memory.oom_control"]
        .iter()
        .any(|file| fs::read_to_string(cgroup.join(file)).is_ok_and(|text| oom_kills(&text) > 0))
}

/// The `oom_kill` count of a `memory.events` or `memory.oom_control`.
fn oom_kills(text: &str) -> u64 {
    text.lines()
        .find_map(|line| line.strip_prefix("oom_kill "))
        .and_then(|count| count.trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_limits_become_the_kubelets_quota_per_100_ms() {
        assert_eq!(cpu_quota_micros(500), 50_000);
        assert_eq!(cpu_quota_micros(2_000), 200_000);
        assert_eq!(cpu_quota_micros(1), MIN_CPU_QUOTA_MICROS);
    }

    #[test]
    fn out_of_memory_kills_are_read_from_either_version() {
        let v2 = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n";
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n";
        assert_eq!(oom_kills(v2), 1);
        assert_eq!(oom_kills(v1), 2);
        assert_eq!(oom_kills("oom_kill_disable 0\nunder_oom 0\n"), 0);
    }
}
