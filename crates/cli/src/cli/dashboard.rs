//! `dashboard`: the web dashboard, of the local server or (with --kube) of a cluster.

use std::net::SocketAddr;

use clap::Args;

use super::values::namespace_name;

/// Arguments of `dashboard`.
#[derive(Debug, Args)]
pub struct DashboardArgs {
    /// Print the address only: open no browser.
    #[arg(long)]
    pub no_browser: bool,

    /// With --kube: the namespace whose jobs are shown [default: the context's namespace, else
    /// `default`].
    #[arg(short = 'n', long = "namespace", value_name = "NS", value_parser = namespace_name)]
    pub namespace: Option<String>,

    /// With --kube: show the jobs of every namespace.
    #[arg(short = 'A', long = "all-namespaces", conflicts_with = "namespace")]
    pub all_namespaces: bool,

    /// With --kube: the address to serve the dashboard on; port 0 picks a free port [default:
    /// 127.0.0.1:0].
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,

    /// With --kube: accept a non-loopback --listen address: anyone who can reach it and has the
    /// token can act on the cluster as you.
    #[arg(long)]
    pub allow_non_loopback: bool,
}

impl DashboardArgs {
    /// The first flag given that only `--kube dashboard` takes, as typed.
    #[must_use]
    pub fn cluster_only_flag(&self) -> Option<&'static str> {
        [
            (self.namespace.is_some(), "-n/--namespace"),
            (self.all_namespaces, "-A/--all-namespaces"),
            (self.listen.is_some(), "--listen"),
            (self.allow_non_loopback, "--allow-non-loopback"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }
}
