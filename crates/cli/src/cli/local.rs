//! The commands that run jobs on this machine: `run`, `server` (and its internal `__shim`), and
//! what the machine offers both.

use std::path::PathBuf;

use clap::Args;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use trainctl_api::quantity;
use trainctl_local::process::logs::LogLimit;

use super::format::Format;
use super::jobs::namespace_name;

/// Arguments of `run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The manifest: one job, plus the ConfigMaps and Secrets its env reads; `-` reads stdin.
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub file: PathBuf,

    /// Namespace of a job that names none (default `default`).
    #[arg(short = 'n', long = "namespace", value_name = "NS", value_parser = namespace_name)]
    pub namespace: Option<String>,

    /// Print the final job, with its status, on stdout in this format.
    #[arg(short = 'o', long = "output", value_enum)]
    pub output: Option<Format>,

    /// Do not stream the replicas' output to the terminal: it goes to their log files only, for
    /// `trainctl logs`.
    #[arg(short = 'q', long)]
    pub quiet: bool,

    /// What this machine offers and how replicas restart.
    #[command(flatten)]
    pub machine: MachineArgs,
}

/// How large each replica's log may grow, as the kubelet's `containerLogMaxSize` and
/// `containerLogMaxFiles` bound a container's.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Rotate a replica's log file (`NAME.log` to `NAME.log.1`...) once it reaches this size, a
    /// quantity (`10Mi`); 0 keeps the whole log in one file.
    #[arg(long, value_name = "QTY", default_value = "10Mi", value_parser = log_size)]
    pub log_max_size: u64,

    /// How many files a replica's log keeps, the one written included; the oldest beyond them
    /// is deleted.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub log_max_files: u32,
}

impl LogArgs {
    /// The limit the flags set.
    #[must_use]
    pub fn limit(&self) -> LogLimit {
        LogLimit {
            max_size: self.log_max_size,
            max_files: self.log_max_files,
        }
    }
}

/// A log size: a quantity of bytes (`10Mi`, `500k`, `1048576`).
fn log_size(text: &str) -> Result<u64, String> {
    quantity::to_units(&Quantity(text.to_owned()))
        .map_err(|error| format!("expected a quantity of bytes such as 10Mi: {error}"))
}

/// What this machine offers replicas, and the kubelet's restart back-off and log limits (`run`
/// and `server`).
#[derive(Debug, Args)]
pub struct MachineArgs {
    /// CPUs this machine offers replicas [default: its cores].
    #[arg(long, value_name = "N", env = "TRAINCTL_CPUS")]
    pub cpus: Option<String>,

    /// Memory this machine offers replicas, as a quantity (`64Gi`) [default: its RAM].
    #[arg(long, value_name = "QTY", env = "TRAINCTL_MEMORY")]
    pub memory: Option<String>,

    /// GPUs this machine has, numbered from 0 [default: those nvidia-smi lists].
    #[arg(long, value_name = "N", env = "TRAINCTL_GPUS")]
    pub gpus: Option<u32>,

    /// The first in-place restart's back-off, doubling up to --restart-backoff-max (the
    /// kubelet's: 10s to 5m).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "10s",
        env = "TRAINCTL_RESTART_BACKOFF"
    )]
    pub restart_backoff: jiff::SignedDuration,

    /// The longest restart back-off.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "5m",
        env = "TRAINCTL_RESTART_BACKOFF_MAX"
    )]
    pub restart_backoff_max: jiff::SignedDuration,

    /// How large each replica's log may grow.
    #[command(flatten)]
    pub logs: LogArgs,
}

/// Arguments of `server`.
#[derive(Debug, Args)]
pub struct ServerArgs {
    /// The address to listen on; port 0 picks a free port.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: std::net::SocketAddr,

    /// Accept a non-loopback --listen address: anyone who can reach it and has the token can
    /// run commands as you.
    #[arg(long)]
    pub allow_non_loopback: bool,

    /// The priority of a `schedulingPolicy.priorityClass` name, as `NAME=VALUE` (repeatable);
    /// higher goes first in the queue. Known without it: system-node-critical and
    /// system-cluster-critical; other names count as 0.
    #[arg(long, value_name = "NAME=VALUE")]
    pub priority_class: Vec<String>,

    /// What this machine offers and how replicas restart.
    #[command(flatten)]
    pub machine: MachineArgs,
}

/// Arguments of the internal `__shim`.
#[derive(Debug, Args)]
pub struct ShimArgs {
    /// The Unix socket on which the server asks for replicas.
    #[arg(long, value_name = "PATH")]
    pub socket: PathBuf,
}
