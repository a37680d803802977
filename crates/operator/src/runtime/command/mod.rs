//! The operator as a command: its flags ([`OperatorArgs`]), what they decide ([`Settings`]), and
//! [`run`], which logs, connects and runs the [manager](super::manager) until `SIGTERM` or
//! `SIGINT`. `trainctl operator` and the image's `trainctl-operator` both run it.

mod flags;

#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::path::Path;

use trainctl_api::JobKind;
use trainctl_engine::{Addressing, BuildOptions};
use trainctl_logging::LogFormat;

pub use flags::OperatorArgs;

use super::connect::{self, ClusterAccess, ConnectError};
use super::leader::{self, LeaseSettings};
use super::manager::{self, Observability, RunError};
use super::rate_limit::RateLimits;
use super::settings::{Settings, WATCHED_WHERE_INSTALLED};
use super::shutdown::StopRequests;

/// Where a pod finds its service account's namespace.
const SERVICE_ACCOUNT_NAMESPACE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// The Lease namespace when neither the flag, `POD_NAMESPACE` nor a service account names one.
const DEFAULT_LEASE_NAMESPACE: &str = "kubeflow";

/// What the `--help` of both commands says after the flags, with `program`'s examples.
#[must_use]
pub fn after_help(program: &str) -> String {
    format!(
        "\
SIGTERM or SIGINT stops it gracefully: no new reconciles, those in flight finish, the lease is
released; a second signal stops at once. See docs/operator.md for the metrics, the probes and
leader election.

Examples:
  {program}                                  every kind, every namespace
  {program} --enable-scheme tfjob --enable-scheme pytorchjob --namespace team-a
  {program} --leader-elect --gang-scheduler-name volcano
  {program} --kubeconfig ~/.kube/dev --context kind-dev --metrics-bind-address 0"
    )
}

/// Why the operator could not run, or stopped other than by a graceful stop request. Each
/// message says its cause.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The async runtime or the signal handlers could not be set up.
    #[error("cannot start: {0}")]
    Start(std::io::Error),
    /// The cluster cannot be reached with the kubeconfig or service account.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// The operator stopped on an error.
    #[error(transparent)]
    Run(#[from] RunError),
}

/// Runs the operator with `args` on the cluster `access` names, logging on stderr, until it is
/// stopped.
pub fn run(args: &OperatorArgs, access: &ClusterAccess) -> Result<(), CommandError> {
    trainctl_logging::init(args.log_format.unwrap_or_else(LogFormat::for_stderr));
    let settings = settings(
        args,
        leader::identity(),
        service_account_namespace(Path::new(SERVICE_ACCOUNT_NAMESPACE)),
    );
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(CommandError::Start)?
        .block_on(async {
            let config = connect::config(access).await?;
            let clients = connect::clients(config, settings.api_limits, connect::REQUEST_TIMEOUT)?;
            let stop = StopRequests::from_signals().map_err(CommandError::Start)?;
            manager::run(settings, clients, stop, Observability::default(), |_| {}).await?;
            Ok(())
        })
}

/// The namespace in the service account's namespace file, if this is a pod.
fn service_account_namespace(file: &Path) -> Option<String> {
    std::fs::read_to_string(file)
        .ok()
        .map(|text| text.trim().to_owned())
        .filter(|namespace| !namespace.is_empty())
}

/// What the flags decide; `identity` holds the lease, `service_account_namespace` is the
/// pod's namespace when `--leader-election-namespace` and `POD_NAMESPACE` name none.
fn settings(
    args: &OperatorArgs,
    identity: String,
    service_account_namespace: Option<String>,
) -> Settings {
    let (kinds, kinds_where_installed) = if args.enable_scheme.is_empty() {
        JobKind::ALL
            .into_iter()
            .partition(|kind| !WATCHED_WHERE_INSTALLED.contains(kind))
    } else {
        let enabled = JobKind::ALL
            .into_iter()
            .filter(|kind| args.enable_scheme.contains(kind));
        (enabled.collect(), Vec::new())
    };
    let namespaces: BTreeSet<String> = args.namespace.iter().cloned().collect();
    let non_empty = |value: &Option<String>| value.clone().filter(|value| !value.is_empty());
    Settings {
        kinds,
        kinds_where_installed,
        namespaces: namespaces.into_iter().collect(),
        build: BuildOptions {
            addressing: Addressing::Cluster {
                cluster_domain: non_empty(&args.cluster_domain),
            },
            gang_scheduler: non_empty(&args.gang_scheduler_name),
            pytorch_init_image: args.pytorch_init_container_image.clone(),
            pytorch_init_max_tries: args.pytorch_init_container_max_tries,
            mpi_kubectl_delivery_image: args.mpi_kubectl_delivery_image.clone(),
        },
        controller_threads: args.controller_threads as usize,
        api_limits: RateLimits {
            qps: args.kube_api_qps,
            burst: args.kube_api_burst,
            max_in_flight: args.kube_api_max_in_flight as usize,
        },
        leader_election: args.leader_elect.then(|| {
            let namespace = args
                .leader_election_namespace
                .clone()
                .or(service_account_namespace)
                .unwrap_or_else(|| DEFAULT_LEASE_NAMESPACE.to_owned());
            LeaseSettings::new(namespace, args.leader_election_id.clone(), identity)
        }),
        metrics_address: args.metrics_bind_address,
        health_address: args.health_probe_bind_address,
    }
}
