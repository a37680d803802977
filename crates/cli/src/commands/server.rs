//! `trainctl server`: the local control plane.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use trainctl_server::ServerConfig;

use crate::cli::ServerArgs;
use crate::machine;
use crate::state::state_dir;

/// Runs the server until `SIGINT` or `SIGTERM`.
pub fn run(args: &ServerArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let dir = state_dir(state)?;
    let config = ServerConfig {
        state_dir: dir.clone(),
        settings: machine::settings(&args.machine, machine::detached())?,
        priorities: machine::priorities(&args.priority_class)?,
    };
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the runtime")?
        .block_on(trainctl_server::serve(
            config,
            args.listen,
            args.allow_non_loopback,
            |address| {
                eprintln!(
                    "trainctl server listening on {} (state directory {}); Ctrl-C stops it",
                    address.url,
                    dir.display()
                );
            },
        ))?;
    Ok(ExitCode::SUCCESS)
}
