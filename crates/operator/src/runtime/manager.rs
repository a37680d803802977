//! The operator process (what controller-runtime calls the manager): the HTTP endpoints,
//! leader election, the controllers, and the order in which they start and stop.
//!
//! Start: check that the API server serves the gang scheduler's PodGroups, if one is asked for,
//! ask which of the kinds watched only where installed it serves (MXJob), bind `/metrics` and
//! the probes (a busy port fails at once), stand by for the lease
//! (with `--leader-elect`), then start the controllers; ready once their caches are synced.
//!
//! Stop, at the first `SIGTERM`/`SIGINT`: no new reconcile starts (those waiting for a thread
//! are dropped), the in-flight ones finish while the lease is still renewed, then the lease is
//! released and the endpoints close. A second signal stops at once. A leader that loses the
//! lease stops at once, in-flight reconciles included (another process leads now), and the
//! process exits with an error so that its restart competes for the lease again, as
//! controller-runtime does.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use tokio::sync::watch;

use super::connect::Clients;
use super::controller::{self, Scope};
use super::health::{Health, Phase};
use super::http::{Endpoint, health_routes, metrics_routes};
use super::leader::{Elector, LostLease};
use super::settings::Settings;
use super::shutdown::StopRequests;
use crate::reconcile::context::Context;
use crate::reconcile::metrics::Metrics;

/// How long releasing the lease may take at shutdown before the process leaves it to expire.
const RELEASE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Why the operator stopped other than by a graceful stop request.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// An endpoint's address cannot be bound.
    #[error("cannot listen on {address} for {endpoints}: {error}")]
    Bind {
        /// What was to be served there (`/metrics`, `/healthz and /readyz`).
        endpoints: &'static str,
        /// The address.
        address: SocketAddr,
        /// Why (in the message: a cause shown, not chained, is printed once).
        error: std::io::Error,
    },
    /// This process was the leader and is no longer.
    #[error("lost leadership ({0}); exiting so that a fresh start competes for the lease again")]
    LostLease(LostLease),
    /// A second stop request came before the in-flight reconciles finished.
    #[error("stopped by a second signal before the in-flight reconciles finished")]
    Forced,
    /// The gang scheduling asked for cannot work on this cluster.
    #[error(transparent)]
    Gang(#[from] crate::reconcile::gang::Unusable),
    /// The API server could not say which job kinds it serves.
    #[error("cannot ask the API server which {group_version} resources it serves: {source}")]
    Discovery {
        /// The group version asked about (`kubeflow.org/v1`).
        group_version: &'static str,
        /// What the client said.
        #[source]
        source: kube::Error,
    },
}

/// The process's shared pieces, as the endpoints see them.
#[derive(Debug, Clone, Default)]
pub struct Observability {
    /// The metrics `/metrics` serves.
    pub metrics: Arc<Metrics>,
    /// The state `/healthz` and `/readyz` report.
    pub health: Arc<Health>,
}

/// Runs the operator with `settings` on `clients` until `stop` asks it to stop; `bound` hears
/// the addresses the endpoints listen on, once they do.
pub async fn run(
    settings: Settings,
    clients: impl Into<Clients>,
    stop: StopRequests,
    observability: Observability,
    bound: impl FnOnce(&[(&'static str, SocketAddr)]),
) -> Result<(), RunError> {
    let clients = clients.into();
    if let Some(scheduler) = settings.build.gang_scheduler() {
        crate::reconcile::gang::check_served(&clients.controllers, &scheduler).await?;
    }
    let mut settings = settings;
    settings.kinds = watched_kinds(&settings, &clients.controllers).await?;
    for &kind in &settings.kinds {
        observability.metrics.enable(kind);
    }
    let endpoints = bind(&settings, &observability).await?;
    let addresses: Vec<(&'static str, SocketAddr)> = endpoints
        .iter()
        .filter_map(|(what, endpoint)| endpoint.local_addr().ok().map(|address| (*what, address)))
        .collect();
    for (what, address) in &addresses {
        tracing::info!(%address, endpoints = what, "serving");
    }
    bound(&addresses);
    let (close, closing) = watch::channel(false);
    let servers: Vec<_> = endpoints
        .into_iter()
        .map(|(what, endpoint)| {
            let closing = closing.clone();
            tokio::spawn(async move {
                let closed = async move {
                    let mut closing = closing;
                    let _ = closing.wait_for(|closing| *closing).await;
                };
                if let Err(error) = endpoint.serve(closed).await {
                    tracing::error!(endpoints = what, %error, "the endpoint stopped");
                }
            })
        })
        .collect();
    let outcome = lead(settings, clients, stop, &observability).await;
    observability.health.set_phase(Phase::Stopping);
    let _ = close.send(true);
    for server in servers {
        let _ = server.await;
    }
    outcome
}

/// The kinds to watch: `settings.kinds`, and those of `settings.kinds_where_installed` that the
/// API server serves, in [`JobKind::ALL`](trainctl_api::JobKind::ALL)'s order. Each left out is
/// logged once, with what would add it.
async fn watched_kinds(
    settings: &Settings,
    client: &kube::Client,
) -> Result<Vec<trainctl_api::JobKind>, RunError> {
    let mut kinds = settings.kinds.clone();
    if settings.kinds_where_installed.is_empty() {
        return Ok(kinds);
    }
    let group_version = trainctl_api::API_VERSION;
    let served = crate::reconcile::discovery::served_resources(client, group_version)
        .await
        .map_err(|source| RunError::Discovery {
            group_version,
            source,
        })?;
    for &kind in &settings.kinds_where_installed {
        if served.iter().any(|name| name == kind.plural()) {
            kinds.push(kind);
        } else {
            tracing::info!(
                %kind,
                "not watching {kind}s: the API server does not serve {}.{}, whose CRD is not \
                 installed (deploy/crds); install it and restart the operator to run them",
                kind.plural(),
                trainctl_api::GROUP
            );
        }
    }
    kinds.sort_unstable();
    kinds.dedup();
    Ok(kinds)
}

/// Binds the endpoints: one listener per distinct address.
async fn bind(
    settings: &Settings,
    observability: &Observability,
) -> Result<Vec<(&'static str, Endpoint)>, RunError> {
    let metrics = settings.metrics_address.socket();
    let health = settings.health_address.socket();
    let mut planned: Vec<(&'static str, SocketAddr, Router)> = Vec::new();
    match (metrics, health) {
        (Some(metrics), Some(health)) if metrics == health => planned.push((
            "/metrics, /healthz and /readyz",
            metrics,
            metrics_routes(Arc::clone(&observability.metrics))
                .merge(health_routes(Arc::clone(&observability.health))),
        )),
        _ => {
            if let Some(address) = metrics {
                planned.push((
                    "/metrics",
                    address,
                    metrics_routes(Arc::clone(&observability.metrics)),
                ));
            }
            if let Some(address) = health {
                planned.push((
                    "/healthz and /readyz",
                    address,
                    health_routes(Arc::clone(&observability.health)),
                ));
            }
        }
    }
    let mut endpoints = Vec::new();
    for (what, address, routes) in planned {
        let endpoint = Endpoint::bind(address, routes)
            .await
            .map_err(|error| RunError::Bind {
                endpoints: what,
                address,
                error,
            })?;
        endpoints.push((what, endpoint));
    }
    Ok(endpoints)
}

/// Stands by for the lease (if elected), runs the controllers, and stops them.
async fn lead(
    settings: Settings,
    clients: Clients,
    mut stop: StopRequests,
    observability: &Observability,
) -> Result<(), RunError> {
    let Observability { metrics, health } = observability;
    let mut elector = settings
        .leader_election
        .clone()
        .map(|lease| Elector::new(clients.leader_election.clone(), lease));
    if let Some(elector) = elector.as_mut() {
        health.set_phase(Phase::Standby);
        tokio::select! {
            () = elector.acquire() => {}
            () = stop.next() => return Ok(()),
        }
    }
    metrics.set_leader(true);
    health.set_phase(Phase::Syncing);
    let scope = Scope {
        kinds: settings.kinds.clone(),
        namespaces: settings.namespaces.clone(),
        threads: settings.controller_threads,
    };
    let ctx = Arc::new(
        Context::new(clients.controllers, settings.build.clone())
            .with_metrics(Arc::clone(metrics))
            .with_children_in_flight(settings.api_limits.children_in_flight()),
    );
    let (stopping, stop_signal) = watch::channel(false);
    let outcome = {
        let controllers = controller::run(ctx, &scope, stop_signal, Arc::clone(health));
        let hold = async {
            match elector.as_mut() {
                Some(elector) => elector.hold().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(controllers, hold);
        let mut stop_requested = false;
        loop {
            tokio::select! {
                () = &mut controllers => break Ok(()),
                lost = &mut hold => break Err(RunError::LostLease(lost)),
                () = stop.next() => {
                    if stop_requested {
                        break Err(RunError::Forced);
                    }
                    stop_requested = true;
                    health.set_phase(Phase::Stopping);
                    tracing::info!("stopping: no new reconciles; waiting for those in flight");
                    let _ = stopping.send(true);
                }
            }
        }
    };
    metrics.set_leader(false);
    if let (Some(elector), Ok(())) = (elector.as_mut(), &outcome) {
        match tokio::time::timeout(RELEASE_TIMEOUT, elector.release()).await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => tracing::warn!(%error, "cannot release the lease; it will expire"),
            Err(_) => tracing::warn!("releasing the lease timed out; it will expire"),
        }
    }
    if outcome.is_ok() {
        tracing::info!("stopped");
    }
    outcome
}

#[cfg(test)]
mod tests;
