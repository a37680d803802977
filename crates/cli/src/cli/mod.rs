//! The command line: clap definitions, each command's arguments in the submodule of its group.
//! Every doc comment on a command or an argument is `--help` text.

mod format;
mod jobs;
mod local;
mod logs;
mod manifests;
mod operator;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use format::Format;
pub use jobs::{GetArgs, GetFormat, JobArgs, SubmitArgs, WaitArgs};
pub use logs::LogsArgs;
pub use local::{MachineArgs, RunArgs, ServerArgs, ShimArgs};
pub use manifests::{CrdArgs, RenderArgs, ValidateArgs};
pub use operator::{LogFormat, OperatorArgs};

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
  trainctl --kube submit -f job.yaml             in the kubeconfig's cluster
  trainctl apply -f job.yaml                     the same as submit (so is create)")]
    #[command(visible_aliases = ["apply", "create"])]
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

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
