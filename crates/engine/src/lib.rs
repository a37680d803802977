//! The pure decision engine of trainctl.
//!
//! Given a defaulted, validated job, this crate decides which Kubernetes objects stand for it
//! (docs/semantics.md §3), what environment each replica gets (§4), and, from what was observed
//! of its replicas, what to do next ([`reconcile()`], §5–§7). Everything here is synchronous,
//! deterministic and free of I/O: the local runtime and the Kubernetes operator both call it and
//! only differ in the [`addressing::Addressing`] they pass.

pub mod addressing;
pub mod env;
pub mod naming;
pub mod objects;
pub mod reconcile;

#[cfg(test)]
mod test_jobs;

pub use addressing::Addressing;
/// The PodGroup builder lives with the other object builders; this is its short path.
pub use objects::podgroup;
pub use objects::podgroup::PodGroup;
pub use objects::{BuildOptions, JobObjects, build_objects, build_pod, build_service};
pub use reconcile::{Observed, ObservedReplica, Plan, PodPhase, ReplicaSlot, reconcile};
