//! `version`: this client's version, and the local server's, as `kubectl version` prints them.

use clap::Args;

use super::format::Format;

/// Arguments of `version`.
#[derive(Debug, Args)]
pub struct VersionArgs {
    /// This client's version only: no server is looked for.
    #[arg(long)]
    pub client: bool,

    /// Print the versions as an object in this format.
    #[arg(short = 'o', long = "output", value_enum)]
    pub output: Option<Format>,
}
