//! The commands that run jobs on this machine: `run`, `server` (and its internal `__shim`), and
//! what the machine offers both.

use std::path::PathBuf;

use clap::Args;

use super::format::Format;

/// Arguments of `run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The manifest: one job, plus the ConfigMaps and Secrets its env reads; `-` reads stdin.
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub file: PathBuf,

    /// Namespace of a job that names none (default `default`).
    #[arg(short = 'n', long = "namespace", value_name = "NS")]
    pub namespace: Option<String>,

    /// Print the final job, with its status, on stdout in this format.
    #[arg(short = 'o', long = "output", value_enum)]
    pub output: Option<Format>,

    /// Do not stream the replicas' output to the terminal: they write it to their log files
    /// directly, for `trainctl logs`.
    #[arg(short = 'q', long)]
    pub quiet: bool,

    /// What this machine offers and how replicas restart.
    #[command(flatten)]
    pub machine: MachineArgs,
}

/// What this machine offers replicas, and the kubelet's restart back-off (`run` and `server`).
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
