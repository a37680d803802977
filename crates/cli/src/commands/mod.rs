//! One module per subcommand.

mod crd;
mod delete;
mod describe;
mod get;
mod logs;
mod operator;
mod render;
mod run;
mod server;
mod shim;
mod submit;
mod suspend;
mod target;
mod validate;
mod wait;
mod watchdog;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

/// Runs the parsed command line; the exit code follows DESIGN's CLI contract.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
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
        Command::Operator(args) => operator::run(&args),
        Command::Watchdog(args) => watchdog::run(&args),
        Command::Shim(args) => shim::run(&args),
    }
}
