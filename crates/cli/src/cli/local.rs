//! The commands that run jobs on this machine: `run`, `server` (and its internal `__shim`), and
//! what the machine offers both, their volumes included.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use trainctl_api::quantity;
use trainctl_local::claims::VolumeBinding;
use trainctl_local::notify::{NotifySettings, check_webhook_url};
use trainctl_local::process::logs::LogLimit;

use super::format::Format;
use super::values::{namespace_name, volume_binding};

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

/// What this machine offers replicas, as `run`, `server` and `top node` count it.
#[derive(Debug, Clone, Args)]
pub struct CapacityArgs {
    /// CPUs this machine offers replicas [default: its cores].
    #[arg(long, value_name = "N", env = "TRAINCTL_CPUS")]
    pub cpus: Option<String>,

    /// Memory this machine offers replicas, as a quantity (`64Gi`) [default: its RAM].
    #[arg(long, value_name = "QTY", env = "TRAINCTL_MEMORY")]
    pub memory: Option<String>,

    /// GPUs this machine has, numbered from 0 [default: those nvidia-smi lists].
    #[arg(long, value_name = "N", env = "TRAINCTL_GPUS")]
    pub gpus: Option<u32>,
}

/// What this machine offers replicas, the kubelet's restart back-off and log limits, who is
/// told when a job finishes, and the replicas' volumes (`run` and `server`).
#[derive(Debug, Args)]
pub struct MachineArgs {
    /// What this machine offers replicas.
    #[command(flatten)]
    pub capacity: CapacityArgs,

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

    /// Who is told when a job finishes.
    #[command(flatten)]
    pub notify: NotifyArgs,

    /// The claims' directories, and whether replicas get their volumes.
    #[command(flatten)]
    pub volumes: VolumeArgs,
}

/// The directories of the claims that jobs mount, and whether replicas get their volumes
/// (`run` and `server`).
#[derive(Debug, Args)]
#[command(next_help_heading = "Volumes")]
pub struct VolumeArgs {
    /// Bind the claim CLAIM (a volume's `persistentVolumeClaim.claimName`) to the existing
    /// directory PATH, such as your dataset: every job that mounts the claim sees that directory
    /// (`--volume training-data-pvc=/srv/datasets/mnist`). `NAMESPACE/CLAIM=PATH` for a claim
    /// of another namespace than the job's (`server`: than `default`). Repeatable. The binding
    /// is kept until the claim is deleted (`trainctl volumes`); a claim bound to no directory
    /// has its own in the state directory, kept until deleted.
    #[arg(long = "volume", value_name = "CLAIM=PATH", value_parser = volume_binding)]
    pub bindings: Vec<VolumeBinding>,

    /// Run replicas without their volumes: a replica sees this machine's files where its
    /// manifest mounts a volume (for a machine where trainctl cannot make mount namespaces).
    #[arg(long, conflicts_with = "bindings")]
    pub no_volumes: bool,
}

/// Who is told when a job succeeds or fails (`run` and `server`): a command and webhooks, given
/// one JSON document (docs: README, "Notifications").
#[derive(Debug, Args)]
#[command(next_help_heading = "Notifications")]
pub struct NotifyArgs {
    /// When a job succeeds or fails, run `sh -c CMD` with the notification on stdin: JSON
    /// {"job", "state", "reason", "message", "logTail"}, the job as `get -o json` prints it and,
    /// for a failed job, the last 20 log lines of each failed replica. Env: `TRAINCTL_JOB_NAME`,
    /// `TRAINCTL_JOB_NAMESPACE`, `TRAINCTL_JOB_KIND`, `TRAINCTL_JOB_STATE`. Its output goes to
    /// stderr. Not run for a job that is interrupted, suspended or deleted.
    #[arg(long, value_name = "CMD")]
    pub on_finish: Option<String>,

    /// When a job succeeds or fails, POST the same notification to URL (Content-Type:
    /// application/json; http:// only), tried 3 times (after 1s, then 2s) on connection errors,
    /// timeouts and 5xx answers. Repeatable.
    #[arg(long, value_name = "URL", value_parser = webhook_url)]
    pub webhook: Vec<String>,

    /// The longest the --on-finish command may run (then its process group is killed), and the
    /// time within which each webhook is tried (10s at most per try). `run` waits for the
    /// notification, at most this long, before it exits with the job's code.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = notify_timeout)]
    pub notify_timeout: Duration,
}

impl NotifyArgs {
    /// The settings the flags set.
    #[must_use]
    pub fn settings(&self) -> NotifySettings {
        NotifySettings {
            on_finish: self.on_finish.clone(),
            webhooks: self.webhook.clone(),
            timeout: self.notify_timeout,
        }
    }
}

/// A `--webhook` URL: `http://HOST[:PORT][/PATH]`.
fn webhook_url(text: &str) -> Result<String, String> {
    check_webhook_url(text).map(|()| text.to_owned())
}

/// A `--notify-timeout`: a duration (`30s`, `2m`) above zero.
fn notify_timeout(text: &str) -> Result<Duration, String> {
    let duration: jiff::SignedDuration = text
        .parse()
        .map_err(|error| format!("expected a duration such as 30s: {error}"))?;
    if !duration.is_positive() {
        return Err("expected a duration above zero, such as 30s".to_owned());
    }
    Duration::try_from(duration).map_err(|error| error.to_string())
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

    /// How the server logs on stderr: `text`, or `json` (one object a line; each job's
    /// transition, queued, admitted, restarted, finished..., with its fields). `RUST_LOG`
    /// filters (default `info`).
    #[arg(long, value_name = "FORMAT", value_enum, default_value = "text")]
    pub log_format: trainctl_logging::LogFormat,

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
