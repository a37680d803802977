//! `trainctl __watchdog`: stops a job's replicas if `trainctl run` dies (see
//! `trainctl_local::process::watchdog`).

use std::process::ExitCode;

use trainctl_local::process::watchdog;

/// Watches until `trainctl` says it is done, or cleans up after it.
pub fn run() -> anyhow::Result<ExitCode> {
    watchdog::run_only_when_idle();
    // Finds the cgroups of the job it guards, made under the same cgroup as its own.
    let _ = trainctl_local::process::cgroup::enable();
    watchdog::run(std::io::stdin().lock())?;
    Ok(ExitCode::SUCCESS)
}
