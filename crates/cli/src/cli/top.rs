//! `top`: what this machine offers and what its jobs hold (`top node`), and what the running
//! jobs' processes use now (`top job`), as `kubectl top` shows a cluster's.

use clap::{Args, Subcommand};

use super::local::CapacityArgs;
use super::replicas::{JobName, job_name};
use super::values::namespace_name;

/// Arguments of `top`.
#[derive(Debug, Args)]
pub struct TopArgs {
    /// What to show.
    #[command(subcommand)]
    pub resource: TopResource,
}

/// What `top` shows.
#[derive(Debug, Subcommand)]
pub enum TopResource {
    /// This machine: its CPUs, memory and GPUs, what the admitted jobs hold of them and what is
    /// free, which replica holds each GPU, and the jobs waiting for room, in order.
    #[command(
        visible_alias = "nodes",
        after_help = "\
The capacity is this machine's, detected as `run` and `server` detect it (its cores, its RAM,
the GPUs nvidia-smi lists), with the same overrides: --cpus, --memory and --gpus, or
TRAINCTL_CPUS, TRAINCTL_MEMORY and TRAINCTL_GPUS. What is held is what the admitted jobs took,
as recorded in the state directory by every `trainctl run` and server.

Examples:
  trainctl top node
  trainctl top node --gpus 4        as a `run --gpus 4` or `server --gpus 4` sees the machine"
    )]
    Node(TopNodeArgs),

    /// The running jobs: the CPU (cores) and memory (working set) their processes use now, and
    /// their GPUs. Read from each replica's cgroup where it has one, else from /proc for its
    /// process group; CPU is measured over half a second.
    #[command(
        visible_alias = "jobs",
        after_help = "\
Examples:
  trainctl top job                  the running jobs of namespace default
  trainctl top job -A               of every namespace
  trainctl top job mnist --replicas one line per running replica of the job mnist"
    )]
    Job(TopJobArgs),
}

/// Arguments of `top node`: the capacity `run` and `server` would assume.
#[derive(Debug, Args)]
pub struct TopNodeArgs {
    /// How to count this machine [default: as the running server counts it, else as detected].
    #[command(flatten)]
    pub capacity: CapacityArgs,
}

/// Arguments of `top job`.
#[derive(Debug, Args)]
pub struct TopJobArgs {
    /// Only this job: `NAME`, or `KIND/NAME` (`tfjob/mnist`) when jobs of several kinds share
    /// the name.
    #[arg(value_name = "JOB", value_parser = job_name)]
    pub job: Option<JobName>,

    /// The namespace [default: `default`].
    #[arg(short = 'n', long = "namespace", value_name = "NS", value_parser = namespace_name)]
    pub namespace: Option<String>,

    /// Every namespace.
    #[arg(short = 'A', long = "all-namespaces", conflicts_with = "namespace")]
    pub all_namespaces: bool,

    /// One line per running replica (named as its pod) rather than per job.
    #[arg(long)]
    pub replicas: bool,
}
