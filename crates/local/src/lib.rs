//! The local runtime of trainctl: a kubelet for processes (docs/architecture.md §4.1).
//!
//! Four parts, each a folder, each using only those before it:
//!
//! - [`kubelet`]: the kubelet's rules, plain functions with unit tests: `$(VAR)` expansion, env
//!   resolution, resource quantities and node capacity, gang admission, loopback ports;
//! - [`process`]: replica processes (started, reaped, signalled, their output captured); the
//!   watchdog that stops them if `trainctl run` dies, so that no replica process outlives it;
//!   the shim through which a server's replicas outlive a server that dies, for the next one to
//!   take over;
//! - [`store`]: the SQLite state database (it names a job's owner by its process identity);
//! - [`runner`]: one job's run, which executes the engine's plans with all of the above.
//!
//! Beside the runner, [`notify`]: the notification of a finished job, to the `--on-finish`
//! command and the `--webhook`s (it reads the replicas' logs; the runner starts it).
//!
//! Beside the runner too, [`claims`]: the claims' bindings as the commands record them
//! (`--volume CLAIM=PATH`), and the jobs that still use a claim.
//!
//! Beside them, [`state_dir`]: the state directory kept its owner's alone (mode 0700, files
//! 0600), used by every part and command that touches it.

pub mod claims;
pub mod kubelet;
pub mod notify;
pub mod process;
pub mod runner;
pub mod state_dir;
pub mod store;

pub use kubelet::admission::{Admission, Allocation, FreeResources, admit};
pub use kubelet::env::{EnvContext, EnvError, resolve_env};
pub use kubelet::ports::PortReservation;
pub use kubelet::resources::{CapacityOverrides, NodeCapacity, ReplicaNeeds};
