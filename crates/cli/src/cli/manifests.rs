//! The commands that only read manifests: `validate`, `render` and `crd`.

use std::path::PathBuf;

use clap::Args;

use super::format::Format;
use super::local::CapacityArgs;
use super::values::namespace_name;

/// Arguments of `validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Manifest files (YAML, multi-document, or JSON); `-` reads standard input.
    #[arg(short = 'f', long = "filename", required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Print each valid job, defaulted, in this format (on standard output).
    #[arg(short = 'o', long = "output", value_enum)]
    pub output: Option<Format>,

    /// The machine the jobs are checked against, as `run` and `server` take it.
    #[command(flatten)]
    pub capacity: CapacityArgs,

    /// Check the jobs as `run --no-volumes` runs them: without their volumes.
    #[arg(long)]
    pub no_volumes: bool,
}

/// Arguments of `render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// Manifest files (YAML, multi-document, or JSON); `-` reads standard input.
    #[arg(short = 'f', long = "filename", required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Namespace of jobs that name none (default `default`); a job in another namespace is an
    /// error, as with kubectl.
    #[arg(short = 'n', long = "namespace", value_name = "NS", value_parser = namespace_name)]
    pub namespace: Option<String>,

    /// Cluster domain appended to TF_CONFIG addresses (`<pod>.<ns>.svc.<domain>`).
    #[arg(long, value_name = "D", env = "CUSTOM_CLUSTER_DOMAIN")]
    pub cluster_domain: Option<String>,

    /// Gang scheduler: `volcano` (scheduling.volcano.sh PodGroup), `kubernetes` (Kubernetes'
    /// own, 1.36+: scheduling.k8s.io Workload and PodGroup) or a scheduler-plugins scheduler
    /// name (scheduling.x-k8s.io PodGroup).
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
