//! `trainctl run`: one job on this machine, in the foreground.

use std::process::ExitCode;

use anyhow::Context;
use trainctl_api::manifest::Manifests;
use trainctl_local::notify::Delivery;
use trainctl_local::process::logs::Console;
use trainctl_local::process::{Reaper, open_files};
use trainctl_local::runner::{self, RunEnd, RunReport, Supervision};
use trainctl_local::store::Store;

use crate::cli::RunArgs;
use crate::diagnostics::{self, EXIT_INVALID};
use crate::machine;
use crate::output;
use crate::state::state_dir;
use crate::summary;

/// Exit status when the job failed.
const EXIT_FAILED: u8 = 1;

/// Loads the job, runs it to its end and exits as the CLI contract says (docs/architecture.md §7).
pub fn run(args: &RunArgs, state: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    // The machine's capacity before the reaper: finding the GPUs waits for `nvidia-smi`, which
    // the reaper would reap from under it.
    let settings = machine::settings(&args.machine, Supervision::Attached)?;
    // The reaper before any child. The watchdog (an exec of this binary) starts and the state
    // database opens while the manifest loads: the machine's other cores do them, rather than
    // the one that will start the replicas. Their errors wait for the manifest's; the state
    // directory is made even for a manifest that turns out invalid.
    let _ = trainctl_local::process::cgroup::enable();
    let reaper = Reaper::start().context("cannot become the reaper of the job's processes")?;
    let (mut manifests, watchdog, store) = std::thread::scope(|scope| {
        let watchdog = scope.spawn(|| reaper.start_watchdog(&machine::watchdog()));
        let store =
            scope.spawn(|| -> anyhow::Result<Store> { Ok(Store::open(&state_dir(state)?)?) });
        let manifests = Manifests::load_files(std::slice::from_ref(&args.file));
        (manifests, joined(watchdog), joined(store))
    });
    if let Err(code) = diagnostics::report(&manifests) {
        return Ok(code);
    }
    for quota in &manifests.quotas {
        eprintln!(
            "warning: {}: ResourceQuota {} is enforced by `trainctl server` (submit the file to \
             it); `trainctl run` does not apply quotas",
            args.file.display(),
            quota.metadata.name.as_deref().unwrap_or_default()
        );
    }
    let mut loaded = match manifests.jobs.len() {
        1 => manifests.jobs.remove(0),
        0 => {
            eprintln!(
                "{}: no training job in the manifest (expected a TFJob, PyTorchJob, XGBoostJob, PaddleJob, JAXJob, MPIJob or MXJob)",
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
    // As the server does; a job too large for the limit is refused before it starts.
    let files = open_files::raise();
    if let Some(problem) = files.problem {
        eprintln!(
            "warning: cannot raise the open files limit from {}: {problem}",
            files.before
        );
    }
    let watchdog = watchdog.context("cannot start the watchdog of the job's processes")?;
    let mut store = store?;
    super::volumes::bind_flags(&mut store, &args.machine.volumes.bindings, job.namespace())?;
    let console = Console::stderr(!args.quiet);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let mut report = runtime.block_on(runner::run(
        job,
        &manifests.companions,
        &mut store,
        &reaper,
        watchdog,
        &settings,
        &console,
    ))?;
    summary::print(&report, &console);
    if let Some(format) = args.output {
        output::print(&report.job, format)?;
    }
    if let Some(delivery) = report.notification.take() {
        runtime.block_on(await_notification(delivery));
    }
    Ok(exit_code(&report))
}

/// Waits for the notification of the job's end to be delivered (each recipient within
/// `--notify-timeout`), so that exiting does not lose it, and says what failed; Ctrl-C stops
/// waiting (the `--on-finish` command is killed). The job's exit code stands either way.
async fn await_notification(mut delivery: Delivery) {
    let interrupted = tokio::select! {
        failures = delivery.finished() => {
            for failure in failures {
                eprintln!("warning: {failure}");
            }
            false
        }
        _ = tokio::signal::ctrl_c() => true,
    };
    if interrupted {
        delivery.abandon();
        eprintln!("warning: interrupted: stopped waiting for the job's notification");
    }
}

/// What a scoped thread returned; its panic goes on.
fn joined<T>(thread: std::thread::ScopedJoinHandle<'_, T>) -> T {
    thread
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
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
