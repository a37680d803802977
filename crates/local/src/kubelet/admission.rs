//! Gang admission: a job starts only when all its replicas fit on this machine at once.
//!
//! A job that needs more than the machine has in all can never start and fails at once; one that
//! needs more than is free now waits, described by the engine's [`Shortfall`]s. GPUs are handed
//! out as disjoint index sets, lowest indices first, slots in `(type, index)` order, so the same
//! inputs always give the same allocation.

use std::collections::{BTreeMap, BTreeSet};

use trainctl_api::ReplicaType;
use trainctl_engine::reconcile::{Resource, Shortfall};

use super::resources::{NodeCapacity, ReplicaNeeds};

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
        let total = Totals::of(needs);
        self.cpu_millis = self.cpu_millis.saturating_sub(total.cpu_millis);
        self.memory_bytes = self.memory_bytes.saturating_sub(total.memory_bytes);
        for gpu in allocation.gpus.values().flatten() {
            self.gpus.remove(gpu);
        }
    }

    /// Gives back what a finished job held.
    pub fn release(&mut self, needs: &[ReplicaNeeds], allocation: &Allocation) {
        let total = Totals::of(needs);
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

/// Decides whether a job with these replica needs can start, given what is free and what the
/// machine has in all.
#[must_use]
pub fn admit(
    job_needs: &[ReplicaNeeds],
    free: &FreeResources,
    capacity: &NodeCapacity,
) -> Admission {
    let total = Totals::of(job_needs);
    let amounts = [
        (
            Resource::Gpu,
            total.gpus,
            capacity.gpus.len() as u64,
            free.gpus.len() as u64,
        ),
        (
            Resource::CpuMillis,
            total.cpu_millis,
            capacity.cpu_millis,
            free.cpu_millis,
        ),
        (
            Resource::MemoryBytes,
            total.memory_bytes,
            capacity.memory_bytes,
            free.memory_bytes,
        ),
    ];
    let never: Vec<String> = amounts
        .iter()
        .filter(|(_, needed, has, _)| needed > has)
        .map(|&(resource, needed, has, _)| {
            format!(
                "{} but this machine has {}",
                words(resource, needed),
                words(resource, has)
            )
        })
        .collect();
    if !never.is_empty() {
        return Admission::NeverFits(format!(
            "the job can never start here: its replicas together need {}; lower their resource \
             requests or run the job on a larger machine",
            never.join(", and ")
        ));
    }
    let shortfalls: Vec<Shortfall> = amounts
        .iter()
        .filter(|(_, needed, _, free)| needed > free)
        .map(|&(resource, needed, _, free)| Shortfall {
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

/// A job's needs summed over its replicas.
struct Totals {
    cpu_millis: u64,
    memory_bytes: u64,
    gpus: u64,
}

impl Totals {
    fn of(needs: &[ReplicaNeeds]) -> Self {
        needs.iter().fold(
            Totals {
                cpu_millis: 0,
                memory_bytes: 0,
                gpus: 0,
            },
            |total, needs| Totals {
                cpu_millis: total.cpu_millis.saturating_add(needs.cpu_millis),
                memory_bytes: total.memory_bytes.saturating_add(needs.memory_bytes),
                gpus: total.gpus.saturating_add(u64::from(needs.gpus)),
            },
        )
    }
}

/// An amount in words: `2 GPUs`, `1.5 CPUs`, `4Gi memory`.
fn words(resource: Resource, amount: u64) -> String {
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
                Some((suffix, shift)) => format!("{}{suffix} memory", amount >> shift),
                None => format!("{amount} bytes of memory"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(index: i32, gpus: u32) -> ReplicaNeeds {
        ReplicaNeeds {
            slot: (ReplicaType::Worker, index),
            cpu_millis: 1_000,
            memory_bytes: 1 << 30,
            gpus,
        }
    }

    fn machine(gpus: u32) -> NodeCapacity {
        NodeCapacity {
            cpu_millis: 8_000,
            memory_bytes: 16 << 30,
            gpus: (0..gpus).collect(),
        }
    }

    #[test]
    fn fitting_job_gets_disjoint_gpus_lowest_first() {
        let capacity = machine(4);
        let needs = [worker(1, 2), worker(0, 1)];
        let Admission::Admitted(allocation) =
            admit(&needs, &FreeResources::all_of(&capacity), &capacity)
        else {
            panic!("not admitted");
        };
        assert_eq!(allocation.gpus[&(ReplicaType::Worker, 0)], [0]);
        assert_eq!(allocation.gpus[&(ReplicaType::Worker, 1)], [1, 2]);
    }

    #[test]
    fn gpus_held_by_other_jobs_are_skipped() {
        let capacity = machine(4);
        let mut free = FreeResources::all_of(&capacity);
        free.gpus.remove(&0);
        free.gpus.remove(&2);
        let Admission::Admitted(allocation) = admit(&[worker(0, 2)], &free, &capacity) else {
            panic!("not admitted");
        };
        assert_eq!(allocation.gpus[&(ReplicaType::Worker, 0)], [1, 3]);
    }

    #[test]
    fn job_that_fits_later_waits_with_shortfalls() {
        let capacity = machine(4);
        let mut free = FreeResources::all_of(&capacity);
        free.gpus = BTreeSet::from([3]);
        free.cpu_millis = 1_500;
        assert_eq!(
            admit(&[worker(0, 1), worker(1, 1)], &free, &capacity),
            Admission::Wait(vec![
                Shortfall {
                    resource: Resource::Gpu,
                    needed: 2,
                    free: 1
                },
                Shortfall {
                    resource: Resource::CpuMillis,
                    needed: 2_000,
                    free: 1_500
                },
            ])
        );
    }

    #[test]
    fn gang_admission_starts_no_replica_unless_all_fit() {
        let capacity = machine(2);
        let mut free = FreeResources::all_of(&capacity);
        free.gpus = BTreeSet::from([0]);
        let admission = admit(&[worker(0, 1), worker(1, 1)], &free, &capacity);
        assert!(matches!(admission, Admission::Wait(_)), "{admission:?}");
    }

    #[test]
    fn job_larger_than_the_machine_never_fits() {
        let capacity = machine(4);
        let needs: Vec<ReplicaNeeds> = (0..3).map(|i| worker(i, 2)).collect();
        assert_eq!(
            admit(&needs, &FreeResources::all_of(&capacity), &capacity),
            Admission::NeverFits(
                "the job can never start here: its replicas together need 6 GPUs but this machine \
                 has 4 GPUs; lower their resource requests or run the job on a larger machine"
                    .to_owned()
            )
        );
    }

    #[test]
    fn never_fits_names_every_resource_short() {
        let capacity = machine(0);
        let needs = ReplicaNeeds {
            slot: (ReplicaType::Master, 0),
            cpu_millis: 8_500,
            memory_bytes: 32 << 30,
            gpus: 1,
        };
        let Admission::NeverFits(message) =
            admit(&[needs], &FreeResources::all_of(&capacity), &capacity)
        else {
            panic!("fits");
        };
        assert!(
            message.contains("1 GPU but this machine has 0 GPUs"),
            "{message}"
        );
        assert!(
            message.contains("8500m CPU but this machine has 8 CPUs"),
            "{message}"
        );
        assert!(
            message.contains("32Gi memory but this machine has 16Gi memory"),
            "{message}"
        );
    }

    #[test]
    fn job_without_needs_is_admitted_with_no_gpus() {
        let capacity = machine(0);
        let needs = ReplicaNeeds {
            slot: (ReplicaType::Worker, 0),
            cpu_millis: 0,
            memory_bytes: 0,
            gpus: 0,
        };
        let admission = admit(&[needs], &FreeResources::all_of(&capacity), &capacity);
        let Admission::Admitted(allocation) = admission else {
            panic!("not admitted");
        };
        assert_eq!(
            allocation.device_env(&(ReplicaType::Worker, 0)),
            [
                ("CUDA_VISIBLE_DEVICES", String::new()),
                ("NVIDIA_VISIBLE_DEVICES", "none".to_owned())
            ]
        );
    }

    #[test]
    fn device_env_lists_the_slots_gpus() {
        let allocation = Allocation {
            gpus: BTreeMap::from([((ReplicaType::Worker, 0), vec![2, 3])]),
        };
        assert_eq!(
            allocation.device_env(&(ReplicaType::Worker, 0)),
            [
                ("CUDA_VISIBLE_DEVICES", "2,3".to_owned()),
                ("NVIDIA_VISIBLE_DEVICES", "2,3".to_owned())
            ]
        );
    }

    #[test]
    fn reserve_and_release_are_inverse() {
        let capacity = machine(4);
        let all = FreeResources::all_of(&capacity);
        let needs = [worker(0, 2)];
        let Admission::Admitted(allocation) = admit(&needs, &all, &capacity) else {
            panic!("not admitted");
        };
        let mut free = all.clone();
        free.reserve(&needs, &allocation);
        assert_eq!(free.gpus, BTreeSet::from([2, 3]));
        assert_eq!(free.cpu_millis, 7_000);
        free.release(&needs, &allocation);
        assert_eq!(free, all);
    }
}
