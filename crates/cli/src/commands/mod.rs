//! One module per subcommand.

mod crd;
mod render;
mod validate;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

/// Runs the parsed command line; the exit code follows DESIGN's CLI contract.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Validate(args) => validate::run(&args),
        Command::Render(args) => render::run(&args),
        Command::Crd(args) => crd::run(&args),
    }
}
