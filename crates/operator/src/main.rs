//! `trainctl-operator`: the Kubernetes operator alone, as its container image runs it
//! (deploy/Dockerfile). It is `trainctl operator` without the rest of trainctl (the local
//! runtime, the server, the dashboard, SQLite): the same flags, the same behaviour.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use trainctl_operator::command::{self, OperatorArgs};
use trainctl_operator::connect::ClusterAccess;

/// Run the Kubernetes operator of trainctl: one controller per job kind, turning the cluster's
/// kubeflow.org/v1 jobs into Pods, Services and PodGroups, with leader election, `/metrics`,
/// `/healthz` and `/readyz`. It connects like kubectl: a kubeconfig (--kubeconfig, KUBECONFIG,
/// ~/.kube/config), else the pod's service account.
#[derive(Debug, Parser)]
#[command(name = "trainctl-operator", version, after_help = command::after_help("trainctl-operator"))]
struct Operator {
    #[command(flatten)]
    args: OperatorArgs,

    /// The kubeconfig file [default: KUBECONFIG, else ~/.kube/config, else the pod's service
    /// account].
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use [default: the current context].
    #[arg(long, value_name = "NAME")]
    context: Option<String>,
}

fn main() -> ExitCode {
    let operator = Operator::parse();
    let access = ClusterAccess {
        kubeconfig: operator.kubeconfig,
        context: operator.context,
    };
    match command::run(&operator.args, &access) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
