//! Replicas' volumes end to end: `trainctl run` of jobs whose replicas mount claims, ConfigMaps,
//! Secrets, emptyDirs and hostPaths, each replica a short `sh -c` that reads and writes the
//! mounted paths.
//!
//! Every scenario runs twice: as the user who runs the tests (root where they run as root: a
//! mount namespace alone) and as a user other than root (a user namespace too), the binary run
//! as that user in a scratch directory it owns (`support`). Scripts write `$$$$` for the shell's
//! `$$` and backquotes for `$(...)`, because the kubelet's `$(VAR)` expansion reads `$(`.

mod claims;
mod ending;
mod kinds;
mod mounts;
mod seeds;
mod support;
