//! `trainctl`: run Kubeflow `kubeflow.org/v1` training jobs (TFJob, PyTorchJob, ...) on this machine,
//! on a local control plane, or on Kubernetes. This binary is thin: it parses, calls the crates,
//! prints.

mod cli;
mod client;
mod cluster;
mod commands;
mod diagnostics;
mod machine;
mod output;
mod state;
mod summary;
mod table;
mod target;
mod telemetry;
mod view;
mod wait_for;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
