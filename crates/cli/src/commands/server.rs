//! `trainctl server`: the local control plane.

use std::path::Path;
use std::process::ExitCode;

use crate::cli::ServerArgs;

/// Runs the server until it is stopped.
pub fn run(args: &ServerArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    let _ = (args, state);
    anyhow::bail!("trainctl server is not built yet")
}
