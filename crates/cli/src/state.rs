//! Where the state directory is: `--state-dir`, `TRAINCTL_HOME`, or the user's data directory.

use std::path::{Path, PathBuf};

use anyhow::Context;
use trainctl_local::state_dir;

/// The state directory to use, given `--state-dir` (which clap fills from `TRAINCTL_HOME`), made
/// ready by [`state_dir::prepare`]: created with mode 0700, restricted to 0700 (said on stderr)
/// when others may enter it, refused when another user owns it.
pub fn state_dir(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    let dir = state_dir_path(flag)?;
    if let Some(restricted) = state_dir::prepare(&dir)? {
        eprintln!("warning: {restricted}");
    }
    // Absolute: the claims' directories under it are mounted from replicas that start in
    // other directories.
    std::path::absolute(&dir)
        .with_context(|| format!("cannot resolve the state directory {}", dir.display()))
}

/// Where the state directory is, given `--state-dir`, without making it ready.
pub fn state_dir_path(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    match flag {
        Some(dir) => Ok(dir.to_path_buf()),
        None => dirs::data_dir().map(|dir| dir.join("trainctl")).context(
            "no state directory: set --state-dir or TRAINCTL_HOME (no home directory found)",
        ),
    }
}
