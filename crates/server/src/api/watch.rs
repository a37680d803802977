//! The API's event streams (`/api/v1/watch/...`, `text/event-stream`, [`crate::sse`]), for the
//! dashboard's live pages: each sends what its page shows at once, then again each time it
//! changed, as one event whose data is the JSON the matching `GET` answers. What changed is
//! learnt from [`Changes`](crate::changes::Changes) (the database), and for curves also from the
//! event files, read again every [`CURVES_EVERY`]. Every stream ends when the server stops.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::response::Response;
use serde_json::json;
use trainctl_server_api::Items;

use super::dashboard::ScalarsQuery;
use super::errors::failed;
use super::{Api, JobPath};
use crate::curves::Curves;
use crate::sse::{Next, blocking, stream};
use crate::supervisor::SupervisorError;

/// How often a job's event files are read again while its curves are watched.
pub const CURVES_EVERY: Duration = Duration::from_secs(1);

/// `GET /api/v1/watch/job-summaries`: event `jobs`, `{"items": [...]}`; computed once per change
/// for every stream.
pub async fn summaries(State(api): State<Api>) -> Response {
    let (supervisor, memo) = (Arc::clone(&api.supervisor), Arc::clone(&api.summaries));
    stream(api.changes.clone(), None, move |version| {
        let (supervisor, memo) = (Arc::clone(&supervisor), Arc::clone(&memo));
        Box::pin(async move {
            memo.get(version, move || match supervisor.summaries() {
                Ok(items) => Next::Data("jobs", json!(Items { items }).to_string()),
                Err(failure) => trouble(&failure),
            })
            .await
        })
    })
}

/// `GET /api/v1/watch/machine`: event `machine`; computed once per change for every stream.
pub async fn machine(State(api): State<Api>) -> Response {
    let (supervisor, memo) = (Arc::clone(&api.supervisor), Arc::clone(&api.machine));
    stream(api.changes.clone(), None, move |version| {
        let (supervisor, memo) = (Arc::clone(&supervisor), Arc::clone(&memo));
        Box::pin(async move {
            memo.get(version, move || match supervisor.machine() {
                Ok(machine) => Next::Data("machine", json!(machine).to_string()),
                Err(failure) => trouble(&failure),
            })
            .await
        })
    })
}

/// `GET /api/v1/watch/namespaces/{ns}/{plural}/{name}`: event `job`, then `deleted` when the
/// job is gone. 404 at once when there is no such job.
pub async fn job(State(api): State<Api>, Path(path): Path<JobPath>) -> Response {
    let kind = match path.kind() {
        Ok(kind) => kind,
        Err(response) => return *response,
    };
    if let Err(failure) = api.supervisor.get(&path.namespace, kind, &path.name) {
        return failed(&failure);
    }
    let supervisor = Arc::clone(&api.supervisor);
    let path = Arc::new(path);
    stream(api.changes.clone(), None, move |_| {
        let (supervisor, path) = (Arc::clone(&supervisor), Arc::clone(&path));
        Box::pin(blocking(move || {
            match supervisor.get(&path.namespace, kind, &path.name) {
                Ok(view) => Next::Data("job", json!(view).to_string()),
                Err(SupervisorError::NotFound(_)) => Next::Gone("deleted", "{}".to_owned()),
                Err(failure) => trouble(&failure),
            }
        }))
    })
}

/// `GET /api/v1/watch/namespaces/{ns}/{plural}/{name}/scalars`: event `scalars` each time the
/// curves changed, then `deleted` when the job is gone. 404 at once when there is no such job.
pub async fn scalars(
    State(api): State<Api>,
    Path(path): Path<JobPath>,
    Query(query): Query<ScalarsQuery>,
) -> Response {
    let kind = match path.kind() {
        Ok(kind) => kind,
        Err(response) => return *response,
    };
    if let Err(failure) = api
        .supervisor
        .event_roots(&path.namespace, kind, &path.name)
    {
        return failed(&failure);
    }
    let supervisor = Arc::clone(&api.supervisor);
    let path = Arc::new(path);
    let curves = Arc::new(Mutex::new(Curves::default()));
    stream(api.changes.clone(), Some(CURVES_EVERY), move |_| {
        let (supervisor, path) = (Arc::clone(&supervisor), Arc::clone(&path));
        let curves = Arc::clone(&curves);
        Box::pin(blocking(move || {
            match supervisor.event_roots(&path.namespace, kind, &path.name) {
                Ok(roots) => {
                    let mut curves = curves.lock().unwrap_or_else(PoisonError::into_inner);
                    Next::Data(
                        "scalars",
                        json!(curves.read(roots, query.points())).to_string(),
                    )
                }
                Err(SupervisorError::NotFound(_)) => Next::Gone("deleted", "{}".to_owned()),
                Err(failure) => trouble(&failure),
            }
        }))
    })
}

/// An `error` event saying why the stream's data could not be read this time.
fn trouble(failure: &SupervisorError) -> Next {
    Next::Data("error", json!({ "error": failure.to_string() }).to_string())
}
