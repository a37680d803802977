//! The HTTP API (`docs/server-api.md`): routes, the bearer-token check, and errors as JSON
//! ([`errors`]); a namespace, in a path or a query, is a DNS-1123 label or the request is
//! refused (400).

mod body;
mod dashboard;
mod errors;
mod quotas;
mod watch;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use trainctl_api::JobKind;
use trainctl_api::manifest::check_namespace;
use trainctl_local::claims::VolumeBinding;
use trainctl_server_api::{Deleted, Items};

use crate::logs::{self, LogQuery, LogStream};
use crate::supervisor::Supervisor;
use errors::{error, failed};

/// What every handler shares.
#[derive(Clone)]
struct Api {
    supervisor: Arc<Supervisor>,
    token: Arc<str>,
    /// Bumped at each change of the state database, for the event streams.
    changes: tokio::sync::watch::Receiver<u64>,
    /// The job summaries' stream data, computed once per change for every stream.
    summaries: Arc<crate::sse::Memo>,
    /// The machine's stream data, computed once per change for every stream.
    machine: Arc<crate::sse::Memo>,
    /// The dashboard's one-time login codes.
    codes: Arc<crate::auth::LoginCodes>,
}

/// The router of the whole API; every route but `/healthz`, the dashboard's files and its login
/// (`POST /api/v1/dashboard/login`, which takes one of `codes`) needs `Authorization: Bearer
/// <token>` (the scheme's name in any case, as RFC 7235 has it). The event streams
/// (`/api/v1/watch/...`) wait on `changes`, which changes with the state database.
pub fn router(
    supervisor: Arc<Supervisor>,
    token: &str,
    changes: tokio::sync::watch::Receiver<u64>,
    codes: Arc<crate::auth::LoginCodes>,
) -> Router {
    let api = Api {
        supervisor,
        token: token.into(),
        changes,
        summaries: Arc::default(),
        machine: Arc::default(),
        codes,
    };
    let job = "/api/v1/namespaces/{namespace}/{plural}/{name}";
    let watch_job = "/api/v1/watch/namespaces/{namespace}/{plural}/{name}";
    Router::new()
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(openapi))
        .route("/api/v1/jobs", post(submit).get(list))
        .route("/api/v1/resourcequotas", get(quotas::list))
        .route(
            "/api/v1/namespaces/{namespace}/resourcequotas/{name}",
            get(quotas::one).delete(quotas::delete),
        )
        .route(job, get(one).delete(delete))
        .route(&format!("{job}/suspend"), post(suspend))
        .route(&format!("{job}/resume"), post(resume))
        .route(&format!("{job}/logs"), get(logs))
        .route(&format!("{job}/scalars"), get(dashboard::scalars))
        .route("/api/v1/dashboard", get(dashboard::info))
        .route("/api/v1/dashboard/codes", post(dashboard::issue_code))
        .route("/api/v1/job-summaries", get(dashboard::summaries))
        .route("/api/v1/machine", get(dashboard::machine))
        .route("/api/v1/watch/job-summaries", get(watch::summaries))
        .route("/api/v1/watch/machine", get(watch::machine))
        .route(watch_job, get(watch::job))
        .route(&format!("{watch_job}/scalars"), get(watch::scalars))
        .route_layer(middleware::from_fn_with_state(
            Arc::clone(&api.token),
            crate::auth::require_token,
        ))
        .route("/healthz", get(|| async { "ok" }))
        .merge(crate::auth::login_router(
            Arc::clone(&api.token),
            Arc::clone(&api.codes),
        ))
        .merge(trainctl_dashboard::router())
        .fallback(errors::unknown_path)
        .layer(middleware::from_fn(errors::envelope))
        .with_state(api)
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
    match supervisor.submit(text, source, query.namespace.as_deref(), &volumes) {
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

/// The path of one job.
#[derive(Debug, Deserialize)]
struct JobPath {
    namespace: String,
    plural: String,
    name: String,
}

impl JobPath {
    /// The kind the path names; 400 when its namespace is not a DNS-1123 label, 404 when its
    /// plural is no kind's.
    fn kind(&self) -> Result<JobKind, Box<Response>> {
        check_namespace(&self.namespace).map_err(|problem| {
            Box::new(error(
                StatusCode::BAD_REQUEST,
                &format!("the path's namespace: {problem}"),
                &[],
            ))
        })?;
        self.plural
            .parse()
            .map_err(|unknown: trainctl_api::kind::UnknownKind| {
                Box::new(error(StatusCode::NOT_FOUND, &unknown.to_string(), &[]))
            })
    }
}

/// Checks the query parameter `namespace`, when given: 400 unless it is a DNS-1123 label.
fn query_namespace(namespace: Option<&str>) -> Result<(), Box<Response>> {
    match namespace.map(check_namespace) {
        Some(Err(problem)) => Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            &format!("the query parameter `namespace`: {problem}"),
            &[],
        ))),
        _ => Ok(()),
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
        Ok(view) => Json(Deleted { deleted: view }).into_response(),
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

/// Query of the logs endpoint: the Kubernetes pod log API's parameters (the cluster dashboard
/// takes the same).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogsQuery {
    /// One replica (`worker-0`); every replica, prefixed, when omitted.
    pub replica: Option<String>,
    /// Stream until the job has finished.
    #[serde(default)]
    pub follow: bool,
    /// Only the last lines of each log; negative: all.
    pub tail_lines: Option<i64>,
    /// Only the lines of the last seconds.
    pub since_seconds: Option<i64>,
    /// Each line after its time.
    #[serde(default)]
    pub timestamps: bool,
    /// Each replica's run before its last restart.
    #[serde(default)]
    pub previous: bool,
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
    let view = match api.supervisor.get(&path.namespace, kind, &path.name) {
        Ok(view) => view,
        Err(failure) => return failed(&failure),
    };
    if let Some(replica) = &query.replica {
        let replicas = logs::replica_names(&view);
        if !replicas.contains(replica) {
            return error(
                StatusCode::NOT_FOUND,
                &format!(
                    "{} {}/{} has no replica `{replica}`; its replicas: {}",
                    view.kind,
                    view.namespace,
                    view.name,
                    listed(&replicas)
                ),
                &[],
            );
        }
    }
    // As the Kubernetes API: a negative tail is no tail, a since must be positive.
    let since_seconds = match query.since_seconds {
        Some(seconds) if seconds <= 0 => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("sinceSeconds is {seconds}: it must be more than 0"),
                &[],
            );
        }
        since => since.map(i64::unsigned_abs),
    };
    let wanted = LogQuery {
        replica: query.replica,
        follow: query.follow,
        tail_lines: query
            .tail_lines
            .and_then(|lines| usize::try_from(lines).ok()),
        since_seconds,
        timestamps: query.timestamps,
        previous: query.previous,
    };
    let runs = if wanted.previous {
        let job = format!("{} {}/{}", view.kind, view.namespace, view.name);
        let sources = match api.supervisor.log_sources(&view.uid) {
            Ok((sources, _)) => sources,
            Err(failure) => return failed(&failure),
        };
        match logs::previous_runs(&job, &sources, wanted.replica.as_deref()) {
            Ok(runs) => Some(runs),
            Err(none) => return error(StatusCode::BAD_REQUEST, &none.to_string(), &[]),
        }
    } else {
        None
    };
    let stream = LogStream::new(Arc::clone(&api.supervisor), view.uid, wanted, runs);
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    (headers, Body::from_stream(stream.into_stream())).into_response()
}

/// `a, b, c`; the first ten of a longer list, then how many in all.
fn listed(names: &[String]) -> String {
    match names.get(..10) {
        Some(first) if names.len() > 10 => {
            format!("{}, ... ({} in all)", first.join(", "), names.len())
        }
        _ => names.join(", "),
    }
}
