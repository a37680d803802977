//! The command line: clap definitions. Every doc comment here is `--help` text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::wait_for::WaitFor;

/// Run Kubeflow training jobs (TFJob, PyTorchJob, XGBoostJob, PaddleJob, JAXJob, MPIJob) written
/// as kubeflow.org/v1 manifests: check them, see what they create, and run them on this machine.
#[derive(Debug, Parser)]
#[command(name = "trainctl", version, propagate_version = true, after_help = EXAMPLES)]
pub struct Cli {
    /// The state directory: the job database and the replicas' logs [default:
    /// ~/.local/share/trainctl].
    #[arg(long, global = true, value_name = "DIR", env = "TRAINCTL_HOME")]
    pub state_dir: Option<PathBuf>,

    /// Where submit, get, describe, logs, delete, wait, suspend and resume act: a cluster.
    #[command(flatten)]
    pub cluster: ClusterArgs,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

const EXAMPLES: &str = "\
Examples:
  trainctl run -f examples/tfjob-mwms.yaml   run a TFJob on this machine, logs and status live
  trainctl server &                          start the local control plane, then:
  trainctl submit -f job.yaml                queue a job on it
  trainctl wait digits-mwms --for condition=Succeeded --timeout 10m
  trainctl get                               the jobs run here, with their state
  trainctl describe digits-mwms              one job: spec, replicas, conditions, events
  trainctl logs digits-mwms --replica worker-1 -f
  trainctl --kube submit -f job.yaml         the same commands on the kubeconfig's cluster
  trainctl --kube --context prod get -o wide
  trainctl validate -f job.yaml              check a manifest (exit 0 valid, 2 invalid)
  trainctl render -f job.yaml                the Pods and Services the operator would create
  trainctl crd --dir deploy/crds             write the CustomResourceDefinitions";

/// Cluster mode: the job commands talk to the Kubernetes API server of a kubeconfig context
/// instead of this machine's state directory.
#[derive(Debug, Args)]
#[command(next_help_heading = "Cluster mode")]
pub struct ClusterArgs {
    /// Act on a Kubernetes cluster: submit, get, describe, logs, delete, wait, suspend and resume
    /// use the kubeconfig's current context (KUBECONFIG, else ~/.kube/config; in a pod, its
    /// service account), with the same output as on this machine.
    #[arg(long, global = true, env = "TRAINCTL_KUBE")]
    pub kube: bool,

    /// The kubeconfig context to use [default: the current context]; implies --kube for the job
    /// commands (the operator uses it too).
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,

    /// The kubeconfig file [default: KUBECONFIG, else ~/.kube/config]; implies --kube for the job
    /// commands (the operator uses it too).
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
}

impl ClusterArgs {
    /// Whether the commands act on a cluster.
    pub fn enabled(&self) -> bool {
        self.kube || self.context.is_some() || self.kubeconfig.is_some()
    }
}

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

    /// Run a job on this machine, in the foreground: each replica is a local process with the env
    /// the operator injects (TF_CONFIG, MASTER_ADDR...) on loopback ports. Logs stream on stderr
    /// prefixed `worker-1 |`, status changes as they happen, and a summary at the end. Exit 0 if
    /// the job Succeeded, 1 if it Failed, 2 if the manifest is invalid, 130 on Ctrl-C (which stops
    /// every replica).
    #[command(after_help = "\
The image is not pulled: each replica runs its `command` with this machine's programs, and
inherits trainctl's environment (activate a virtualenv first) with the pod's env on top.
Replicas restart in place by their restartPolicy with the kubelet's back-off; the job's
restarts, backoffLimit, activeDeadlineSeconds and successPolicy follow the operator's rules.
A job waits while other running jobs hold the GPUs (or CPU, memory) it needs, and fails at once
if this machine can never fit it. The job and its logs stay in the state directory: see
`trainctl get` and `trainctl logs`.

Examples:
  trainctl run -f examples/tfjob-mwms.yaml
  trainctl run -f job.yaml -o json > final.json      the final job, with status, on stdout
  trainctl run -f job.yaml --gpus 4                  pretend this machine has 4 GPUs
  trainctl run -f job.yaml --restart-backoff 1s      restart failed replicas sooner")]
    Run(RunArgs),

    /// Send jobs to the local control plane (`trainctl server`), which queues them and runs each
    /// when this machine has room; with --kube, create them in the cluster. The manifest is
    /// checked here first: an invalid one is reported as `validate` does (exit 2), and no server
    /// is needed for that.
    #[command(after_help = "\
A job of the same namespace, kind and name that has finished is replaced; one that has not is a
conflict (exit 1). Follow a submitted job with `trainctl get`, `trainctl logs -f` and
`trainctl wait`.

With --kube, the jobs are created (defaulted, as `validate -o yaml` prints them) in -n, else the
context's namespace; the manifest's ConfigMaps and Secrets are applied first (server-side
apply). A job that exists already is an error (exit 1), as with `kubectl create`.

Examples:
  trainctl submit -f job.yaml
  trainctl submit -f job.yaml -n team-a          in namespace team-a
  cat job.yaml | trainctl submit -f -            read standard input
  trainctl --kube submit -f job.yaml             in the kubeconfig's cluster")]
    Submit(SubmitArgs),

    /// List the jobs run on this machine (with --kube, a cluster's), or show one: NAME, STATE,
    /// AGE (`-o wide` adds replicas, restarts and duration).
    #[command(after_help = "\
Examples:
  trainctl get                       every job, every kind
  trainctl get tfjobs                TFJobs only (kubectl spellings: tfjob, tfjobs, TFJob)
  trainctl get tfjob digits-mwms -o yaml
  trainctl --kube get -A -o wide     every job of the cluster, every namespace")]
    Get(GetArgs),

    /// Show one job in detail: its spec in short, state and times, each replica's process (with
    /// --kube, its pod), the job's conditions and its events.
    #[command(after_help = "\
Examples:
  trainctl describe digits-mwms
  trainctl describe tfjob digits-mwms -n team-a
  trainctl --kube describe digits-mwms        replicas from the pods, events from the cluster")]
    Describe(JobArgs),

    /// Print a job's logs: one replica's with `--replica`, else every replica's (`--all`), each
    /// line prefixed with its replica. With `-f`, keep printing as the replicas write, until the
    /// job has finished and every log is printed to its end.
    #[command(after_help = "\
Examples:
  trainctl logs digits-mwms
  trainctl logs digits-mwms --replica worker-1
  trainctl logs tfjob digits-mwms --replica chief-0
  trainctl logs digits-mwms -f                  every replica, as it writes, until the job ends
  trainctl --kube logs digits-mwms -f           every pod's framework container, the same way")]
    Logs(LogsArgs),

    /// Wait until a job has a condition (`Succeeded`, `Failed`, `Running`...), or is deleted.
    /// Exit 0 when it does; exit 1 on timeout, or at once when the job finished in a way that
    /// can never meet the condition (it Failed while waiting for Succeeded).
    #[command(after_help = "\
Condition names are case-insensitive: Created, Running, Restarting, Suspended, Succeeded,
Failed. `condition=NAME=False` waits for the condition to be recorded as not holding.

Examples:
  trainctl wait digits-mwms --for condition=Succeeded
  trainctl wait tfjob digits-mwms --for=condition=Running --timeout 2m
  trainctl wait digits-mwms --for delete --timeout 1m
  trainctl submit -f job.yaml && trainctl wait digits-mwms --for condition=Succeeded --timeout 1h
  trainctl --kube wait digits-mwms --for condition=Succeeded --timeout 1h   watches the job")]
    Wait(WaitArgs),

    /// Suspend a job through the local control plane: its replicas are stopped and the machine's
    /// CPUs, memory and GPUs it held are given back until `trainctl resume`. With --kube, set
    /// its `spec.runPolicy.suspend` in the cluster.
    #[command(after_help = "\
Examples:
  trainctl suspend digits-mwms
  trainctl suspend pytorchjob digits-mwms -n team-a
  trainctl --kube suspend digits-mwms")]
    Suspend(JobArgs),

    /// Resume a suspended job through the local control plane: it is queued again and starts
    /// when the machine has room. With --kube, clear its `spec.runPolicy.suspend` in the cluster.
    #[command(after_help = "\
Examples:
  trainctl resume digits-mwms
  trainctl resume pytorchjob digits-mwms -n team-a
  trainctl --kube resume digits-mwms")]
    Resume(JobArgs),

    /// Delete a job through the local control plane: its replicas are stopped (SIGTERM, grace
    /// period, SIGKILL), then the job, its events and its logs are removed. With --kube, delete
    /// it in the cluster as kubectl does: in the background (the job goes at once, the garbage
    /// collector removes its pods and services after).
    #[command(after_help = "\
Examples:
  trainctl delete digits-mwms
  trainctl delete tfjob digits-mwms -n team-a
  trainctl --kube delete digits-mwms && trainctl --kube wait digits-mwms --for delete")]
    Delete(JobArgs),

    /// Run the local control plane: it queues submitted jobs, admits them as this machine's
    /// CPUs, memory and GPUs allow, supervises their replicas and serves the HTTP API
    /// (docs/server-api.md), `/metrics` and `/healthz` on loopback.
    #[command(after_help = "\
The server writes its address (server.json) and a fresh bearer token (server.token), both
readable by you only, into the state directory; the other commands find it there. It listens on
loopback only unless --allow-non-loopback is given.

Examples:
  trainctl server &                          start it in the background
  trainctl server --listen 127.0.0.1:7480    a fixed port
  trainctl server --gpus 4                   pretend this machine has 4 GPUs")]
    Server(ServerArgs),

    /// Run the Kubernetes operator: one controller per job kind, turning the cluster's jobs into
    /// Pods, Services and PodGroups, with leader election, `/metrics`, `/healthz` and `/readyz`.
    /// It connects like kubectl: a kubeconfig (--kubeconfig, KUBECONFIG, ~/.kube/config), else
    /// the pod's service account.
    #[command(after_help = "\
SIGTERM or SIGINT stops it gracefully: no new reconciles, those in flight finish, the lease is
released; a second signal stops at once. See docs/operator.md for the metrics, the probes and
leader election.

Examples:
  trainctl operator                                  every kind, every namespace
  trainctl operator --enable-scheme tfjob --enable-scheme pytorchjob --namespace team-a
  trainctl operator --leader-elect --gang-scheduler-name volcano
  trainctl operator --kubeconfig ~/.kube/dev --context kind-dev --metrics-bind-address 0")]
    Operator(OperatorArgs),

    /// Internal: the watchdog that stops a job's replicas if `trainctl run` dies.
    #[command(name = "__watchdog", hide = true)]
    Watchdog,

    /// Internal: the parent of a server's replicas, so that they outlive a server that dies.
    #[command(name = "__shim", hide = true)]
    Shim(ShimArgs),
}

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

/// Arguments of `get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// The kind (`tfjob`, `tfjobs`, `TFJob`, `pytorchjob`...); every kind when omitted.
    #[arg(value_name = "KIND")]
    pub kind: Option<String>,

    /// A job's name.
    #[arg(value_name = "NAME")]
    pub name: Option<String>,

    /// The namespace [default: `default`; with --kube, the context's namespace, else `default`].
    #[arg(short = 'n', long = "namespace", value_name = "NS")]
    pub namespace: Option<String>,

    /// Every namespace.
    #[arg(short = 'A', long = "all-namespaces", conflicts_with = "namespace")]
    pub all_namespaces: bool,

    /// Output format: a table (`wide` adds columns), or the job objects.
    #[arg(short = 'o', long = "output", value_enum)]
    pub output: Option<GetFormat>,
}

/// How `get` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GetFormat {
    /// The table with more columns.
    Wide,
    /// YAML objects.
    Yaml,
    /// JSON objects.
    Json,
}

/// A job named on the command line: `[KIND] NAME`, in a namespace.
#[derive(Debug, Args)]
pub struct JobArgs {
    /// `NAME`, or `KIND NAME` when jobs of several kinds share the name (`tfjob`, `tfjobs`,
    /// `TFJob`...).
    #[arg(value_name = "[KIND] NAME", num_args = 1..=2, required = true)]
    pub target: Vec<String>,

    /// The namespace [default: `default`; with --kube, the context's namespace, else `default`].
    #[arg(short = 'n', long = "namespace", value_name = "NS")]
    pub namespace: Option<String>,
}

/// Arguments of `logs`.
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The job.
    #[command(flatten)]
    pub job: JobArgs,

    /// One replica, as `<type>-<index>` (`worker-1`, `chief-0`, `launcher`...).
    #[arg(long, value_name = "REPLICA")]
    pub replica: Option<String>,

    /// Every replica, each line prefixed with its replica (the default without --replica).
    #[arg(long, conflicts_with = "replica")]
    pub all: bool,

    /// Keep printing as the replicas write (a replica not started yet is printed once it
    /// starts), until the job has finished and every log is printed to its end.
    #[arg(short = 'f', long)]
    pub follow: bool,
}

/// Arguments of `submit`.
#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// The manifest: jobs, plus the ConfigMaps and Secrets their env reads; `-` reads stdin.
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub file: PathBuf,

    /// Namespace of the jobs that name none (default `default`); a job in another namespace is
    /// an error, as with kubectl.
    #[arg(short = 'n', long = "namespace", value_name = "NS")]
    pub namespace: Option<String>,
}

/// Arguments of `wait`.
#[derive(Debug, Args)]
pub struct WaitArgs {
    /// The job.
    #[command(flatten)]
    pub job: JobArgs,

    /// What to wait for: `condition=NAME` (the condition holds; `condition=NAME=False`: it is
    /// recorded as not holding), or `delete` (the job is gone).
    #[arg(long = "for", value_name = "CONDITION", required = true)]
    pub wait_for: WaitFor,

    /// How long to wait before giving up (exit 1), as `30s`, `5m`, `2h`; `0s` checks once.
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub timeout: jiff::SignedDuration,
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

/// Arguments of `operator`.
#[derive(Debug, Args)]
pub struct OperatorArgs {
    /// A kind to run a controller for (repeatable, or comma-separated): tfjob, pytorchjob,
    /// xgboostjob, paddlejob, jaxjob, mpijob (kubectl spellings work too) [default: every kind].
    #[arg(long, value_name = "KIND", value_delimiter = ',')]
    pub enable_scheme: Vec<trainctl_api::JobKind>,

    /// A namespace to watch (repeatable, or comma-separated) [default: every namespace].
    #[arg(long, value_name = "NS", value_delimiter = ',', value_parser = namespace_name)]
    pub namespace: Vec<String>,

    /// Gang scheduling: `volcano` (scheduling.volcano.sh PodGroups), or the name of a
    /// scheduler-plugins scheduler (scheduling.x-k8s.io PodGroups) [default: none].
    #[arg(long, value_name = "NAME")]
    pub gang_scheduler_name: Option<String>,

    /// Requests a second the Kubernetes client sends, on average.
    #[arg(long, value_name = "F", default_value_t = 500.0, value_parser = requests_per_second)]
    pub kube_api_qps: f64,

    /// Requests the Kubernetes client may send at once, above the average rate (the default lets
    /// the 2,000 Pods and Services of a 1,000-replica job go out without waiting for the rate).
    #[arg(long, value_name = "N", default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..))]
    pub kube_api_burst: u32,

    /// Requests the Kubernetes client has waiting for their response at once (each holds a
    /// connection: kube's client speaks HTTP/1.1); further requests wait their turn.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub kube_api_max_in_flight: u32,

    /// Reconciles of one kind that run at once.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    pub controller_threads: u32,

    /// Run the controllers only while holding the leader Lease, so that several replicas can
    /// run with one active.
    #[arg(long)]
    pub leader_elect: bool,

    /// The namespace of the leader Lease [default: `POD_NAMESPACE`, else the service account's
    /// namespace, else kubeflow].
    #[arg(long, value_name = "NS", env = "POD_NAMESPACE", value_parser = namespace_name)]
    pub leader_election_namespace: Option<String>,

    /// The name of the leader Lease.
    #[arg(long, value_name = "NAME", default_value = "trainctl-operator")]
    pub leader_election_id: String,

    /// Where to serve /metrics: HOST:PORT, :PORT for every interface, or 0 to disable.
    #[arg(long, value_name = "ADDR", default_value = ":8080")]
    pub metrics_bind_address: trainctl_operator::settings::BindAddress,

    /// Where to serve /healthz and /readyz: HOST:PORT, :PORT for every interface, or 0 to
    /// disable.
    #[arg(long, value_name = "ADDR", default_value = ":8081")]
    pub health_probe_bind_address: trainctl_operator::settings::BindAddress,

    /// Cluster domain appended to TF_CONFIG addresses (`<pod>.<ns>.svc.<domain>`).
    #[arg(long, value_name = "D", env = "CUSTOM_CLUSTER_DOMAIN")]
    pub cluster_domain: Option<String>,

    /// Image of PyTorch's init container, which waits for the master's address.
    #[arg(long, value_name = "IMAGE", default_value = trainctl_engine::objects::DEFAULT_PYTORCH_INIT_IMAGE)]
    pub pytorch_init_container_image: String,

    /// Lookups PyTorch's init container makes before giving up.
    #[arg(long, value_name = "N", default_value_t = trainctl_engine::objects::DEFAULT_PYTORCH_INIT_MAX_TRIES)]
    pub pytorch_init_container_max_tries: u32,

    /// Image of MPI's init container delivering kubectl to the launcher.
    #[arg(long, value_name = "IMAGE", default_value = trainctl_engine::objects::DEFAULT_MPI_KUBECTL_DELIVERY_IMAGE)]
    pub mpi_kubectl_delivery_image: String,

    /// Log format on stderr [default: text on a terminal, else json]. `RUST_LOG` filters (default
    /// info).
    #[arg(long, value_name = "FORMAT", value_enum)]
    pub log_format: Option<LogFormat>,
}

/// How the operator logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One JSON object a line, with the span fields (`kind`, `job`).
    Json,
    /// Human-readable lines.
    Text,
}

/// A namespace name: a DNS-1123 label.
pub fn namespace_name(text: &str) -> Result<String, String> {
    let valid = !text.is_empty()
        && text.len() <= 63
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !text.starts_with('-')
        && !text.ends_with('-');
    if valid {
        Ok(text.to_owned())
    } else {
        Err(
            "a namespace is a DNS-1123 label: lowercase letters, digits and `-`, starting and \
             ending with a letter or digit, at most 63 characters"
                .to_owned(),
        )
    }
}

/// A request rate: a finite number above 0.
fn requests_per_second(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if rate.is_finite() && rate > 0.0 => Ok(rate),
        _ => Err("expected a number of requests a second above 0, such as 500 or 20.5".to_owned()),
    }
}

/// Arguments of the internal `__shim`.
#[derive(Debug, Args)]
pub struct ShimArgs {
    /// The Unix socket on which the server asks for replicas.
    #[arg(long, value_name = "PATH")]
    pub socket: PathBuf,
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
