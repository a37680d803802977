//! `trainctl --kube dashboard`: the web dashboard of `trainctl server` (the same pages and
//! routes, [`trainctl_dashboard::app`]) served from this machine against a cluster. The cluster
//! is its [`Source`](trainctl_dashboard::Source) ([`source`]): the JSON API the pages use
//! (`docs/server-api.md`) is answered from the cluster's objects, read through the kubeconfig
//! as the other `--kube` commands read them ([`views`], [`logs`]); the event streams are sent
//! again when a watch on the jobs, their pods or the events sees a change ([`changes`]). Curves
//! and the Machine page are this machine's and are not read from a cluster; the actions
//! (suspend, resume, delete) are offered when RBAC allows them.

mod changes;
mod logs;
mod source;
#[cfg(test)]
mod test_objects;
#[cfg(test)]
mod tests;
mod views;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::http::{Method, StatusCode};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch as channel;
use trainctl_dashboard::{Failure, auth, connections};

use super::Cluster;

/// The open files the bound on connections is reckoned from (`connections::max_connections`):
/// a desktop's usual soft limit, which this process does not raise (it opens no job's files).
const OPEN_FILES: u64 = 1024;

/// What to serve, and where.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The namespace whose jobs are shown; `None`: every namespace.
    pub namespace: Option<String>,
    /// The kubeconfig context, as the pages name the cluster; `None`: the API server's URL
    /// names it.
    pub context: Option<String>,
    /// The address to listen on (port 0: a free one).
    pub listen: SocketAddr,
    /// Accept a non-loopback `listen`.
    pub allow_non_loopback: bool,
}

/// The dashboard, once it listens.
#[derive(Debug, Clone, Copy)]
pub struct Serving<'a> {
    /// The page's address with a one-time login code: `http://127.0.0.1:PORT/#code=CODE`
    /// (the token itself goes into no address: `trainctl_dashboard::auth`).
    pub url: &'a str,
    /// The API server's URL.
    pub cluster: &'a str,
    /// The namespace shown; `None`: every namespace.
    pub namespace: Option<&'a str>,
}

/// The cluster's data for the dashboard's routes.
#[derive(Clone)]
struct Dashboard {
    cluster: Cluster,
    /// The namespace shown; `None`: every namespace.
    namespace: Option<String>,
    /// The kubeconfig context, else the API server's URL.
    context: String,
    /// Bumped when the cluster's jobs, pods or events change, for the event streams.
    changes: channel::Receiver<u64>,
}

/// Serves the dashboard until `SIGINT` or `SIGTERM`; `ready` hears where once it listens.
/// The cluster is read once first, so that a cluster that cannot be reached, or whose jobs
/// this user may not list, is said at once rather than on the page.
pub async fn serve(
    cluster: Cluster,
    settings: Settings,
    ready: impl FnOnce(Serving<'_>),
) -> anyhow::Result<()> {
    let listen = settings.listen;
    if !listen.ip().is_loopback() {
        anyhow::ensure!(
            settings.allow_non_loopback,
            "refusing to listen on {listen}: not a loopback address (pass --allow-non-loopback \
             to accept it)"
        );
        eprintln!(
            "warning: listening on {listen}, which is not a loopback address: anyone who \
             reaches it with the token can act on the cluster as you"
        );
    }
    cluster
        .list_jobs(None, settings.namespace.as_deref())
        .await?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|error| anyhow::anyhow!("cannot listen on {listen}: {error}"))?;
    let bound = listener.local_addr()?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let (sender, changes) = channel::channel(0);
    let follower = tokio::spawn(changes::follow(
        cluster.clone(),
        settings.namespace.clone(),
        sender,
    ));
    let token = auth::new_token();
    let codes = Arc::new(auth::LoginCodes::default());
    let url = format!(
        "http://{bound}/#code={}",
        codes.issue(auth::START_CODE_LIFETIME)
    );
    let dashboard = Dashboard {
        namespace: settings.namespace,
        context: settings.context.unwrap_or_else(|| cluster.server.clone()),
        changes,
        cluster,
    };
    ready(Serving {
        url: &url,
        cluster: &dashboard.cluster.server,
        namespace: dashboard.namespace.as_deref(),
    });
    let stop = async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        // The change stream closes: the event streams end, and the connections drain at once.
        follower.abort();
    };
    connections::serve(
        listener,
        router(dashboard, &token, codes),
        connections::max_connections(OPEN_FILES),
        stop,
    )
    .await;
    Ok(())
}

/// Every route ([`trainctl_dashboard::app`] over the cluster): the API's, behind the token,
/// and the pages and the login with one of `codes`, which need none; unknown paths and methods
/// answered in the API's envelope.
fn router(dashboard: Dashboard, token: &str, codes: Arc<auth::LoginCodes>) -> Router {
    trainctl_dashboard::app(dashboard, token, codes)
        .fallback(unknown_path)
        .method_not_allowed_fallback(not_allowed)
}

/// A path the API does not have.
async fn unknown_path(method: Method, request: Request) -> Failure {
    Failure::new(
        StatusCode::NOT_FOUND,
        format!("no such path: {method} {}", request.uri().path()),
    )
}

/// A method a path does not take.
async fn not_allowed(method: Method, request: Request) -> Failure {
    Failure::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{method} is not allowed on {}", request.uri().path()),
    )
}
