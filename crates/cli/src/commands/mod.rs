//! One module per subcommand.

mod completion;
mod crd;
mod dashboard;
mod delete;
mod describe;
mod events;
mod get;
mod logs;
mod quotas;
mod render;
mod repair;
mod replicas;
mod run;
mod server;
mod shim;
mod submit;
mod suspend;
mod tensorboard;
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
use trainctl_operator::connect::ClusterAccess;

use crate::backend::{Jobs, Local};
use crate::cli::{Cli, ClusterArgs, Command};
use crate::cluster;

/// Runs the parsed command line; the exit code follows the CLI contract (docs/architecture.md §7).
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let Cli {
        state_dir,
        cluster,
        command,
    } = cli;
    if cluster.enabled() {
        match &command {
            Command::Run(_) => anyhow::bail!(
                "`trainctl run` runs a job on this machine and has no cluster mode; to run it on \
                 the cluster: trainctl --kube submit -f FILE"
            ),
            Command::Dashboard(args) => return dashboard::in_cluster(args, &cluster),
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
            Command::Tensorboard(_) => anyhow::bail!(
                "`trainctl tensorboard` reads this machine's event files and has no cluster \
                 mode; a cluster's are on its pods' volumes: run TensorBoard beside them"
            ),
            Command::Repair(_) => anyhow::bail!(
                "`trainctl repair` repairs this machine's state database and has no cluster mode"
            ),
            Command::Top(_) => anyhow::bail!(
                "`trainctl top` measures this machine and has no cluster mode; for a cluster's: \
                 kubectl top pod -l training.kubeflow.org/job-name=NAME"
            ),
            // The job commands work on the cluster; the others do not talk to one.
            _ => {}
        }
    }
    let state = state_dir.as_deref();
    match command {
        job @ (Command::Submit(_)
        | Command::Get(_)
        | Command::Describe(_)
        | Command::Logs(_)
        | Command::Delete(_)
        | Command::Wait(_)
        | Command::Suspend(_)
        | Command::Resume(_)) => job_command(job, &cluster, state),
        Command::Validate(args) => validate::run(&args, cluster.enabled(), state),
        Command::Render(args) => render::run(&args),
        Command::Crd(args) => crd::run(&args),
        Command::Run(args) => run::run(&args, state),
        Command::Server(args) => server::run(&args, state),
        Command::Dashboard(args) => dashboard::run(&args, state),
        Command::Operator(args) => {
            let access = ClusterAccess {
                kubeconfig: cluster.kubeconfig,
                context: cluster.context,
            };
            trainctl_operator::command::run(&args, &access)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Events(args) => events::run(&args, state),
        Command::Top(args) => top::run(&args, state),
        Command::Volumes(args) => volumes::run(&args, state),
        Command::Completion(args) => completion::run(&args),
        Command::Repair(args) => repair::run(&args, state),
        Command::Tensorboard(args) => tensorboard::run(&args, state),
        Command::Version(args) => version::run(&args, state, cluster.enabled()),
        Command::Watchdog => watchdog::run(),
        Command::Shim(args) => shim::run(&args),
    }
}

/// Runs a job command (written once over [`Jobs`]) on this machine's jobs, those of the state
/// directory `state`, or (`--kube`) on the cluster's.
fn job_command(
    command: Command,
    flags: &ClusterArgs,
    state: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    let in_cluster = flags.enabled();
    if in_cluster
        && let Command::Submit(args) = &command
        && !args.volumes.is_empty()
    {
        anyhow::bail!(
            "--volume binds a claim to a directory of this machine; on a cluster, a claim is a \
             PersistentVolumeClaim: create it there (kubectl apply -f claim.yaml)"
        );
    }
    // Checked before anything is looked up: an invalid manifest needs no cluster nor state
    // directory to say so.
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
        if in_cluster {
            let cluster = cluster::connect(flags).await?;
            on_backend(command, checked, &cluster, &mut out).await
        } else {
            let local = Local::new(state)?;
            on_backend(command, checked, &local, &mut out).await
        }
    });
    out.flush()?;
    result
}

/// Runs a job command over `jobs`, printing on `out`; a `submit` comes with its manifest,
/// checked.
async fn on_backend<B>(
    command: Command,
    checked: Option<submit::Checked>,
    jobs: &B,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode>
where
    B: Jobs + logs::Logs + submit::Submit,
{
    match command {
        Command::Submit(args) => {
            let checked = checked.context("a submit comes with its checked manifest")?;
            let outcome = jobs.submit(checked, &args, out).await?;
            if !args.wait || outcome.code != ExitCode::SUCCESS {
                return Ok(outcome.code);
            }
            wait::until_finished(jobs, &outcome.jobs, out).await
        }
        Command::Get(args) => get::run(&args, jobs, out).await,
        Command::Describe(args) => describe::run(&args, jobs, out).await,
        Command::Logs(args) => logs::run(&args, jobs, out).await,
        Command::Delete(args) => delete::run(&args, jobs, out).await,
        Command::Wait(args) => wait::run(&args, jobs, out).await,
        Command::Suspend(args) => suspend::run(&args, true, jobs, out).await,
        Command::Resume(args) => suspend::run(&args, false, jobs, out).await,
        _ => anyhow::bail!("not a job command"),
    }
}
