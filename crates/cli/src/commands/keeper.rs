//! `trainctl __keeper`: runs a server's replica so that it outlives a server that dies (see
//! `trainctl_local::keeper`).

use std::process::ExitCode;

use trainctl_local::keeper;

use crate::cli::KeeperArgs;

/// Runs the command to its end and records its exit code; exits with it.
pub fn run(args: &KeeperArgs) -> anyhow::Result<ExitCode> {
    let code = keeper::run(&args.exit_file, &args.command, true)?;
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(u8::MAX)))
}
