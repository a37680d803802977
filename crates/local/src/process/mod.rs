//! The processes of the local runtime: replicas, and the two helpers that outlive `trainctl`
//! for them.
//!
//! - [`reaper`]: starts replicas in their own process groups, reaps every child (this process
//!   is their subreaper), kills what a replica leaves behind, and starts the helpers;
//! - [`watchdog`]: the process that stops a `trainctl run`'s replicas if `trainctl` dies, and
//!   the pipe to it;
//! - [`shim`]: the parent of a server's replicas, through which they outlive a server that dies,
//!   and the server's connection to it;
//! - [`logs`]: a replica's output, to its log file and the terminal;
//! - [`child`]: what starting a process takes and gives, and the children waited for;
//! - [`marker`]: the job's uid in every replica's environment, and the processes found by it;
//! - [`identity`]: a process named by its pid and start time, never a recycled pid;
//! - [`cgroup`]: each start of a replica in a cgroup of its own, where the system offers one;
//! - [`mounts`]: a replica's volumes in a mount namespace of its own, through a helper that
//!   executes the replica's command once they are mounted;
//! - [`open_files`]: the open-file limit, raised for the replicas' files.
//!
//! Imports go one way, down this list: the reaper uses the watchdog and the shim, which use
//! neither the reaper nor each other; below them, [`child`], [`logs`] and [`marker`] use none of
//! those three, and [`marker`] uses [`identity`]; [`cgroup`] uses none of them; the reaper and
//! the shim use [`mounts`], which uses none of these; [`open_files`] uses none.

pub mod cgroup;
pub mod child;
pub mod identity;
pub mod logs;
pub mod marker;
pub mod mounts;
pub mod open_files;
pub mod reaper;
pub mod shim;
pub mod usage;
pub mod watchdog;

pub use child::{HelperCommand, Launch, StartedProcess};
pub use reaper::Reaper;
