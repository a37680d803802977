//! One module per subcommand.

mod completion;
mod crd;
mod dashboard;
mod delete;
mod describe;
mod events;
mod get;
mod logs;
mod operator;
mod progress;
mod quotas;
mod render;
mod replicas;
mod run;
mod server;
mod shim;
mod submit;
mod suspend;
#[cfg(test)]
mod tests;
mod top;
mod validate;
mod version;
mod volumes;
mod wait;
mod watchdog;

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::Context;

use crate::cli::{Cli, ClusterArgs, Command, JobsArgs};
use crate::cluster;
use crate::selection::Selection;
use crate::target::Target;

/// Runs the parsed command line; the exit code follows the CLI contract (docs/architecture.md §7).
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if cli.cluster.enabled() {
        match &cli.command {
            Command::Submit(_)
            | Command::Get(_)
            | Command::Describe(_)
            | Command::Logs(_)
            | Command::Delete(_)
            | Command::Wait(_)
            | Command::Suspend(_)
            | Command::Resume(_) => return in_cluster(cli.command, &cli.cluster),
            Command::Run(_) => anyhow::bail!(
                "`trainctl run` runs a job on this machine and has no cluster mode; to run it on \
                 the cluster: trainctl --kube submit -f FILE"
            ),
            Command::Dashboard(args) => return dashboard::in_cluster(args, &cli.cluster),
            Command::Server(_) => anyhow::bail!(
                "`trainctl server` is this machine's control plane and has no cluster mode"
            ),
            Command::Events(_) => anyhow::bail!(
                "`trainctl events` reads this machine's jobs and has no cluster mode yet; for a \
                 cluster's: kubectl events -n NAMESPACE --for tfjob/NAME"
            ),
            Command::Volumes(_) => anyhow::bail!(
                "`trainctl volumes` lists this machine's claims and has no cluster mode; for a \
                 cluster's: kubectl get pvc"
            ),
            Command::Top(_) => anyhow::bail!(
                "`trainctl top` measures this machine and has no cluster mode; for a cluster's: \
                 kubectl top pod -l training.kubeflow.org/job-name=NAME"
            ),
            // The others do not talk to a cluster: they work the same either way.
            _ => {}
        }
    }
    let state = cli.state_dir.as_deref();
    match cli.command {
        Command::Validate(args) => validate::run(&args),
        Command::Render(args) => render::run(&args),
        Command::Crd(args) => crd::run(&args),
        Command::Run(args) => run::run(&args, state),
        Command::Get(args) => get::run(&args, state),
        Command::Logs(args) => logs::run(&args, state),
        Command::Submit(args) => submit::run(&args, state),
        Command::Delete(args) => delete::run(&args, state),
        Command::Suspend(args) => suspend::suspend(&args, state),
        Command::Resume(args) => suspend::resume(&args, state),
        Command::Wait(args) => wait::run(&args, state),
        Command::Describe(args) => describe::run(&args, state),
        Command::Server(args) => server::run(&args, state),
        Command::Dashboard(args) => dashboard::run(&args, state),
        Command::Operator(args) => operator::run(&args, &cli.cluster),
        Command::Events(args) => events::run(&args, state),
        Command::Top(args) => top::run(&args, state),
        Command::Volumes(args) => volumes::run(&args, state),
        Command::Completion(args) => completion::run(&args),
        Command::Version(args) => version::run(&args, state, cli.cluster.enabled()),
        Command::Watchdog => watchdog::run(),
        Command::Shim(args) => shim::run(&args),
    }
}

/// Does `act` for each job named. With several, it goes on past a job it fails for (its error
/// printed, as kubectl does), and exits 1 when it failed for any; with one, its error is the
/// command's.
fn for_each_target(
    targets: &[Target<'_>],
    mut act: impl FnMut(&Target<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<ExitCode> {
    if let [target] = targets {
        return act(target).map(|()| ExitCode::SUCCESS);
    }
    let mut code = ExitCode::SUCCESS;
    for target in targets {
        if let Err(error) = act(target) {
            eprintln!("error: {error:#}");
            code = ExitCode::FAILURE;
        }
    }
    Ok(code)
}

/// [`for_each_target`] for a command on a cluster; `out` is flushed before an error is printed,
/// so that what was done and what failed come in order.
async fn for_each_target_in_cluster<W: Write>(
    targets: &[Target<'_>],
    out: &mut W,
    mut act: impl AsyncFnMut(&Target<'_>, &mut W) -> anyhow::Result<()>,
) -> anyhow::Result<ExitCode> {
    if let [target] = targets {
        return act(target, out).await.map(|()| ExitCode::SUCCESS);
    }
    let mut code = ExitCode::SUCCESS;
    for target in targets {
        if let Err(error) = act(target, out).await {
            out.flush()?;
            eprintln!("error: {error:#}");
            code = ExitCode::FAILURE;
        }
    }
    Ok(code)
}

/// What `args` name, in `namespace` for the jobs that name none (`command`, for the hints);
/// `Err(exit code)` when a `-f` manifest is invalid (its problems printed).
fn selection_of(args: &JobsArgs) -> anyhow::Result<Result<Selection, ExitCode>> {
    Selection::read(&args.words, &args.files, args.namespace.as_deref())
}

/// Runs a job command on the cluster that `flags` name (`--kube`).
fn in_cluster(command: Command, flags: &ClusterArgs) -> anyhow::Result<ExitCode> {
    if let Command::Submit(args) = &command
        && !args.volumes.is_empty()
    {
        anyhow::bail!(
            "--volume binds a claim to a directory of this machine; on a cluster, a claim is a \
             PersistentVolumeClaim: create it there (kubectl apply -f claim.yaml)"
        );
    }
    // Checked before the kubeconfig is read: an invalid manifest needs no cluster to say so.
    let checked = match &command {
        Command::Submit(args) => match submit::check(args) {
            Ok(checked) => Some(checked),
            Err(code) => return Ok(code),
        },
        _ => None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let mut out = BufWriter::new(io::stdout().lock());
    let result = runtime.block_on(async {
        let cluster = cluster::connect(flags).await?;
        on_cluster(command, checked, &cluster, &mut out).await
    });
    out.flush()?;
    result
}

/// Runs a job command on `cluster`, printing on `out`; a `submit` comes with its manifest,
/// checked.
async fn on_cluster(
    command: Command,
    checked: Option<submit::Checked>,
    cluster: &cluster::Cluster,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    match command {
        Command::Submit(args) => {
            let checked = checked.context("a submit comes with its checked manifest")?;
            submit::in_cluster(checked, &args, cluster, out).await
        }
        Command::Get(args) => get::in_cluster(&args, cluster, out).await,
        Command::Describe(args) => describe::in_cluster(&args, cluster, out).await,
        Command::Logs(args) => logs::in_cluster(&args, cluster, out).await,
        Command::Delete(args) => delete::in_cluster(&args, cluster, out).await,
        Command::Wait(args) => wait::in_cluster(&args, cluster, out).await,
        Command::Suspend(args) => suspend::in_cluster(&args, cluster, true, out).await,
        Command::Resume(args) => suspend::in_cluster(&args, cluster, false, out).await,
        _ => anyhow::bail!("this command has no cluster mode"),
    }
}
