//! `trainctl server`: the local control plane.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use trainctl_local::store::Store;
use trainctl_local::store::repair::{self, Health, Thoroughness};
use trainctl_server::ServerConfig;

use crate::cli::ServerArgs;
use crate::machine;
use crate::state::state_dir;
use crate::target::DEFAULT_NAMESPACE;

/// Runs the server until `SIGINT` or `SIGTERM`.
pub fn run(args: &ServerArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    trainctl_logging::init(args.log_format);
    let dir = state_dir(state)?;
    // One server per state directory: refused before anything is written there.
    let lock = trainctl_server::discovery::lock(&dir)?;
    // The replicas are the children of the shim, a child of this process: their cgroups get their
    // controllers from this process's cgroup, made ready before any child starts.
    let _ = trainctl_local::process::cgroup::prepare();
    // A damaged database would fail jobs one by one, as each met the damage.
    if let Health::Damaged(problems) = repair::check(&dir, Thoroughness::Quick)? {
        anyhow::bail!(
            "the state database {} is damaged ({}): repair it first with `trainctl repair`, \
             which keeps what can still be read",
            dir.join(trainctl_local::store::DATABASE_FILE).display(),
            problems.join("; ")
        );
    }
    if !args.machine.volumes.bindings.is_empty() {
        let mut store = Store::open(&dir)?;
        super::volumes::bind_flags(
            &mut store,
            &args.machine.volumes.bindings,
            DEFAULT_NAMESPACE,
        )?;
    }
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
            lock,
            config,
            args.listen,
            args.allow_non_loopback,
            |address, code| {
                eprintln!(
                    "trainctl server listening on {} (state directory {}); Ctrl-C stops it",
                    address.url,
                    dir.display()
                );
                eprintln!(
                    "dashboard: {}/#code={code} (a login link for one use within 15 minutes; \
                     later: trainctl dashboard)",
                    address.url
                );
            },
        ))?;
    Ok(ExitCode::SUCCESS)
}
