//! `trainctl run`: one job on this machine, in the foreground.

use std::process::ExitCode;

use anyhow::Context;
use trainctl_api::manifest::Manifests;
use trainctl_local::logs::Console;
use trainctl_local::process::Reaper;
use trainctl_local::runner::{self, RunEnd, RunReport};
use trainctl_local::store::Store;

use crate::cli::RunArgs;
use crate::diagnostics::{self, EXIT_INVALID};
use crate::machine;
use crate::output;
use crate::state::state_dir;
use crate::summary;

/// Exit status when the job failed.
const EXIT_FAILED: u8 = 1;

/// Loads the job, runs it to its end and exits as DESIGN's CLI contract says.
pub fn run(args: &RunArgs, state: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    let mut manifests = Manifests::load_files(std::slice::from_ref(&args.file));
    if let Err(code) = diagnostics::report(&manifests) {
        return Ok(code);
    }
    let mut loaded = match manifests.jobs.len() {
        1 => manifests.jobs.remove(0),
        0 => {
            eprintln!(
                "{}: no training job in the manifest (expected a TFJob, PyTorchJob, XGBoostJob, PaddleJob, JAXJob or MPIJob)",
                args.file.display()
            );
            return Ok(ExitCode::from(EXIT_INVALID));
        }
        n => {
            eprintln!(
                "{}: {n} training jobs in the manifest; `trainctl run` runs one (split the file, or use `trainctl submit` with the server)",
                args.file.display()
            );
            return Ok(ExitCode::from(EXIT_INVALID));
        }
    };
    if let Some(namespace) = &args.namespace
        && let Err(code) = diagnostics::set_namespace(&mut loaded, namespace)
    {
        return Ok(code);
    }
    let job = loaded.job;
    let settings = machine::settings(&args.machine, machine::attached())?;
    let dir = state_dir(state)?;
    let mut store = Store::open(&dir)?;
    let console = Console::stderr(!args.quiet);
    let reaper = Reaper::start().context("cannot become the reaper of the job's processes")?;
    let report = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?
        .block_on(runner::run(
            job,
            &manifests.companions,
            &mut store,
            &reaper,
            &settings,
            &console,
        ))?;
    summary::print(&report, &console);
    if let Some(format) = args.output {
        output::print(&report.job, format)?;
    }
    Ok(exit_code(&report))
}

fn exit_code(report: &RunReport) -> ExitCode {
    match report.end {
        RunEnd::Succeeded => ExitCode::SUCCESS,
        RunEnd::Interrupted(signal) => ExitCode::from(128 + signal as u8),
        // Only a server suspends, deletes or shuts down a run.
        RunEnd::Failed | RunEnd::Suspended | RunEnd::Deleted | RunEnd::Shutdown => {
            ExitCode::from(EXIT_FAILED)
        }
    }
}
