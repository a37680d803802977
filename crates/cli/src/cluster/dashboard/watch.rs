//! The API's event streams (`/api/v1/watch/...`) from the cluster: each sends what its page
//! shows at once, then again each time the cluster changed ([`super::changes`]) and the page's
//! data with it, as one event whose data is the JSON the matching `GET` answers
//! (`trainctl_server::sse`). A job's streams end with `deleted` when the job is gone.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use trainctl_server::sse::{Next, stream};

use super::Dashboard;
use super::api::{JobPath, no_curves};
use crate::cluster::{ClusterError, ClusterJob};

/// `GET /api/v1/watch/job-summaries`: event `jobs`, `{"items": [...]}`.
pub async fn summaries(State(dashboard): State<Dashboard>) -> Response {
    let changes = dashboard.changes.clone();
    stream(changes, None, move |_| {
        let dashboard = dashboard.clone();
        Box::pin(async move {
            match dashboard.summaries().await {
                Ok(items) => Next::Data("jobs", json!({ "items": items }).to_string()),
                Err(error) => trouble(&error),
            }
        })
    })
}

/// `GET /api/v1/watch/namespaces/{ns}/{plural}/{name}`: event `job`, then `deleted` when the
/// job is gone (or replaced by another of its name). 404 at once when there is no such job.
pub async fn job(
    State(dashboard): State<Dashboard>,
    path: Result<Path<JobPath>, PathRejection>,
) -> Response {
    let job = match dashboard.find(path).await {
        Ok(job) => job,
        Err(failure) => return failure.into_response(),
    };
    let changes = dashboard.changes.clone();
    stream(changes, None, move |_| {
        let (dashboard, job) = (dashboard.clone(), job.clone());
        Box::pin(async move {
            match again(&dashboard, &job).await {
                Ok(Some(now)) => match dashboard.view(&now).await {
                    Ok(view) => Next::Data("job", json!(view).to_string()),
                    Err(error) => trouble(&error),
                },
                Ok(None) => Next::Gone("deleted", "{}".to_owned()),
                Err(error) => trouble(&error),
            }
        })
    })
}

/// `GET /api/v1/watch/namespaces/{ns}/{plural}/{name}/scalars`: one event `scalars` with no
/// curves (a cluster's event files are not read), then `deleted` when the job is gone. 404 at
/// once when there is no such job.
pub async fn scalars(
    State(dashboard): State<Dashboard>,
    path: Result<Path<JobPath>, PathRejection>,
) -> Response {
    let job = match dashboard.find(path).await {
        Ok(job) => job,
        Err(failure) => return failure.into_response(),
    };
    let changes = dashboard.changes.clone();
    stream(changes, None, move |_| {
        let (dashboard, job) = (dashboard.clone(), job.clone());
        Box::pin(async move {
            match again(&dashboard, &job).await {
                Ok(Some(_)) => Next::Data("scalars", no_curves().to_string()),
                Ok(None) => Next::Gone("deleted", "{}".to_owned()),
                Err(error) => trouble(&error),
            }
        })
    })
}

/// `job` as it is now; `None` once it is deleted, or another job took its name.
async fn again(
    dashboard: &Dashboard,
    job: &ClusterJob,
) -> Result<Option<ClusterJob>, ClusterError> {
    let now = dashboard
        .cluster
        .get_job(job.kind, job.namespace(), job.name())
        .await?;
    Ok(now.filter(|now| now.uid() == job.uid()))
}

/// An `error` event saying why the stream's data could not be read this time.
fn trouble(error: &ClusterError) -> Next {
    Next::Data("error", json!({ "error": error.to_string() }).to_string())
}
