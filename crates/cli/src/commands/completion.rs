//! `trainctl completion SHELL`: the completion script of every command and flag, generated from
//! the command line's definition (`clap_complete`), so that it never lags behind it.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::CommandFactory;

use crate::cli::{Cli, CompletionArgs};

/// Prints the script for the shell asked for.
pub fn run(args: &CompletionArgs) -> anyhow::Result<ExitCode> {
    let mut command = offered();
    // Generated in memory: the generator panics on a failed write (`completion bash | head`).
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "trainctl", &mut script);
    let mut out = io::stdout().lock();
    out.write_all(&script)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The command line as a user may type it: without the internal commands (`__shim`,
/// `__watchdog`), which the generators would offer although `--help` hides them.
fn offered() -> clap::Command {
    let full = Cli::command();
    clap::Command::new("trainctl")
        .version(env!("CARGO_PKG_VERSION"))
        .propagate_version(true)
        .args(full.get_arguments().cloned())
        .subcommands(
            full.get_subcommands()
                .filter(|subcommand| !subcommand.is_hide_set())
                .cloned(),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_but_the_internal_ones_is_offered_with_the_global_flags() {
        let command = offered();
        let names: Vec<&str> = command
            .get_subcommands()
            .map(clap::Command::get_name)
            .collect();
        for name in ["run", "get", "events", "top", "completion", "version"] {
            assert!(names.contains(&name), "{name} in {names:?}");
        }
        assert!(
            !names.iter().any(|name| name.starts_with("__")),
            "{names:?}"
        );
        let flags: Vec<&str> = command
            .get_arguments()
            .filter_map(clap::Arg::get_long)
            .collect();
        for flag in ["state-dir", "kube", "context", "kubeconfig"] {
            assert!(flags.contains(&flag), "--{flag} in {flags:?}");
        }
        assert!(command.get_version().is_some());
    }
}
