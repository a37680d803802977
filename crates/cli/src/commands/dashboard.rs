//! `trainctl dashboard`: prints the address of the local server's dashboard, with a login
//! code, and opens it in the user's browser where one can be opened. `trainctl --kube dashboard`
//! serves the same pages itself, against the kubeconfig's cluster, until stopped.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use kube::config::Kubeconfig;

use crate::cli::{ClusterArgs, DashboardArgs};
use crate::client::Client;
use crate::cluster::{self, dashboard};
use crate::state::state_dir;

/// Prints the local server's dashboard address and opens it (see [`show`]). An error when no
/// server runs for the state directory, or when a flag of `--kube dashboard` is given.
pub fn run(args: &DashboardArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    if let Some(flag) = args.cluster_only_flag() {
        anyhow::bail!(
            "{flag} is for `trainctl --kube dashboard`, which serves a cluster's dashboard; \
             this machine's is served by `trainctl server` (its --listen), for every namespace"
        );
    }
    let client = Client::find(&state_dir(state)?)?;
    let holds = "its one-time login code stands for the server's token";
    show(&client.dashboard_url()?, args.no_browser, holds)?;
    Ok(ExitCode::SUCCESS)
}

/// Serves the dashboard of the cluster that `flags` name until `SIGINT` or `SIGTERM`, for the
/// namespace of `-n` (else the context's) or, with `-A`, every namespace.
pub fn in_cluster(args: &DashboardArgs, flags: &ClusterArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let cluster = cluster::connect(flags).await?;
        let namespace = (!args.all_namespaces).then(|| {
            args.namespace
                .clone()
                .unwrap_or_else(|| cluster.namespace.clone())
        });
        let settings = dashboard::Settings {
            namespace,
            context: context_name(flags),
            listen: args
                .listen
                .unwrap_or(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))),
            allow_non_loopback: args.allow_non_loopback,
        };
        let mut shown = Ok(());
        dashboard::serve(cluster, settings, |serving| {
            let namespace = serving.namespace.map_or_else(
                || "all namespaces".to_owned(),
                |namespace| format!("namespace {namespace}"),
            );
            eprintln!(
                "dashboard: {} (cluster {}, {namespace}); Ctrl-C stops it",
                serving.url, serving.cluster
            );
            shown = show(
                serving.url,
                args.no_browser,
                "its one-time login code (one use within 15 minutes) stands for the dashboard's \
                 token",
            );
        })
        .await?;
        shown.map_err(anyhow::Error::from)
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Prints `url` on stdout (flushed: a script reads it while the dashboard runs) and opens it:
/// in `$BROWSER`, else the desktop's browser, when there is a desktop (`DISPLAY`,
/// `WAYLAND_DISPLAY`) or `$BROWSER` says which, and not with `--no-browser`. `holds` says what
/// in the address gives access.
fn show(url: &str, no_browser: bool, holds: &str) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{url}")?;
    stdout.flush()?;
    if no_browser || !can_open_browser() {
        eprintln!("Open that address in a browser; {holds}: keep it to yourself.");
    } else if let Err(error) = webbrowser::open(url) {
        eprintln!("cannot open a browser ({error}): open that address in one.");
    }
    Ok(())
}

/// Whether a browser can be shown: a desktop session, or `$BROWSER` naming one.
fn can_open_browser() -> bool {
    ["DISPLAY", "WAYLAND_DISPLAY", "BROWSER"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|value| !value.is_empty()))
}

/// The kubeconfig context the flags select: `--context`, else the kubeconfig's current one;
/// `None` when there is none (a pod's service account).
fn context_name(flags: &ClusterArgs) -> Option<String> {
    if let Some(context) = &flags.context {
        return Some(context.clone());
    }
    let kubeconfig = match &flags.kubeconfig {
        Some(path) => Kubeconfig::read_from(path),
        None => Kubeconfig::read(),
    };
    kubeconfig.ok()?.current_context
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};

    #[test]
    fn the_flags_of_kube_dashboard_are_refused_without_kube() {
        let cases = [
            (vec!["-A"], "-A/--all-namespaces"),
            (vec!["-n", "team-a"], "-n/--namespace"),
            (vec!["--listen", "127.0.0.1:7481"], "--listen"),
            (vec!["--allow-non-loopback"], "--allow-non-loopback"),
        ];
        let state = tempfile::tempdir().expect("a state directory");
        for (flags, named) in cases {
            let line = ["trainctl", "dashboard"].into_iter().chain(flags.clone());
            let cli = Cli::try_parse_from(line).expect("the command line parses");
            let Command::Dashboard(args) = cli.command else {
                panic!("{flags:?}: not dashboard");
            };
            let error = super::run(&args, Some(state.path())).expect_err("refused");
            assert_eq!(
                error.to_string(),
                format!(
                    "{named} is for `trainctl --kube dashboard`, which serves a cluster's \
                     dashboard; this machine's is served by `trainctl server` (its --listen), \
                     for every namespace"
                ),
                "{flags:?}"
            );
        }
    }
}
