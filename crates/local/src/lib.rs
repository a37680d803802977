//! The local runtime of trainctl: a kubelet for processes (DESIGN.md, "The local runtime model").
//!
//! These modules are the pure pieces the runtime is built from: `$(VAR)` expansion, env
//! resolution, resource quantities and node capacity, gang admission and loopback ports. They do
//! no process supervision; each rule is a plain unit test.

pub mod admission;
pub mod env;
pub mod expand;
pub mod ports;
pub mod resources;

pub use admission::{Admission, Allocation, FreeResources, admit};
pub use env::{EnvContext, EnvError, resolve_env};
pub use expand::{expand, expand_command_and_args};
pub use ports::PortReservation;
pub use resources::{CapacityOverrides, NodeCapacity, ReplicaNeeds};
