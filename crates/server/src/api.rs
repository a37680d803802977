//! The HTTP API (`docs/server-api.md`): routes, the bearer-token check, and errors as JSON
//! ([`errors`]); a namespace, in a path or a query, is a DNS-1123 label or the request is
//! refused (400).

mod body;
mod dashboard;
mod errors;
mod quotas;
mod shared;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use trainctl_api::JobKind;
use trainctl_dashboard::auth::{LoginCodes, require_token};
use trainctl_local::claims::VolumeBinding;
use trainctl_server_api::Items;

use crate::supervisor::{SubmitOptions, Supervisor};
use errors::{error, failed};
use shared::{Api, query_namespace};

/// The router of the whole API: the dashboard's ([`trainctl_dashboard::app`] over
/// [`dashboard::Local`]: jobs, their actions, logs and curves, the machine, and the event
/// streams, which wait on `changes`, the state database's changes) and the server's own
/// (`/metrics`, `/openapi.json`, submitting and listing jobs, quotas, the dashboard's login
/// codes). Every route but `/healthz`, the dashboard's files and its login (`POST
/// /api/v1/dashboard/login`, which takes one of `codes`) needs `Authorization: Bearer <token>`
/// (the scheme's name in any case, as RFC 7235 has it).
pub fn router(
    supervisor: Arc<Supervisor>,
    token: &str,
    changes: tokio::sync::watch::Receiver<u64>,
    codes: Arc<LoginCodes>,
) -> Router {
    let dashboard = dashboard::Local {
        supervisor: Arc::clone(&supervisor),
        changes,
    };
    let api = Api {
        supervisor,
        codes: Arc::clone(&codes),
    };
    let own = Router::new()
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(openapi))
        .route("/api/v1/jobs", post(submit).get(list))
        .route("/api/v1/resourcequotas", get(quotas::list))
        .route(
            "/api/v1/namespaces/{namespace}/resourcequotas/{name}",
            get(quotas::one).delete(quotas::delete),
        )
        .route("/api/v1/dashboard/codes", post(dashboard::issue_code))
        .route_layer(middleware::from_fn_with_state(
            Arc::<str>::from(token),
            require_token,
        ))
        .with_state(api);
    trainctl_dashboard::app(dashboard, token, codes)
        .merge(own)
        .fallback(errors::unknown_path)
        .layer(middleware::from_fn(errors::envelope))
}

async fn metrics(State(api): State<Api>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        api.supervisor.metrics_text(),
    )
        .into_response()
}

async fn openapi() -> Response {
    Json(crate::openapi::document()).into_response()
}

/// Query of `POST /api/v1/jobs`.
#[derive(Debug, Deserialize)]
struct SubmitQuery {
    namespace: Option<String>,
    source: Option<String>,
    /// A command to run when each of the jobs finishes (`submit --on-finish`).
    #[serde(rename = "onFinish")]
    on_finish: Option<String>,
}

async fn submit(
    State(api): State<Api>,
    Query(query): Query<SubmitQuery>,
    Query(pairs): Query<Vec<(String, String)>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Err(response) = query_namespace(query.namespace.as_deref()) {
        return *response;
    }
    let volumes = match query_volumes(&pairs) {
        Ok(volumes) => volumes,
        Err(response) => return *response,
    };
    let source = query.source.as_deref().unwrap_or("<submitted>");
    let bytes = match body::read(&headers, body).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    // Not UTF-8: the loader says where, as `trainctl validate` would.
    let Ok(text) = std::str::from_utf8(&bytes) else {
        let details = trainctl_api::manifest::load_bytes(source, &bytes)
            .diagnostics
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>();
        return error(StatusCode::BAD_REQUEST, "the manifest is invalid", &details);
    };
    let supervisor = Arc::clone(&api.supervisor);
    let options = SubmitOptions {
        namespace: query.namespace.as_deref(),
        volumes: &volumes,
        on_finish: query.on_finish.as_deref(),
    };
    match supervisor.submit(text, source, &options) {
        Ok(submitted) => (StatusCode::CREATED, Json(submitted)).into_response(),
        Err(failure) => failed(&failure),
    }
}

/// The claims to bind, from the repeated query parameter `volume` (`[NAMESPACE/]CLAIM=PATH`,
/// PATH an existing directory of this machine); 400 naming the first that is not.
fn query_volumes(pairs: &[(String, String)]) -> Result<Vec<VolumeBinding>, Box<Response>> {
    pairs
        .iter()
        .filter(|(key, _)| key == "volume")
        .map(|(_, text)| {
            VolumeBinding::parse(text).map_err(|problem| {
                Box::new(error(
                    StatusCode::BAD_REQUEST,
                    &format!("the query parameter `volume` ({text}): {problem}"),
                    &[],
                ))
            })
        })
        .collect()
}

/// Query of `GET /api/v1/jobs`.
#[derive(Debug, Deserialize)]
struct ListQuery {
    namespace: Option<String>,
    kind: Option<String>,
}

async fn list(State(api): State<Api>, Query(query): Query<ListQuery>) -> Response {
    if let Err(response) = query_namespace(query.namespace.as_deref()) {
        return *response;
    }
    let kind = match query.kind.as_deref().map(str::parse::<JobKind>).transpose() {
        Ok(kind) => kind,
        Err(unknown) => return error(StatusCode::BAD_REQUEST, &unknown.to_string(), &[]),
    };
    match api.supervisor.list(query.namespace.as_deref(), kind) {
        Ok(items) => Json(Items { items }).into_response(),
        Err(failure) => failed(&failure),
    }
}

#[cfg(test)]
mod tests;
