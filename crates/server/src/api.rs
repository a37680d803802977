//! The HTTP API (`docs/server-api.md`): routes, the bearer-token check, and errors as JSON.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use trainctl_api::JobKind;

use crate::logs::LogStream;
use crate::supervisor::{Supervisor, SupervisorError};

/// What every handler shares.
#[derive(Clone)]
struct Api {
    supervisor: Arc<Supervisor>,
    token: Arc<str>,
}

/// The router of the whole API; every route but `/healthz` needs `Authorization: Bearer <token>`.
pub fn router(supervisor: Arc<Supervisor>, token: &str) -> Router {
    let api = Api {
        supervisor,
        token: token.into(),
    };
    let job = "/api/v1/namespaces/{namespace}/{plural}/{name}";
    Router::new()
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(openapi))
        .route("/api/v1/jobs", post(submit).get(list))
        .route(job, get(one).delete(delete))
        .route(&format!("{job}/suspend"), post(suspend))
        .route(&format!("{job}/resume"), post(resume))
        .route(&format!("{job}/logs"), get(logs))
        .route_layer(middleware::from_fn_with_state(api.clone(), authorize))
        .route("/healthz", get(|| async { "ok" }))
        .with_state(api)
}

async fn authorize(State(api): State<Api>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .unwrap_or("");
    if constant_time_eq(given.as_bytes(), api.token.as_bytes()) {
        next.run(request).await
    } else {
        error(
            StatusCode::UNAUTHORIZED,
            "missing or wrong bearer token (the CLI reads it from server.token in the state directory)",
            &[],
        )
    }
}

/// Compares without leaking where the first difference is.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |diff, (x, y)| diff | (x ^ y)) == 0
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
}

async fn submit(
    State(api): State<Api>,
    Query(query): Query<SubmitQuery>,
    body: String,
) -> Response {
    let source = query.source.as_deref().unwrap_or("<submitted>");
    let supervisor = Arc::clone(&api.supervisor);
    match supervisor.submit(&body, source, query.namespace.as_deref()) {
        Ok(jobs) => (StatusCode::CREATED, Json(json!({ "jobs": jobs }))).into_response(),
        Err(failure) => failed(&failure),
    }
}

/// Query of `GET /api/v1/jobs`.
#[derive(Debug, Deserialize)]
struct ListQuery {
    namespace: Option<String>,
    kind: Option<String>,
}

async fn list(State(api): State<Api>, Query(query): Query<ListQuery>) -> Response {
    let kind = match query.kind.as_deref().map(str::parse::<JobKind>).transpose() {
        Ok(kind) => kind,
        Err(unknown) => return error(StatusCode::BAD_REQUEST, &unknown.to_string(), &[]),
    };
    match api.supervisor.list(query.namespace.as_deref(), kind) {
        Ok(items) => Json(json!({ "items": items })).into_response(),
        Err(failure) => failed(&failure),
    }
}

/// The path of one job.
#[derive(Debug, Deserialize)]
struct JobPath {
    namespace: String,
    plural: String,
    name: String,
}

impl JobPath {
    fn kind(&self) -> Result<JobKind, Box<Response>> {
        self.plural
            .parse()
            .map_err(|unknown: trainctl_api::kind::UnknownKind| {
                Box::new(error(StatusCode::NOT_FOUND, &unknown.to_string(), &[]))
            })
    }
}

async fn one(State(api): State<Api>, Path(path): Path<JobPath>) -> Response {
    let kind = match path.kind() {
        Ok(kind) => kind,
        Err(response) => return *response,
    };
    match api.supervisor.get(&path.namespace, kind, &path.name) {
        Ok(view) => Json(view).into_response(),
        Err(failure) => failed(&failure),
    }
}

async fn delete(State(api): State<Api>, Path(path): Path<JobPath>) -> Response {
    let kind = match path.kind() {
        Ok(kind) => kind,
        Err(response) => return *response,
    };
    match api
        .supervisor
        .delete(&path.namespace, kind, &path.name)
        .await
    {
        Ok(view) => Json(json!({ "deleted": view })).into_response(),
        Err(failure) => failed(&failure),
    }
}

async fn suspend(State(api): State<Api>, Path(path): Path<JobPath>) -> Response {
    let kind = match path.kind() {
        Ok(kind) => kind,
        Err(response) => return *response,
    };
    match api
        .supervisor
        .suspend(&path.namespace, kind, &path.name)
        .await
    {
        Ok(view) => Json(view).into_response(),
        Err(failure) => failed(&failure),
    }
}

async fn resume(State(api): State<Api>, Path(path): Path<JobPath>) -> Response {
    let kind = match path.kind() {
        Ok(kind) => kind,
        Err(response) => return *response,
    };
    match api.supervisor.resume(&path.namespace, kind, &path.name) {
        Ok(view) => Json(view).into_response(),
        Err(failure) => failed(&failure),
    }
}

/// Query of the logs endpoint.
#[derive(Debug, Deserialize)]
struct LogsQuery {
    replica: Option<String>,
    #[serde(default)]
    follow: bool,
}

async fn logs(
    State(api): State<Api>,
    Path(path): Path<JobPath>,
    Query(query): Query<LogsQuery>,
) -> Response {
    let kind = match path.kind() {
        Ok(kind) => kind,
        Err(response) => return *response,
    };
    let uid = match api.supervisor.get(&path.namespace, kind, &path.name) {
        Ok(view) => view.uid,
        Err(failure) => return failed(&failure),
    };
    let stream = LogStream::new(
        Arc::clone(&api.supervisor),
        uid,
        query.replica,
        query.follow,
    );
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    (headers, Body::from_stream(stream.into_stream())).into_response()
}

fn failed(failure: &SupervisorError) -> Response {
    match failure {
        SupervisorError::Invalid(details) => {
            error(StatusCode::BAD_REQUEST, &failure.to_string(), details)
        }
        SupervisorError::NotFound(_) => error(StatusCode::NOT_FOUND, &failure.to_string(), &[]),
        SupervisorError::Conflict(_) => error(StatusCode::CONFLICT, &failure.to_string(), &[]),
        SupervisorError::Store(_) | SupervisorError::Reaper(_) => {
            error(StatusCode::INTERNAL_SERVER_ERROR, &failure.to_string(), &[])
        }
    }
}

fn error(status: StatusCode, message: &str, details: &[String]) -> Response {
    (
        status,
        Json(json!({ "error": message, "details": details })),
    )
        .into_response()
}
