//! `trainctl validate`: check manifests as the API server would, then whether this machine can
//! run them as `run` and the server would; optionally print the defaulted jobs.

use std::path::Path;
use std::process::ExitCode;

use trainctl_api::manifest::{LoadedJob, Manifests};
use trainctl_api::validation::Severity;
use trainctl_local::kubelet::resources::NodeCapacity;
use trainctl_local::process::open_files;
use trainctl_local::runner::{self, Machine};

use crate::cli::ValidateArgs;
use crate::state::state_dir_path;
use crate::{diagnostics, machine, output};

/// Exit status when every job is valid but one cannot run on this machine: what `run` would
/// exit with, the job failing at once.
const EXIT_CANNOT_RUN_HERE: u8 = 1;

/// Loads, defaults and validates every file: exit 2 when one is invalid anywhere (as `run`
/// would), else 1 when a job cannot run on this machine (`cluster`: not checked, the jobs are
/// for a cluster), else 0.
pub fn run(args: &ValidateArgs, cluster: bool, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    let manifests = Manifests::load_files(&args.files);
    if let Err(code) = diagnostics::report(&manifests) {
        return Ok(code);
    }
    let blocked = if cluster {
        Vec::new()
    } else {
        check_machine(&manifests, args, state)?
    };
    match args.output {
        Some(format) => {
            let jobs: Vec<_> = manifests.jobs.iter().map(|loaded| &loaded.job).collect();
            output::print_all(&jobs, format)?;
        }
        None => {
            for (n, loaded) in manifests.jobs.iter().enumerate() {
                let job = &loaded.job;
                let here = if blocked.contains(&n) {
                    ", but cannot run on this machine"
                } else {
                    ""
                };
                println!(
                    "{}: {} {}/{} is valid{here}",
                    loaded.source,
                    job.kind(),
                    job.namespace(),
                    job.name()
                );
            }
        }
    }
    if !blocked.is_empty() {
        eprintln!(
            "{} job{} cannot run on this machine as written (for a cluster, check with \
             `trainctl --kube validate`)",
            blocked.len(),
            if blocked.len() == 1 { "" } else { "s" }
        );
        return Ok(ExitCode::from(EXIT_CANNOT_RUN_HERE));
    }
    Ok(ExitCode::SUCCESS)
}

/// Checks each job against this machine (or the one `--cpus`, `--memory`, `--gpus` describe),
/// printing what a run would refuse or warn of; returns the indices of the jobs that cannot run.
fn check_machine(
    manifests: &Manifests,
    args: &ValidateArgs,
    state: Option<&Path>,
) -> anyhow::Result<Vec<usize>> {
    let capacity = NodeCapacity::detect_with(&machine::capacity_overrides(&args.capacity)?);
    let state_dir = std::path::absolute(state_dir_path(state)?)?;
    let node_name = machine::node_name();
    // As `run` does before it counts what a job's replicas may open.
    let _ = open_files::raise();
    let machine = Machine {
        capacity: &capacity,
        node_name: &node_name,
        volumes: !args.no_volumes,
        state_dir: &state_dir,
        bindings: &(),
    };
    let mut blocked = Vec::new();
    for (n, loaded) in manifests.jobs.iter().enumerate() {
        let found = runner::check(&loaded.job, &manifests.companions, &machine);
        for warning in found.warnings {
            eprintln!("{}", located(loaded, Severity::Warning, warning));
        }
        if !found.blockers.is_empty() {
            blocked.push(n);
        }
        for blocker in found.blockers {
            eprintln!("{}", located(loaded, Severity::Error, blocker));
        }
    }
    Ok(blocked)
}

/// A finding about `loaded`'s job as a diagnostic at its field; a blocker says it is about
/// this machine.
fn located(
    loaded: &LoadedJob,
    severity: Severity,
    finding: runner::Finding,
) -> trainctl_api::manifest::Diagnostic {
    let message = match severity {
        Severity::Error => format!("cannot run on this machine: {}", finding.message),
        Severity::Warning => finding.message,
    };
    loaded.diagnostic(severity, finding.path, message)
}
