//! `completion`: the shell completion script of trainctl's commands and flags.

use clap::Args;
use clap_complete::Shell;

/// Arguments of `completion`.
#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell to complete in.
    #[arg(value_name = "SHELL", value_enum)]
    pub shell: Shell,
}
