//! Replicas' volumes end to end: `trainctl run` of jobs whose replicas mount claims, ConfigMaps,
//! Secrets, emptyDirs and hostPaths, each replica a short `sh -c` that reads and writes the
//! mounted paths.
//!
//! Every scenario runs twice: as the user who runs the tests (root where they run as root: a
//! mount namespace alone) and as a user other than root (a user namespace too), the binary run
//! as that user in a scratch directory it owns (`support`). Scripts write `$$$$` for the shell's
//! `$$` and backquotes for `$(...)`, because the kubelet's `$(VAR)` expansion reads `$(`.

mod claims;
#[path = "../common/mod.rs"]
mod common;
mod ending;
mod kinds;
mod mounts;
#[allow(
    dead_code,
    reason = "the run tests' support; these tests use its processes, waits and runs, and build \
              their scratch directory on its `Scratch`"
)]
#[path = "../run/support.rs"]
mod run_support;
mod seeds;
mod support;
