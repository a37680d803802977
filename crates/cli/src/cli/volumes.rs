//! `volumes`: the claims of this machine's jobs, their directories, and their deletion.

use clap::{Args, Subcommand, ValueEnum};

use super::values::namespace_name;

/// Arguments of `volumes`: the list, or `volumes delete`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct VolumesArgs {
    /// What to do instead of listing.
    #[command(subcommand)]
    pub action: Option<VolumesAction>,

    /// The namespace [default: `default`].
    #[arg(short = 'n', long = "namespace", value_name = "NS", value_parser = namespace_name)]
    pub namespace: Option<String>,

    /// Every namespace.
    #[arg(short = 'A', long = "all-namespaces", conflicts_with = "namespace")]
    pub all_namespaces: bool,

    /// Output format: `wide` (the table with AGE and FILES), `json` or `yaml` (`{"items": [...]}`,
    /// every field, sizes in bytes).
    #[arg(short = 'o', long = "output", value_name = "FORMAT", value_enum)]
    pub output: Option<VolumesFormat>,
}

/// How `volumes` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VolumesFormat {
    /// The table with more columns.
    Wide,
    /// JSON.
    Json,
    /// YAML.
    Yaml,
}

/// What `volumes` does instead of listing.
#[derive(Debug, Subcommand)]
pub enum VolumesAction {
    /// Delete claims: a claim's own directory (under the state directory) is removed with what
    /// it holds; a claim bound to a directory of yours (`--volume`) is unbound, and the
    /// directory is left as it is. Refused for a claim that a job which has not finished mounts.
    #[command(after_help = "\
Examples:
  trainctl volumes delete checkpoints              remove the claim's own directory
  trainctl volumes delete training-data-pvc -n ml  unbind it (the dataset stays)
  trainctl volumes delete a b c                    several (one not found does not stop the others)")]
    Delete(VolumesDeleteArgs),
}

/// Arguments of `volumes delete`.
#[derive(Debug, Args)]
pub struct VolumesDeleteArgs {
    /// The claims (`persistentVolumeClaim.claimName`).
    #[arg(value_name = "CLAIM", required = true, value_parser = claim_name)]
    pub claims: Vec<String>,

    /// The claims' namespace [default: `default`].
    #[arg(short = 'n', long = "namespace", value_name = "NS", value_parser = namespace_name)]
    pub namespace: Option<String>,
}

/// A claim's name, a DNS-1123 subdomain: never a path (`..`, `/`) that would reach outside the
/// claims' directory.
fn claim_name(text: &str) -> Result<String, String> {
    trainctl_local::claims::check_claim_name(text)
        .map(|()| text.to_owned())
        .map_err(|problem| {
            format!(
                "`{text}` is not a claim's name: {problem}; a claim's name is a DNS-1123 \
                 subdomain: lowercase letters, digits, `-` and `.`"
            )
        })
}

#[cfg(test)]
mod tests;
