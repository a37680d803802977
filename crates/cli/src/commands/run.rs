//! `trainctl run`: one job on this machine, in the foreground.

use std::process::ExitCode;

use anyhow::{Context, bail};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use trainctl_api::manifest::Manifests;
use trainctl_api::quantity;
use trainctl_engine::reconcile::RestartBackoff;
use trainctl_local::logs::Console;
use trainctl_local::process::{HelperCommand, Reaper};
use trainctl_local::runner::{self, RunEnd, RunReport, RunSettings};
use trainctl_local::store::Store;
use trainctl_local::{CapacityOverrides, NodeCapacity};

use crate::cli::RunArgs;
use crate::diagnostics::{self, EXIT_INVALID};
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
    let settings = RunSettings {
        watchdog: HelperCommand {
            program: "/proc/self/exe".into(),
            args: vec!["__watchdog".into()],
        },
        capacity: NodeCapacity::detect_with(&capacity_overrides(args)?),
        backoff: RestartBackoff {
            initial: args.restart_backoff,
            max: args.restart_backoff_max.max(args.restart_backoff),
        },
        node_name: node_name(),
        admission_poll: std::time::Duration::from_secs(1),
    };
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
        RunEnd::Failed => ExitCode::from(EXIT_FAILED),
        RunEnd::Interrupted(signal) => ExitCode::from(128 + signal as u8),
    }
}

fn capacity_overrides(args: &RunArgs) -> anyhow::Result<CapacityOverrides> {
    type Read = fn(&Quantity) -> Result<u64, quantity::InvalidQuantity>;
    let amount = |flag: &str, text: &Option<String>, read: Read| {
        text.as_ref()
            .map(|text| {
                read(&Quantity(text.clone()))
                    .with_context(|| format!("{flag} {text}: expected a quantity"))
            })
            .transpose()
    };
    let overrides = CapacityOverrides {
        cpu_millis: amount("--cpus", &args.cpus, quantity::to_millis)?,
        memory_bytes: amount("--memory", &args.memory, quantity::to_units)?,
        gpus: args.gpus,
    };
    if overrides.cpu_millis == Some(0) {
        bail!("--cpus 0: a machine without CPUs can run nothing");
    }
    Ok(overrides)
}

/// This machine's name, as `spec.nodeName` reports it.
fn node_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_owned())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}
