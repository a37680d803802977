//! Gang admission against the machine, shared with every other trainctl process through the
//! store: what other running jobs hold is not free.

use serde::{Deserialize, Serialize};
use trainctl_engine::reconcile::Shortfall;

use crate::admission::{Admission, Allocation, FreeResources, admit};
use crate::resources::{NodeCapacity, ReplicaNeeds};
use crate::store::{Store, StoreError};

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

/// The outcome of one admission attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// Admitted with these GPUs; the store now records the hold.
    Admitted(Allocation),
    /// Not enough is free now.
    Wait(Vec<Shortfall>),
    /// The machine is too small for the job.
    NeverFits(String),
}

/// Tries to admit the job `uid` with `needs` on a machine of `capacity`.
pub fn try_admit(
    store: &mut Store,
    uid: &str,
    needs: &[ReplicaNeeds],
    capacity: &NodeCapacity,
) -> Result<Attempt, StoreError> {
    let mut attempt = None;
    store.reserve(uid, |holds: Vec<ResourceHold>| {
        let mut free = FreeResources::all_of(capacity);
        for hold in &holds {
            free.cpu_millis = free.cpu_millis.saturating_sub(hold.cpu_millis);
            free.memory_bytes = free.memory_bytes.saturating_sub(hold.memory_bytes);
            for gpu in &hold.gpus {
                free.gpus.remove(gpu);
            }
        }
        match admit(needs, &free, capacity) {
            Admission::Admitted(allocation) => {
                let hold = ResourceHold {
                    cpu_millis: needs.iter().map(|n| n.cpu_millis).sum(),
                    memory_bytes: needs
                        .iter()
                        .fold(0_u64, |sum, n| sum.saturating_add(n.memory_bytes)),
                    gpus: allocation.gpus.values().flatten().copied().collect(),
                };
                attempt = Some(Attempt::Admitted(allocation));
                Some(hold)
            }
            Admission::Wait(shortfalls) => {
                attempt = Some(Attempt::Wait(shortfalls));
                None
            }
            Admission::NeverFits(message) => {
                attempt = Some(Attempt::NeverFits(message));
                None
            }
        }
    })?;
    Ok(attempt.expect("reserve calls decide exactly once"))
}
