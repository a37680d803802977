//! `trainctl __shim`: the parent of a server's replicas (see `trainctl_local::process::shim`).

use std::process::ExitCode;

use anyhow::Context as _;
use trainctl_local::process::shim;

use crate::cli::ShimArgs;

/// Starts the replicas a server asks for and records their exit codes, until none is left and no
/// server is connected.
pub fn run(args: &ShimArgs) -> anyhow::Result<ExitCode> {
    let _ = trainctl_local::process::cgroup::enable();
    shim::serve(&args.socket)
        .with_context(|| format!("the shim cannot serve on {}", args.socket.display()))?;
    Ok(ExitCode::SUCCESS)
}
