//! The operator's HTTP endpoints: `/metrics` on `--metrics-bind-address`, `/healthz` and
//! `/readyz` on `--health-probe-bind-address` (all three on one listener when both flags name
//! the same address).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;

use super::health::Health;
use crate::reconcile::metrics::Metrics;

/// The content type of `/metrics` (prometheus-client writes the `OpenMetrics` text format).
pub const METRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// `GET /metrics`.
pub fn metrics_routes(metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route("/metrics", get(serve_metrics))
        .with_state(metrics)
}

/// `GET /healthz` and `GET /readyz`: `200 ok`, or `503` with the reason.
pub fn health_routes(health: Arc<Health>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(health)
}

async fn serve_metrics(State(metrics): State<Arc<Metrics>>) -> Response {
    (
        [(header::CONTENT_TYPE, METRICS_CONTENT_TYPE)],
        metrics.encode(),
    )
        .into_response()
}

async fn healthz(State(health): State<Arc<Health>>) -> Response {
    match health.liveness(Instant::now()) {
        Ok(()) => (StatusCode::OK, "ok\n").into_response(),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")).into_response(),
    }
}

async fn readyz(State(health): State<Arc<Health>>) -> Response {
    match health.readiness() {
        Ok(()) => (StatusCode::OK, "ok\n").into_response(),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")).into_response(),
    }
}

/// A bound listener and the routes it serves.
#[derive(Debug)]
pub struct Endpoint {
    listener: TcpListener,
    routes: Router,
}

impl Endpoint {
    /// Binds `address` for `routes`.
    pub async fn bind(address: SocketAddr, routes: Router) -> std::io::Result<Endpoint> {
        let listener = TcpListener::bind(address).await?;
        Ok(Endpoint { listener, routes })
    }

    /// The address bound (port 0 resolved).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `stop` resolves, then lets open requests finish.
    pub async fn serve(
        self,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        axum::serve(self.listener, self.routes)
            .with_graceful_shutdown(stop)
            .await
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::Duration;

    use tokio::sync::oneshot;

    use super::*;
    use crate::runtime::health::{Phase, WEDGED_AFTER};

    /// `GET url` over HTTP: the status, content type and body.
    pub(crate) async fn get(url: String) -> (u16, String, String) {
        tokio::task::spawn_blocking(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(Duration::from_secs(5)))
                .build()
                .into();
            let mut response = agent.get(&url).call().expect("the endpoint answers");
            let content_type = response
                .headers()
                .get("content-type")
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            let body = response.body_mut().read_to_string().expect("a text body");
            (response.status().as_u16(), content_type, body)
        })
        .await
        .expect("the request does not panic")
    }

    /// Serves `routes` on a free loopback port; the base URL and the way to stop it.
    async fn start(routes: Router) -> (String, oneshot::Sender<()>) {
        let endpoint = Endpoint::bind("127.0.0.1:0".parse().expect("an address"), routes)
            .await
            .expect("binds");
        let url = format!("http://{}", endpoint.local_addr().expect("bound"));
        let (stop, stopped) = oneshot::channel();
        tokio::spawn(endpoint.serve(async move {
            let _ = stopped.await;
        }));
        (url, stop)
    }

    #[tokio::test]
    async fn readyz_follows_the_phase_and_healthz_a_wedged_reconcile() {
        let health = Arc::new(Health::default());
        let (url, _stop) = start(health_routes(Arc::clone(&health))).await;
        assert_eq!(
            get(format!("{url}/readyz")).await,
            (
                503,
                "text/plain; charset=utf-8".to_owned(),
                "starting\n".to_owned()
            )
        );
        health.set_phase(Phase::Standby);
        assert_eq!(get(format!("{url}/readyz")).await.0, 200);
        health.set_phase(Phase::Syncing);
        assert_eq!(
            get(format!("{url}/readyz")).await,
            (
                503,
                "text/plain; charset=utf-8".to_owned(),
                "the controllers' caches are syncing\n".to_owned()
            )
        );
        health.set_phase(Phase::Running);
        assert_eq!(
            get(format!("{url}/readyz")).await,
            (
                200,
                "text/plain; charset=utf-8".to_owned(),
                "ok\n".to_owned()
            )
        );

        assert_eq!(
            get(format!("{url}/healthz")).await,
            (
                200,
                "text/plain; charset=utf-8".to_owned(),
                "ok\n".to_owned()
            )
        );
        let long_ago = Instant::now()
            .checked_sub(WEDGED_AFTER + Duration::from_secs(5))
            .expect("the clock started long enough ago");
        let in_flight = health.reconcile_started("TFJob ml/mnist".to_owned(), long_ago);
        let (status, _, body) = get(format!("{url}/healthz")).await;
        assert_eq!(status, 503);
        assert!(
            body.starts_with("the reconcile of TFJob ml/mnist has been running for 60"),
            "{body}"
        );
        drop(in_flight);
        assert_eq!(get(format!("{url}/healthz")).await.0, 200);
        assert_eq!(get(format!("{url}/metrics")).await.0, 404);
    }

    #[tokio::test]
    async fn metrics_are_served_as_openmetrics_text() {
        let metrics = Arc::new(Metrics::default());
        metrics.set_leader(true);
        let (url, _stop) = start(metrics_routes(Arc::clone(&metrics))).await;
        let (status, content_type, body) = get(format!("{url}/metrics")).await;
        assert_eq!(status, 200);
        assert_eq!(content_type, METRICS_CONTENT_TYPE);
        assert_eq!(body, metrics.encode());
        assert!(
            body.lines().any(|line| line == "trainctl_leader 1"),
            "{body}"
        );
    }

    #[tokio::test]
    async fn one_listener_serves_every_endpoint_when_the_addresses_are_the_same() {
        let health = Arc::new(Health::default());
        health.set_phase(Phase::Running);
        let routes = metrics_routes(Arc::new(Metrics::default())).merge(health_routes(health));
        let (url, stop) = start(routes).await;
        for path in ["/metrics", "/healthz", "/readyz"] {
            assert_eq!(get(format!("{url}{path}")).await.0, 200, "{path}");
        }
        stop.send(()).expect("the server runs");
    }
}
