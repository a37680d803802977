//! The command line: clap definitions, each command's arguments in the submodule of its group.
//! Every doc comment on a command or an argument is `--help` text.

mod completion;
mod dashboard;
mod events;
mod format;
mod jobs;
mod local;
mod logs;
mod manifests;
mod replicas;
mod tensorboard;
mod top;
mod values;
mod version;
mod volumes;

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand};

pub use completion::CompletionArgs;

/// Arguments of `repair`.
#[derive(Debug, Args)]
pub struct RepairArgs {
    /// Only check: exit 1 when the state database is damaged, changing nothing.
    #[arg(long)]
    pub check: bool,
}
pub use dashboard::DashboardArgs;
pub use events::EventsArgs;
pub use format::Format;
pub use jobs::{GetArgs, GetFormat, JobArgs, JobsArgs, SubmitArgs, WaitArgs};
pub use local::{CapacityArgs, MachineArgs, RunArgs, ServerArgs, ShimArgs};
pub use logs::LogsArgs;
pub use manifests::{CrdArgs, RenderArgs, ValidateArgs};
pub use replicas::{JobName, ReplicasArgs, ReplicasFormat, job_name};
pub use tensorboard::TensorboardArgs;
pub use top::{TopArgs, TopJobArgs, TopNodeArgs, TopResource};
pub use version::VersionArgs;
pub use volumes::{VolumesAction, VolumesArgs, VolumesDeleteArgs, VolumesFormat};

/// Run Kubeflow training jobs (TFJob, PyTorchJob, XGBoostJob, PaddleJob, JAXJob, MPIJob, MXJob)
/// written as kubeflow.org/v1 manifests: check them, see what they create, and run them on this machine.
#[derive(Debug, Parser)]
#[command(name = "trainctl", version, propagate_version = true, after_help = EXAMPLES)]
pub struct Cli {
    /// The state directory: the job database and the replicas' logs [env: TRAINCTL_HOME]
    /// [default: ~/.local/share/trainctl].
    // The environment is read after parsing (`parse_or_exit`), not by clap: clap would show a
    // flag set from the environment in usage lines as if it were required.
    #[arg(long, global = true, value_name = "DIR")]
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
  trainctl tensorboard digits-mwms           its training curves in TensorBoard
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
    /// service account), with the same output as on this machine [env: TRAINCTL_KUBE].
    #[arg(long, global = true)]
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

impl Cli {
    /// The parsed command line; on a usage error, clap's message (with a suggestion for a
    /// mistyped command: `gte` → `get`) and exit 2.
    pub fn parse_or_exit() -> Cli {
        let mut cli =
            Cli::try_parse().unwrap_or_else(|error| with_command_suggestion(error).exit());
        if cli.state_dir.is_none() {
            cli.state_dir = std::env::var_os("TRAINCTL_HOME")
                .filter(|dir| !dir.is_empty())
                .map(PathBuf::from);
        }
        cli.cluster.kube |= std::env::var("TRAINCTL_KUBE").is_ok_and(|value| is_truthy(&value));
        cli
    }
}

/// Whether an environment variable set to `value` turns a flag on, as clap reads one: anything
/// but empty, `0`, `n`, `no`, `f`, `false` and `off`.
fn is_truthy(value: &str) -> bool {
    !["", "0", "n", "no", "f", "false", "off"]
        .iter()
        .any(|falsy| value.trim().eq_ignore_ascii_case(falsy))
}

/// `error`, with clap's `tip: a similar subcommand exists` added when the command typed is at
/// most two edits from one (a swap of two letters counts as one: clap's own measure misses
/// `gte` for `get`).
fn with_command_suggestion(mut error: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};

    if error.kind() != ErrorKind::InvalidSubcommand
        || error.get(ContextKind::SuggestedSubcommand).is_some()
    {
        return error;
    }
    let Some(ContextValue::String(typed)) = error.get(ContextKind::InvalidSubcommand) else {
        return error;
    };
    let command = Cli::command();
    let closest = command
        .get_subcommands()
        .filter(|subcommand| !subcommand.is_hide_set())
        .flat_map(|subcommand| {
            std::iter::once(subcommand.get_name()).chain(subcommand.get_visible_aliases())
        })
        .map(|name| (strsim::damerau_levenshtein(typed, name), name))
        .filter(|&(distance, _)| distance <= 2)
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, name)| name.to_owned());
    if let Some(name) = closest {
        error.insert(
            ContextKind::SuggestedSubcommand,
            ContextValue::Strings(vec![name]),
        );
    }
    error
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

    /// Print the CustomResourceDefinitions of the seven kinds, or write one file per kind.
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
`trainctl get` and `trainctl logs`. With --on-finish or --webhook, a job that succeeds or fails
is announced in one JSON document (the job, its state and message, the failed replicas' last
log lines), and `run` waits for that before it exits (README, \"Notifications\").
Volumes are mounted where the manifest says, in a mount namespace per replica: claims are
directories that outlive the job (`trainctl volumes`), ConfigMaps and Secrets come from the same
file (docs/volumes.md). Each replica gets TRAINCTL_TENSORBOARD_DIR, the job's directory for
TensorBoard event files (`TensorBoard(log_dir=os.environ[\"TRAINCTL_TENSORBOARD_DIR\"])`),
where trainctl reads the job's training curves.

Examples:
  trainctl run -f examples/tfjob-mwms.yaml
  trainctl run -f job.yaml -o json > final.json      the final job, with status, on stdout
  trainctl run -f job.yaml --gpus 4                  pretend this machine has 4 GPUs
  trainctl run -f job.yaml --restart-backoff 1s      restart failed replicas sooner
  trainctl run -f job.yaml --volume data=/srv/mnist  the claim `data` is your directory
  trainctl run -f job.yaml --on-finish 'jq -r .message > outcome.txt'
  trainctl run -f job.yaml --webhook http://127.0.0.1:9000/hook --notify-timeout 10s")]
    Run(RunArgs),

    /// Send jobs to the local control plane (`trainctl server`), which queues them and runs each
    /// when this machine has room; with --kube, create them in the cluster. The manifest is
    /// checked here first: an invalid one is reported as `validate` does (exit 2), and no server
    /// is needed for that.
    #[command(after_help = "\
A job of the same namespace, kind and name that has finished is replaced; one that has not is a
conflict (exit 1). Follow a submitted job with `trainctl get`, `trainctl logs -f` and
`trainctl wait`.

The server keeps the ConfigMaps, Secrets and ResourceQuotas it is given, alone or with jobs
(`configmap/NAME created`, or `configured`): a job submitted later reads the ConfigMaps and
Secrets it references from its own file, else from those the server keeps, as they are then.

With --kube, the jobs are created (defaulted, as `validate -o yaml` prints them) in -n, else the
context's namespace; the manifest's ConfigMaps and Secrets are applied first (server-side
apply). A job that exists already is an error (exit 1), as with `kubectl create`.

Examples:
  trainctl submit -f job.yaml
  trainctl submit -f job.yaml -n team-a          in namespace team-a
  trainctl submit -f configmap.yaml              then jobs that mount it or read its keys
  trainctl submit -f job.yaml --volume training-data-pvc=/srv/datasets/mnist
  cat job.yaml | trainctl submit -f -            read standard input
  trainctl submit -f job.yaml --wait             until it ends; exit 0 Succeeded, 1 Failed
  trainctl --kube submit -f job.yaml             in the kubeconfig's cluster
  trainctl apply -f job.yaml                     the same as submit (so is create)")]
    #[command(visible_aliases = ["apply", "create"])]
    Submit(SubmitArgs),

    /// List the jobs run on this machine (with --kube, a cluster's), or show some: NAME, STATE,
    /// AGE (`-o wide` adds replicas, restarts, duration and why a job waits).
    #[command(after_help = "\
Jobs are named as kubectl names objects: NAME..., KIND NAME..., KIND/NAME... (the form
`-o name` prints), or -f FILE for the jobs of a manifest.

Examples:
  trainctl get                       every job, every kind
  trainctl get tfjobs                TFJobs only (kubectl spellings: tfjob, tfjobs, TFJob)
  trainctl get tfjob/digits-mwms pytorchjob/bert
  trainctl get digits-mwms -o yaml
  trainctl get -f job.yaml           the jobs of a manifest
  trainctl get -A -l team=vision --show-labels
  trainctl get -o jsonpath='{range .items[*]}{.metadata.name} {.status.conditions[-1:].type}{\"\\n\"}{end}'
  trainctl get -o custom-columns=NAME:.metadata.name,STARTED:.status.startTime --sort-by=.status.startTime
  trainctl get -w                    then each job again as it changes (Ctrl-C ends)
  trainctl --kube get -A -o wide     every job of the cluster, every namespace")]
    Get(GetArgs),

    /// Show one job in detail: its spec in short, state and times, each replica's process (with
    /// --kube, its pod), the job's conditions and its events.
    #[command(after_help = "\
Examples:
  trainctl describe digits-mwms
  trainctl describe tfjob digits-mwms -n team-a
  trainctl describe tfjob/a pytorchjob/b        several, a blank line between
  trainctl describe -f job.yaml                 the jobs of a manifest
  trainctl --kube describe digits-mwms        replicas from the pods, events from the cluster")]
    Describe(JobsArgs),

    /// Print a job's logs: one replica's with `--replica`, else every replica's (`--all`), each
    /// line prefixed with its replica. With `-f`, keep printing as the replicas write, until the
    /// job has finished and every log is printed to its end.
    #[command(after_help = "\
The job may be named by a pod's name (digits-mwms-worker-1: the job's replica worker-1), or as
KIND/NAME. --tail, --since, --timestamps and --previous select as `kubectl logs` does; a line
marks where a replica restarted. As with kubectl, -f is --follow (logs takes no manifest).

Examples:
  trainctl logs digits-mwms
  trainctl logs digits-mwms --replica worker-1
  trainctl logs digits-mwms-worker-1                 a pod's name, as kubectl takes it: the job's replica
  trainctl logs tfjob/digits-mwms --replica chief-0
  trainctl logs digits-mwms -f                       every replica, as it writes, until the job ends
  trainctl logs digits-mwms --tail 20 -f             the last 20 lines of each replica, then what follows
  trainctl logs digits-mwms-worker-1 --previous      the run before worker-1's last restart
  trainctl logs digits-mwms --since 5m --timestamps  the last 5 minutes, each line after its time
  trainctl --kube logs digits-mwms -f                every pod's framework container, the same way
  trainctl --kube logs digits-mwms-worker-1 -p       its previous container (kubectl logs -p)")]
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
  trainctl wait -f job.yaml --for condition=Succeeded --timeout 1h   every job of the manifest
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
    Suspend(JobsArgs),

    /// Resume a suspended job through the local control plane: it is queued again and starts
    /// when the machine has room. With --kube, clear its `spec.runPolicy.suspend` in the cluster.
    #[command(after_help = "\
Examples:
  trainctl resume digits-mwms
  trainctl resume pytorchjob digits-mwms -n team-a
  trainctl --kube resume digits-mwms")]
    Resume(JobsArgs),

    /// Delete a job through the local control plane: its replicas are stopped (SIGTERM, grace
    /// period, SIGKILL), then the job, its events and its logs are removed. With --kube, delete
    /// it in the cluster as kubectl does: in the background (the job goes at once, the garbage
    /// collector removes its pods and services after).
    #[command(after_help = "\
Examples:
  trainctl delete digits-mwms
  trainctl delete tfjob digits-mwms -n team-a
  trainctl delete a b c                          several (a job not found does not stop the others)
  trainctl delete -f job.yaml                    the jobs of a manifest
  trainctl --kube delete digits-mwms && trainctl --kube wait digits-mwms --for delete")]
    Delete(JobsArgs),

    /// List what happened to the jobs run here, oldest first, as `kubectl events` does: LAST
    /// SEEN, TYPE, REASON, OBJECT (`tfjob/NAME`) and MESSAGE. Alike events are one line, counted:
    /// `2m (x4 over 5m)` is four times, the last 2 minutes ago, the first 5. With -w, then print
    /// each new event as it happens (an alike one: its line again, counted), until interrupted.
    #[command(after_help = "\
Examples:
  trainctl events                            the events of namespace default
  trainctl events digits-mwms                one job's (or: --for tfjob/digits-mwms)
  trainctl events -A --types Warning         every namespace's warnings
  trainctl events -w                         then the new ones as they happen (Ctrl-C stops)")]
    Events(EventsArgs),

    /// Show this machine's resources and who holds them (`top node`: CPUs, memory, each GPU, the
    /// queue), or what the running jobs' processes use now (`top job`: CPU, memory, GPUs).
    #[command(after_help = "\
Examples:
  trainctl top node                  capacity, held, free; each GPU's replica; the waiting jobs
  trainctl top job                   CPU cores and memory of each running job
  trainctl top job digits-mwms --replicas")]
    Top(TopArgs),

    /// List the claims (`persistentVolumeClaim` volumes) of this machine's jobs: each claim's
    /// directory (bound with --volume, else its own in the state directory), the size of its
    /// files, and the jobs that mount it. `volumes delete` deletes claims.
    #[command(after_help = "\
Columns: NAME (the claim), PATH (its directory), SIZE (its files' bytes: 12Ki, 3.4Mi; `-` until
it is made; links are not followed, and a count past a million entries ends with `+`), SOURCE
(`bound`: a directory of yours, bound with --volume; `trainctl`: its own, under the state
directory), USED BY (the jobs that mount it, with their state). A claim's own directory is made
when a job first mounts it and kept until `trainctl volumes delete`.

Examples:
  trainctl volumes                                   the claims of namespace default
  trainctl volumes -A -o wide                        of every namespace, with AGE and FILES
  trainctl run -f job.yaml --volume training-data-pvc=/srv/datasets/mnist
  trainctl volumes delete checkpoints                remove a claim's own directory
  trainctl volumes delete training-data-pvc          unbind it: /srv/datasets/mnist stays")]
    #[command(visible_alias = "pvc")]
    Volumes(VolumesArgs),

    /// Run the local control plane: it queues submitted jobs, admits them as this machine's
    /// CPUs, memory and GPUs allow, supervises their replicas and serves the HTTP API
    /// (docs/server-api.md), `/metrics` and `/healthz` on loopback.
    #[command(after_help = "\
The server writes its address (server.json) and a fresh bearer token (server.token), both
readable by you only, into the state directory; the other commands find it there. It listens on
loopback only unless --allow-non-loopback is given. With --on-finish or --webhook, each job
that succeeds or fails is announced in one JSON document, in the background (README,
\"Notifications\").

Examples:
  trainctl server &                          start it in the background
  trainctl server --listen 127.0.0.1:7480    a fixed port
  trainctl server --gpus 4                   pretend this machine has 4 GPUs
  trainctl server --volume training-data-pvc=/srv/datasets/mnist
  trainctl server --webhook http://127.0.0.1:9000/hook
  trainctl server --on-finish 'notify-send \"$TRAINCTL_JOB_NAME $TRAINCTL_JOB_STATE\"'")]
    Server(ServerArgs),

    /// Open the web dashboard: every job live, each job's replicas, conditions, events and
    /// logs, its training curves (from TensorBoard event files), and this machine. Prints the
    /// address (with what logs the page in) and opens it in your browser. With --kube, serve the
    /// same pages for a cluster's jobs, from this machine, until Ctrl-C.
    #[command(after_help = "\
The dashboard is served by `trainctl server` at its address; this command asks the server for
a one-time login code and adds it to the address (`http://127.0.0.1:PORT/#code=...`): the page
trades it for the server's token, once, within minutes. Without a desktop (no DISPLAY or
WAYLAND_DISPLAY, and no $BROWSER), the address is printed only: from another machine, forward
the port first (ssh -L PORT:127.0.0.1:PORT host). Curves come from the event files a job's
replicas write into $TRAINCTL_TENSORBOARD_DIR (README, \"Dashboard\").

With --kube, no server is needed: this command serves the pages itself, on --listen (loopback
only unless --allow-non-loopback), with a one-time login link in the address it prints
(`http://127.0.0.1:PORT/#code=...`: one use within 15 minutes), and reads the jobs of -n (else the context's namespace)
or of every namespace (-A), their pods and events, and their logs through the kubeconfig, as
`trainctl --kube get`, `describe` and `logs` do. Suspend, resume and delete are offered when
RBAC lets you patch and delete the jobs. Curves and the Machine page are this machine's: a
cluster's are not shown (for its nodes: kubectl top nodes). It prints the address on stdout
and serves until Ctrl-C (SIGINT or SIGTERM).

Examples:
  trainctl server &                  start the server
  trainctl dashboard                 open the dashboard
  trainctl dashboard --no-browser    print its address only
  trainctl --kube dashboard          the kubeconfig's cluster, the context's namespace
  trainctl --kube dashboard -A       every namespace
  trainctl --kube --context prod dashboard -n team-a --listen 127.0.0.1:7481 --no-browser")]
    Dashboard(DashboardArgs),

    /// Start TensorBoard on the event files of one job or several, each job a run of its own
    /// (two jobs trained with two learning rates side by side), on 127.0.0.1:6006, and print the
    /// address to open. It serves until Ctrl-C.
    #[command(after_help = "\
TensorBoard itself is started (`tensorboard --logdir_spec JOB:DIR,...`), found on PATH: install
it with `pip install tensorboard`, or, in trainctl's repository, use the examples' environment:
  PATH=\"$(scripts/python-env):$PATH\" trainctl tensorboard JOB
A job's event files are found where the dashboard's curves come from: its own directory (given
to its replicas in TRAINCTL_TENSORBOARD_DIR; `describe` shows it), else <claim>/<job name> on a
claim it mounts. A job that has written none yet is an error (exit 1). Jobs are named as for
`describe`. trainctl becomes TensorBoard: Ctrl-C stops it, and nothing is left running.

Examples:
  trainctl tensorboard digits-mwms                    then open http://127.0.0.1:6006/
  trainctl tensorboard lr-01 lr-001                   two jobs, two runs, compared
  trainctl tensorboard tfjob/mnist -n team-a --port 0 any free port
  trainctl tensorboard -f sweep.yaml                  every job of a manifest
  trainctl tensorboard digits-mwms --print            the command line only")]
    Tensorboard(TensorboardArgs),

    /// Run the Kubernetes operator: one controller per job kind, turning the cluster's jobs into
    /// Pods, Services and PodGroups, with leader election, `/metrics`, `/healthz` and `/readyz`.
    /// It connects like kubectl: a kubeconfig (--kubeconfig, KUBECONFIG, ~/.kube/config), else
    /// the pod's service account.
    #[command(after_help = trainctl_operator::command::after_help("trainctl operator"))]
    Operator(trainctl_operator::command::OperatorArgs),

    /// Print the script that completes trainctl's commands and flags in a shell (bash, zsh,
    /// fish, elvish, powershell).
    #[command(after_help = "\
Install:
  bash:  source <(trainctl completion bash)          in ~/.bashrc, or once for good:
         trainctl completion bash > ~/.local/share/bash-completion/completions/trainctl
  zsh:   trainctl completion zsh > ~/.zfunc/_trainctl
         with, in ~/.zshrc before compinit: fpath=(~/.zfunc $fpath); autoload -U compinit; compinit
  fish:  trainctl completion fish > ~/.config/fish/completions/trainctl.fish

Examples:
  source <(trainctl completion bash)
  trainctl completion zsh > \"${fpath[1]}/_trainctl\"")]
    Completion(CompletionArgs),

    /// Check the state database and repair it when it is damaged: what can still be read is
    /// kept in a new database, the damaged file beside it.
    #[command(after_help = "\
A damaged page of the state database (a disk's bad sector, a file copied while it was written)
makes commands fail with \"database disk image is malformed\". `repair` checks the whole file
(SQLite's integrity_check); when it is damaged, it reads each table from its start and from its
end up to the damage, keeps those rows (and drops those whose job was lost) in a new database
that takes the file's place, and moves the damaged file to trainctl.db.damaged-<time>. The jobs
kept are as they were; the logs of every job stay where they are.

No server may run on the state directory meanwhile (repair refuses while one does), nor a
`trainctl run`. Exit codes: 0 sound or repaired, 1 damaged (with --check) or not repairable.

Examples:
  trainctl repair --check        say whether the state database is sound
  trainctl repair                repair it if it is not")]
    Repair(RepairArgs),

    /// Print this client's version and, when one runs for the state directory, the local
    /// server's address, as `kubectl version` does (`--version` prints the client's alone).
    #[command(after_help = "\
With --kube, the client's version only: the local server is not the cluster's.

Examples:
  trainctl version
  trainctl version --client
  trainctl version -o json")]
    Version(VersionArgs),

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
