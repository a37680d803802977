//! `trainctl suspend` and `trainctl resume`: set a job's `spec.runPolicy.suspend` through the
//! local control plane.

use std::path::Path;
use std::process::ExitCode;

use crate::cli::JobArgs;
use crate::client::Client;
use crate::commands::target::Target;
use crate::state::state_dir;

/// Suspends the job: its replicas stop and its resources are given back.
pub fn suspend(args: &JobArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    set_suspended(args, state, true)
}

/// Resumes the job: it is queued again.
pub fn resume(args: &JobArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    set_suspended(args, state, false)
}

fn set_suspended(args: &JobArgs, state: Option<&Path>, suspend: bool) -> anyhow::Result<ExitCode> {
    let dir = state_dir(state)?;
    let client = Client::find(&dir)?;
    let (command, done) = if suspend {
        ("suspend", "suspended")
    } else {
        ("resume", "resumed")
    };
    let job = Target::parse(args)?.resolve(&dir, command)?;
    let view = client.set_suspended(job, suspend)?;
    println!("{} {done}", view.resource());
    Ok(ExitCode::SUCCESS)
}
