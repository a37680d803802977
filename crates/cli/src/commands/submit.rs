//! `trainctl submit`: sends a manifest to the local control plane, after checking it here.

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

use trainctl_api::manifest::{self, Manifests};

use crate::cli::SubmitArgs;
use crate::client::{Client, ClientError};
use crate::diagnostics::{self, EXIT_INVALID};
use crate::state::state_dir;

/// Checks the manifest, submits it and prints each job recorded; exit 2 when it is invalid.
pub fn run(args: &SubmitArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    let source = args.file.display().to_string();
    let (bytes, mut manifests) = read(&args.file, &source);
    if let Err(code) = diagnostics::report(&manifests) {
        return Ok(code);
    }
    if manifests.jobs.is_empty() {
        eprintln!(
            "{source}: no training job in the manifest (expected a TFJob, PyTorchJob, XGBoostJob, PaddleJob, JAXJob or MPIJob)"
        );
        return Ok(ExitCode::from(EXIT_INVALID));
    }
    if let Some(namespace) = &args.namespace {
        for loaded in &mut manifests.jobs {
            if let Err(code) = diagnostics::set_namespace(loaded, namespace) {
                return Ok(code);
            }
        }
    }
    let client = Client::find(&state_dir(state)?)?;
    match client.submit(&bytes, &source, args.namespace.as_deref()) {
        Ok(jobs) => {
            for job in jobs {
                println!("{} submitted ({})", job.resource(), job.state);
            }
            Ok(ExitCode::SUCCESS)
        }
        // The server found what this trainctl did not (it may be another version).
        Err(ClientError::Api {
            status: 400,
            error,
            details,
        }) => {
            for detail in &details {
                eprintln!("{detail}");
            }
            if details.is_empty() {
                eprintln!("{error}");
            }
            Ok(ExitCode::from(EXIT_INVALID))
        }
        Err(error) => Err(error.into()),
    }
}

/// The manifest's bytes, sent as they are, and what the loader makes of them. A file that
/// cannot be read has no bytes, and a diagnostic saying why.
fn read(path: &Path, source: &str) -> (Vec<u8>, Manifests) {
    let bytes = if source == "-" {
        let mut buffer = Vec::new();
        std::io::stdin()
            .lock()
            .read_to_end(&mut buffer)
            .map(|_| buffer)
    } else {
        std::fs::read(path)
    };
    match bytes {
        Ok(bytes) => {
            let manifests = manifest::load_bytes(source, &bytes);
            (bytes, manifests)
        }
        // The loader says it as `validate` would (a missing file, a directory...).
        Err(_) => (Vec::new(), manifest::load_file(path)),
    }
}
