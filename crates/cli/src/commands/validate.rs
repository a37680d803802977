//! `trainctl validate`: check manifests, optionally print the defaulted jobs.

use std::process::ExitCode;

use trainctl_api::manifest::Manifests;

use crate::cli::ValidateArgs;
use crate::{diagnostics, output};

/// Loads, defaults and validates every file; exit 0 when all are valid, 2 otherwise.
pub fn run(args: &ValidateArgs) -> anyhow::Result<ExitCode> {
    let manifests = Manifests::load_files(&args.files);
    if let Err(code) = diagnostics::report(&manifests) {
        return Ok(code);
    }
    match args.output {
        Some(format) => {
            let jobs: Vec<_> = manifests.jobs.iter().map(|loaded| &loaded.job).collect();
            output::print_all(&jobs, format)?;
        }
        None => {
            for loaded in &manifests.jobs {
                let job = &loaded.job;
                println!(
                    "{}: {} {}/{} is valid",
                    loaded.source,
                    job.kind(),
                    job.namespace(),
                    job.name()
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
