//! The command line: clap definitions. Every doc comment here is `--help` text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Run Kubeflow training jobs (TFJob, PyTorchJob, XGBoostJob, PaddleJob, JAXJob, MPIJob) written
/// as kubeflow.org/v1 manifests: check them, see what they create, and (soon) run them on this
/// machine or on Kubernetes.
#[derive(Debug, Parser)]
#[command(name = "trainctl", version, propagate_version = true, after_help = EXAMPLES)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

const EXAMPLES: &str = "\
Examples:
  trainctl validate -f job.yaml              check a manifest (exit 0 valid, 2 invalid)
  trainctl validate -f job.yaml -o yaml      ... and print the job with every default filled in
  trainctl render -f job.yaml                the Pods and Services the operator would create
  trainctl crd --dir deploy/crds             write the CustomResourceDefinitions";

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check manifests: every error with its file, line, column and field path; exit 0 if valid,
    /// 2 if not.
    #[command(after_help = "\
Examples:
  trainctl validate -f job.yaml
  trainctl validate -f a.yaml -f b.json       several files at once
  cat job.yaml | trainctl validate -f -       read standard input
  trainctl validate -f job.yaml -o yaml       print the defaulted job (v1alpha1 converted to v1)")]
    Validate(ValidateArgs),

    /// Print the Kubernetes objects the operator creates for a job (a v1 List: PodGroup,
    /// ConfigMaps, Services, Pods), with every default and every injected variable.
    #[command(after_help = "\
Examples:
  trainctl render -f job.yaml
  trainctl render -f job.yaml -n team-a -o json
  trainctl render -f job.yaml --cluster-domain cluster.local --gang-scheduler volcano")]
    Render(RenderArgs),

    /// Print the CustomResourceDefinitions of the six kinds, or write one file per kind.
    #[command(after_help = "\
Examples:
  trainctl crd | kubectl apply --server-side -f -
  trainctl crd --dir deploy/crds")]
    Crd(CrdArgs),
}

/// Arguments of `validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Manifest files (YAML, multi-document, or JSON); `-` reads standard input.
    #[arg(short = 'f', long = "filename", required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Print each valid job, defaulted, in this format (on standard output).
    #[arg(short = 'o', long = "output", value_enum)]
    pub output: Option<Format>,
}

/// Arguments of `render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// Manifest files (YAML, multi-document, or JSON); `-` reads standard input.
    #[arg(short = 'f', long = "filename", required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Namespace of jobs that name none (default `default`); a job in another namespace is an
    /// error, as with kubectl.
    #[arg(short = 'n', long = "namespace", value_name = "NS")]
    pub namespace: Option<String>,

    /// Cluster domain appended to TF_CONFIG addresses (`<pod>.<ns>.svc.<domain>`).
    #[arg(long, value_name = "D", env = "CUSTOM_CLUSTER_DOMAIN")]
    pub cluster_domain: Option<String>,

    /// Gang scheduler: `volcano` (scheduling.volcano.sh PodGroup) or a scheduler-plugins
    /// scheduler name (scheduling.x-k8s.io PodGroup).
    #[arg(long, value_name = "NAME")]
    pub gang_scheduler: Option<String>,

    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "yaml")]
    pub output: Format,
}

/// Arguments of `crd`.
#[derive(Debug, Args)]
pub struct CrdArgs {
    /// Write `kubeflow.org_<plural>.yaml` files into this directory instead of printing.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// Output format when printing.
    #[arg(short = 'o', long = "output", value_enum, default_value = "yaml")]
    pub output: Format,
}

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// YAML (multi-document where there are several objects).
    Yaml,
    /// JSON (pretty-printed).
    Json,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
