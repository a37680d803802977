//! `trainctl delete`: deletes a job through the local control plane.

use std::path::Path;
use std::process::ExitCode;

use crate::cli::JobArgs;
use crate::client::Client;
use crate::commands::target::Target;
use crate::state::state_dir;

/// Deletes the job once its replicas have stopped; exit 1 when it does not exist.
pub fn run(args: &JobArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    let dir = state_dir(state)?;
    let client = Client::find(&dir)?;
    let job = Target::parse(args)?.resolve(&dir, "delete")?;
    let deleted = client.delete(job)?;
    println!("{} deleted", deleted.resource());
    Ok(ExitCode::SUCCESS)
}
