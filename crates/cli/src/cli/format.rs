//! How the commands that print objects write them.

use clap::ValueEnum;

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// YAML (multi-document where there are several objects).
    Yaml,
    /// JSON (pretty-printed).
    Json,
}
