//! The local runtime of trainctl: a kubelet for processes (docs/architecture.md §4.1).
//!
//! The pure pieces (`$(VAR)` expansion, env resolution, resource quantities and node capacity,
//! gang admission, loopback ports) are plain functions with unit tests. Around them: replica
//! [`process`]es (started, reaped, signalled); the [`watchdog`] that stops them if `trainctl run`
//! dies, so that no replica process outlives it; the [`shim`] through which a server's replicas
//! outlive a server that dies, for the next one to take over; [`logs`] capture; the SQLite
//! [`store`]; and the [`runner`] that executes the engine's plans.

pub mod admission;
pub mod env;
pub mod expand;
pub mod logs;
pub mod ports;
pub mod process;
pub mod process_identity;
pub mod resources;
pub mod runner;
pub mod shim;
pub mod store;
pub mod watchdog;

pub use admission::{Admission, Allocation, FreeResources, admit};
pub use env::{EnvContext, EnvError, resolve_env};
pub use expand::{expand, expand_command_and_args};
pub use ports::PortReservation;
pub use resources::{CapacityOverrides, NodeCapacity, ReplicaNeeds};
