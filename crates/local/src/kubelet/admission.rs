//! Gang admission: a job starts only when all its replicas fit on this machine at once.
//!
//! A job that needs more than the machine has in all can never start and fails at once; one that
//! needs more than is free now waits, described by the engine's [`Shortfall`]s. GPUs are handed
//! out as disjoint index sets, lowest indices first, slots in `(type, index)` order, so the same
//! inputs always give the same allocation. Whether a job fits is counted per resource
//! ([`Amounts`]): any free GPU will do, whichever its index.
//!
//! On a server, a job that fits also needs the admission queue's word ([`QueueVerdict`]).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use trainctl_api::ReplicaType;
use trainctl_engine::reconcile::{Resource, Shortfall};

use super::resources::{NodeCapacity, ReplicaNeeds};

/// What an admitted job holds while it runs, as the store keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceHold {
    /// CPU in millicores.
    pub cpu_millis: u64,
    /// Memory in bytes.
    pub memory_bytes: u64,
    /// GPU indices.
    pub gpus: Vec<u32>,
}

/// What is free on this machine now: its capacity less what admitted jobs hold.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FreeResources {
    /// CPU in millicores.
    pub cpu_millis: u64,
    /// Memory in bytes.
    pub memory_bytes: u64,
    /// The free GPUs' indices.
    pub gpus: BTreeSet<u32>,
}

impl FreeResources {
    /// Everything the machine has, as before any job is admitted.
    #[must_use]
    pub fn all_of(capacity: &NodeCapacity) -> Self {
        FreeResources {
            cpu_millis: capacity.cpu_millis,
            memory_bytes: capacity.memory_bytes,
            gpus: capacity.gpus.iter().copied().collect(),
        }
    }

    /// Takes what an admitted job holds.
    pub fn reserve(&mut self, needs: &[ReplicaNeeds], allocation: &Allocation) {
        let total = Amounts::of(needs);
        self.cpu_millis = self.cpu_millis.saturating_sub(total.cpu_millis);
        self.memory_bytes = self.memory_bytes.saturating_sub(total.memory_bytes);
        for gpu in allocation.gpus.values().flatten() {
            self.gpus.remove(gpu);
        }
    }

    /// Gives back what a finished job held.
    pub fn release(&mut self, needs: &[ReplicaNeeds], allocation: &Allocation) {
        let total = Amounts::of(needs);
        self.cpu_millis = self.cpu_millis.saturating_add(total.cpu_millis);
        self.memory_bytes = self.memory_bytes.saturating_add(total.memory_bytes);
        self.gpus.extend(allocation.gpus.values().flatten());
    }
}

/// The GPUs given to each replica slot of an admitted job.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Allocation {
    /// GPU indices by slot, ascending; every slot of the job is present, possibly with none.
    pub gpus: BTreeMap<(ReplicaType, i32), Vec<u32>>,
}

impl Allocation {
    /// `CUDA_VISIBLE_DEVICES` and `NVIDIA_VISIBLE_DEVICES` for a slot: its GPUs, comma-separated.
    /// A slot without GPUs sees none (`CUDA_VISIBLE_DEVICES` empty, `NVIDIA_VISIBLE_DEVICES=none`),
    /// as a pod without a GPU limit would on Kubernetes.
    #[must_use]
    pub fn device_env(&self, slot: &(ReplicaType, i32)) -> [(&'static str, String); 2] {
        let gpus = self.gpus.get(slot).map_or(&[][..], Vec::as_slice);
        let list = gpus
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let nvidia = if list.is_empty() {
            "none".to_owned()
        } else {
            list.clone()
        };
        [
            ("CUDA_VISIBLE_DEVICES", list),
            ("NVIDIA_VISIBLE_DEVICES", nvidia),
        ]
    }
}

/// Whether a job may start now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// All replicas fit: start them with these GPUs.
    Admitted(Allocation),
    /// The job fits the machine but not what is free now; it waits for these resources.
    Wait(Vec<Shortfall>),
    /// The job needs more than the machine has in all; the message says what and how much.
    NeverFits(String),
}

/// What a server's admission queue says to a job that asks to take its resources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueVerdict {
    /// Take them now: the job is at the head of the queue and fits, or it fits in what the jobs
    /// ahead of it leave over (backfill). The job has left the queue.
    Take,
    /// The job is at the head of the queue but does not fit what is free: it waits for resources.
    WaitForResources,
    /// The job is behind others and may not start before them: it waits in the queue.
    WaitInQueue,
    /// The namespace's quota cannot hold the job now: it waits, for this reason.
    WaitForQuota(String),
    /// The job asks for more than its namespace's quota allows in all: it fails, for this
    /// reason.
    NeverFitsQuota(String),
}

/// Decides whether a job with these replica needs can start, given what is free and what the
/// machine has in all.
#[must_use]
pub fn admit(
    job_needs: &[ReplicaNeeds],
    free: &FreeResources,
    capacity: &NodeCapacity,
) -> Admission {
    let total = Amounts::of(job_needs);
    let has = Amounts::capacity(capacity);
    let short = total.short_of(&has);
    if !short.is_empty() {
        let never: Vec<String> = short
            .iter()
            .map(|&(resource, needed, has)| {
                format!(
                    "{} but this machine has {}",
                    amount_words(resource, needed),
                    amount_words(resource, has)
                )
            })
            .collect();
        let flags: Vec<String> = short
            .iter()
            .map(|&(resource, needed, _)| machine_flag(resource, needed))
            .collect();
        return Admission::NeverFits(format!(
            "the job can never start here: its replicas together need {}; lower their resource \
             requests, run the job on a larger machine, or pretend this one is larger with {}",
            never.join(", and "),
            flags.join(" ")
        ));
    }
    let shortfalls: Vec<Shortfall> = total
        .short_of(&Amounts::free(free))
        .into_iter()
        .map(|(resource, needed, free)| Shortfall {
            resource,
            needed,
            free,
        })
        .collect();
    if !shortfalls.is_empty() {
        return Admission::Wait(shortfalls);
    }
    let mut slots: Vec<&ReplicaNeeds> = job_needs.iter().collect();
    slots.sort_by(|a, b| a.slot.cmp(&b.slot));
    let mut free_gpus = free.gpus.iter().copied();
    let gpus = slots
        .into_iter()
        .map(|needs| {
            let taken: Vec<u32> = free_gpus.by_ref().take(needs.gpus as usize).collect();
            (needs.slot.clone(), taken)
        })
        .collect();
    Admission::Admitted(Allocation { gpus })
}

/// An amount of each resource admission counts: what a job asks for (its replicas together),
/// what is free, or what the machine has. GPUs are counted, not named: any free GPU will do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Amounts {
    /// CPU in millicores.
    pub cpu_millis: u64,
    /// Memory in bytes.
    pub memory_bytes: u64,
    /// Whole GPUs.
    pub gpus: u64,
}

impl Amounts {
    /// What a job's replicas ask for together.
    #[must_use]
    pub fn of(needs: &[ReplicaNeeds]) -> Self {
        needs
            .iter()
            .fold(Amounts::default(), |total, needs| Amounts {
                cpu_millis: total.cpu_millis.saturating_add(needs.cpu_millis),
                memory_bytes: total.memory_bytes.saturating_add(needs.memory_bytes),
                gpus: total.gpus.saturating_add(u64::from(needs.gpus)),
            })
    }

    /// What is free.
    #[must_use]
    pub fn free(free: &FreeResources) -> Self {
        Amounts {
            cpu_millis: free.cpu_millis,
            memory_bytes: free.memory_bytes,
            gpus: free.gpus.len() as u64,
        }
    }

    /// What the machine has in all.
    #[must_use]
    pub fn capacity(capacity: &NodeCapacity) -> Self {
        Amounts {
            cpu_millis: capacity.cpu_millis,
            memory_bytes: capacity.memory_bytes,
            gpus: capacity.gpus.len() as u64,
        }
    }

    /// Each resource with its amount, in the order admission reports them.
    #[must_use]
    pub fn each(&self) -> [(Resource, u64); 3] {
        [
            (Resource::Gpu, self.gpus),
            (Resource::CpuMillis, self.cpu_millis),
            (Resource::MemoryBytes, self.memory_bytes),
        ]
    }

    /// The resources of which `room` holds less than these amounts, as `(resource, these
    /// amounts, room's)`; empty when these amounts fit in `room`.
    #[must_use]
    pub fn short_of(&self, room: &Amounts) -> Vec<(Resource, u64, u64)> {
        self.each()
            .into_iter()
            .zip(room.each())
            .filter(|((_, wanted), (_, has))| wanted > has)
            .map(|((resource, wanted), (_, has))| (resource, wanted, has))
            .collect()
    }

    /// Whether these amounts fit in `room`, resource by resource.
    #[must_use]
    pub fn fits_in(&self, room: &Amounts) -> bool {
        self.short_of(room).is_empty()
    }

    /// These amounts plus `other`, resource by resource.
    #[must_use]
    pub fn plus(&self, other: &Amounts) -> Amounts {
        Amounts {
            cpu_millis: self.cpu_millis.saturating_add(other.cpu_millis),
            memory_bytes: self.memory_bytes.saturating_add(other.memory_bytes),
            gpus: self.gpus.saturating_add(other.gpus),
        }
    }

    /// These amounts less `other`, resource by resource, never below zero.
    #[must_use]
    pub fn minus(&self, other: &Amounts) -> Amounts {
        Amounts {
            cpu_millis: self.cpu_millis.saturating_sub(other.cpu_millis),
            memory_bytes: self.memory_bytes.saturating_sub(other.memory_bytes),
            gpus: self.gpus.saturating_sub(other.gpus),
        }
    }

    /// The smaller of these amounts and `other`, resource by resource.
    #[must_use]
    pub fn min(&self, other: &Amounts) -> Amounts {
        Amounts {
            cpu_millis: self.cpu_millis.min(other.cpu_millis),
            memory_bytes: self.memory_bytes.min(other.memory_bytes),
            gpus: self.gpus.min(other.gpus),
        }
    }
}

impl std::fmt::Display for Amounts {
    /// `2 CPUs, 4Gi memory, 1 GPU`, naming only what is not zero; `nothing` for none.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let words: Vec<String> = [
            (Resource::CpuMillis, self.cpu_millis),
            (Resource::MemoryBytes, self.memory_bytes),
            (Resource::Gpu, self.gpus),
        ]
        .into_iter()
        .filter(|&(_, amount)| amount > 0)
        .map(|(resource, amount)| amount_words(resource, amount))
        .collect();
        if words.is_empty() {
            f.write_str("nothing")
        } else {
            f.write_str(&words.join(", "))
        }
    }
}

/// An amount in words: `2 GPUs`, `1500m CPU`, `4Gi memory`.
#[must_use]
/// The flag of `run` and `server` that makes this machine count `amount` of `resource`
/// (`--gpus 4`, `--cpus 8.5`, `--memory 900Gi`).
fn machine_flag(resource: Resource, amount: u64) -> String {
    match resource {
        Resource::Gpu => format!("--gpus {amount}"),
        Resource::CpuMillis if amount.is_multiple_of(1_000) => format!("--cpus {}", amount / 1_000),
        Resource::CpuMillis => format!("--cpus {amount}m"),
        Resource::MemoryBytes => {
            let words = amount_words(resource, amount.next_multiple_of(1 << 20));
            format!("--memory {}", words.trim_end_matches(" memory"))
        }
    }
}

/// `amount` of `resource` in words: `2 GPUs`, `1500m CPU`, `4Gi memory`; memory that is no
/// whole number of MiB (a machine's) in GiB to one decimal: `23.5Gi memory`.
#[must_use]
pub fn amount_words(resource: Resource, amount: u64) -> String {
    match resource {
        Resource::Gpu if amount == 1 => "1 GPU".to_owned(),
        Resource::Gpu => format!("{amount} GPUs"),
        Resource::CpuMillis if amount == 1_000 => "1 CPU".to_owned(),
        Resource::CpuMillis if amount.is_multiple_of(1_000) => format!("{} CPUs", amount / 1_000),
        Resource::CpuMillis => format!("{amount}m CPU"),
        Resource::MemoryBytes => {
            let unit = ["Ei", "Pi", "Ti", "Gi", "Mi", "Ki"]
                .iter()
                .zip([60, 50, 40, 30, 20, 10])
                .find(|&(_, shift)| amount != 0 && amount.is_multiple_of(1 << shift));
            match unit {
                Some((suffix, shift)) if shift >= 20 => {
                    format!("{}{suffix} memory", amount >> shift)
                }
                _ if amount >= 1 << 30 => {
                    #[expect(clippy::cast_precision_loss, reason = "shown to one decimal")]
                    let gib = amount as f64 / f64::from(1u32 << 30);
                    format!("{gib:.1}Gi memory")
                }
                Some((suffix, shift)) => format!("{}{suffix} memory", amount >> shift),
                None => format!("{amount} bytes of memory"),
            }
        }
    }
}

#[cfg(test)]
mod tests;
