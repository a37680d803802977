//! `trainctl __watchdog`: stops a job's replicas if `trainctl run` dies (see
//! `trainctl_local::watchdog`).

use std::process::ExitCode;

use trainctl_local::watchdog;

use crate::cli::WatchdogArgs;

/// Watches until `trainctl` says it is done, or cleans up after it.
pub fn run(args: &WatchdogArgs) -> anyhow::Result<ExitCode> {
    watchdog::run(&args.job_uid, std::io::stdin().lock())?;
    Ok(ExitCode::SUCCESS)
}
