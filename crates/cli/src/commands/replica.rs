//! `trainctl __replica`: the keeper between trainctl and one replica's command (see
//! `trainctl_local::keeper`).

use std::process::ExitCode;
use std::time::Duration;

use trainctl_local::keeper::{self, KeeperArgs};

use crate::cli::ReplicaArgs;

/// Runs the keeper and exits with the replica's exit code.
pub fn run(args: ReplicaArgs) -> ExitCode {
    let mut command = args.command.into_iter();
    let Some(program) = command.next() else {
        return ExitCode::from(keeper::EXIT_CANNOT_RUN as u8);
    };
    let grace = Duration::try_from_secs_f64(args.grace_seconds).unwrap_or(Duration::ZERO);
    let code = keeper::run(&KeeperArgs {
        parent: args.parent,
        grace,
        program,
        args: command.collect(),
    });
    ExitCode::from(u8::try_from(code).unwrap_or(u8::MAX))
}
