//! The API's answers for the dashboard: what the dashboard may do here (`/api/v1/dashboard`),
//! every job in one line (`/api/v1/job-summaries`), the machine (`/api/v1/machine`) and a job's
//! scalar curves (`.../scalars`). [`super::watch`] streams each of them as it changes.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use trainctl_server_api::{DashboardInfo, Items, LoginCode, Source};

use super::errors::failed;
use super::{Api, JobPath};
use crate::auth::CODE_LIFETIME;
use crate::curves::{Curves, DEFAULT_POINTS, MAX_POINTS};

/// What the dashboard shows and may do with this server: its curves and actions.
pub async fn info() -> Response {
    Json(DashboardInfo {
        source: Source::Local,
        curves: true,
        actions: true,
        version: Some(env!("CARGO_PKG_VERSION").to_owned()),
    })
    .into_response()
}

/// `POST /api/v1/dashboard/codes`: a new one-time login code for the dashboard's address
/// (`/#code=...`), usable once within [`CODE_LIFETIME`].
pub async fn issue_code(State(api): State<Api>) -> Response {
    let code = api.codes.issue(CODE_LIFETIME);
    (
        StatusCode::CREATED,
        Json(LoginCode {
            code,
            expires_in_seconds: CODE_LIFETIME.as_secs(),
        }),
    )
        .into_response()
}

/// `GET /api/v1/job-summaries`: every job in one line, oldest first.
pub async fn summaries(State(api): State<Api>) -> Response {
    match api.supervisor.summaries() {
        Ok(items) => Json(Items { items }).into_response(),
        Err(failure) => failed(&failure),
    }
}

/// `GET /api/v1/machine`: the capacity, what the admitted jobs hold, the GPUs, the queue.
pub async fn machine(State(api): State<Api>) -> Response {
    match api.supervisor.machine() {
        Ok(machine) => Json(machine).into_response(),
        Err(failure) => failed(&failure),
    }
}

/// Query of the scalars endpoints.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct ScalarsQuery {
    /// The most points of each series (at least 10, at most [`MAX_POINTS`]).
    points: Option<usize>,
}

impl ScalarsQuery {
    /// How many points each series may have.
    pub fn points(self) -> usize {
        self.points.unwrap_or(DEFAULT_POINTS).clamp(10, MAX_POINTS)
    }
}

/// `GET .../scalars`: a job's curves, from its event files read now.
pub async fn scalars(
    State(api): State<Api>,
    Path(path): Path<JobPath>,
    Query(query): Query<ScalarsQuery>,
) -> Response {
    let kind = match path.kind() {
        Ok(kind) => kind,
        Err(response) => return *response,
    };
    let roots = match api
        .supervisor
        .event_roots(&path.namespace, kind, &path.name)
    {
        Ok(roots) => roots,
        Err(failure) => return failed(&failure),
    };
    // Reading event files is blocking work, of any length.
    let view =
        tokio::task::spawn_blocking(move || Curves::default().read(roots, query.points())).await;
    match view {
        Ok(view) => Json(view).into_response(),
        Err(panicked) => super::errors::error(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            &format!("reading the event files failed: {panicked}"),
            &[],
        ),
    }
}
