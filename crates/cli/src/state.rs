//! Where the state directory is: `--state-dir`, `TRAINCTL_HOME`, or the user's data directory.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// The state directory to use, given `--state-dir` (which clap fills from `TRAINCTL_HOME`).
pub fn state_dir(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    match flag {
        Some(dir) => Ok(dir.to_path_buf()),
        None => dirs::data_dir().map(|dir| dir.join("trainctl")).context(
            "no state directory: set --state-dir or TRAINCTL_HOME (no home directory found)",
        ),
    }
}
