//! The dashboard's API over a [`Source`]: what the pages may do here (`/api/v1/dashboard`),
//! every job in one line (`/api/v1/job-summaries`), the machine (`/api/v1/machine`), one job
//! with its actions, logs and curves (`/api/v1/namespaces/{namespace}/{plural}/{name}...`),
//! and the event streams of each (`/api/v1/watch/...`, [`crate::sse`]): each stream sends what
//! its page shows at once, then again each time the source's changes say it may have changed,
//! as one event whose data is the JSON the matching `GET` answers. A job's streams end with
//! `deleted` when the job is gone.

use std::sync::Arc;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router, middleware};
use trainctl_api::manifest::check_namespace;
use trainctl_server_api::{Deleted, Items, LogsQuery, ScalarsQuery};

use crate::auth::{LoginCodes, login_router, require_token};
use crate::sse::{Memo, Next, stream};
use crate::{Failure, JobPath, Source};

/// What every route shares: the source, and what the streams of every page compute once per
/// change.
struct Shared<S> {
    source: S,
    summaries: Memo,
    machine: Memo,
}

type Dashboard<S> = State<Arc<Shared<S>>>;

/// The dashboard's whole router over `source`: its API's routes, which need `Authorization:
/// Bearer <token>` (the scheme's name in any case), and, needing none, `/healthz`, the login
/// with one of `codes` (`POST /api/v1/dashboard/login`) and the pages ([`crate::router`]).
/// Unknown paths and methods are left to the caller's fallbacks.
pub fn app<S: Source>(source: S, token: &str, codes: Arc<LoginCodes>) -> Router {
    let shared = Arc::new(Shared {
        source,
        summaries: Memo::default(),
        machine: Memo::default(),
    });
    let job = "/api/v1/namespaces/{namespace}/{plural}/{name}";
    let watch_job = "/api/v1/watch/namespaces/{namespace}/{plural}/{name}";
    Router::new()
        .route("/api/v1/dashboard", get(info::<S>))
        .route("/api/v1/job-summaries", get(summaries::<S>))
        .route("/api/v1/machine", get(machine::<S>))
        .route(job, get(one::<S>).delete(delete::<S>))
        .route(&format!("{job}/suspend"), post(suspend::<S>))
        .route(&format!("{job}/resume"), post(resume::<S>))
        .route(&format!("{job}/logs"), get(logs::<S>))
        .route(&format!("{job}/scalars"), get(scalars::<S>))
        .route("/api/v1/watch/job-summaries", get(watch_summaries::<S>))
        .route("/api/v1/watch/machine", get(watch_machine::<S>))
        .route(watch_job, get(watch_one::<S>))
        .route(&format!("{watch_job}/scalars"), get(watch_scalars::<S>))
        .route_layer(middleware::from_fn_with_state(
            Arc::<str>::from(token),
            require_token,
        ))
        .route("/healthz", get(|| async { "ok" }))
        .merge(login_router(Arc::from(token), codes))
        .merge(crate::router())
        .with_state(shared)
}

/// The job a path names: 400 when the path cannot be read or its namespace is not a DNS-1123
/// label; else as the source finds it.
async fn find<S: Source>(
    source: &S,
    path: Result<Path<JobPath>, PathRejection>,
) -> Result<S::Job, Failure> {
    let Path(path) =
        path.map_err(|rejection| Failure::new(rejection.status(), rejection.body_text()))?;
    check_namespace(&path.namespace).map_err(|problem| {
        Failure::new(
            StatusCode::BAD_REQUEST,
            format!("the path's namespace: {problem}"),
        )
    })?;
    source.find(&path).await
}

/// A query that could be read; else its rejection, in the envelope.
fn query<T>(query: Result<Query<T>, QueryRejection>) -> Result<T, Failure> {
    query
        .map(|Query(query)| query)
        .map_err(|rejection| Failure::new(rejection.status(), rejection.body_text()))
}

async fn info<S: Source>(State(shared): Dashboard<S>) -> Response {
    Json(shared.source.info().await).into_response()
}

async fn summaries<S: Source>(State(shared): Dashboard<S>) -> Result<Response, Failure> {
    let items = shared.source.summaries().await?;
    Ok(Json(Items { items }).into_response())
}

async fn machine<S: Source>(State(shared): Dashboard<S>) -> Result<Response, Failure> {
    if let Some(failure) = shared.source.no_machine() {
        return Err(failure);
    }
    Ok(Json(shared.source.machine().await?).into_response())
}

async fn one<S: Source>(
    State(shared): Dashboard<S>,
    path: Result<Path<JobPath>, PathRejection>,
) -> Result<Response, Failure> {
    let job = find(&shared.source, path).await?;
    Ok(Json(shared.source.view(&job).await?).into_response())
}

async fn delete<S: Source>(
    State(shared): Dashboard<S>,
    path: Result<Path<JobPath>, PathRejection>,
) -> Result<Response, Failure> {
    let job = find(&shared.source, path).await?;
    let deleted = shared.source.delete(job).await?;
    Ok(Json(Deleted { deleted }).into_response())
}

async fn suspend<S: Source>(
    State(shared): Dashboard<S>,
    path: Result<Path<JobPath>, PathRejection>,
) -> Result<Response, Failure> {
    let job = find(&shared.source, path).await?;
    Ok(Json(shared.source.set_suspended(job, true).await?).into_response())
}

async fn resume<S: Source>(
    State(shared): Dashboard<S>,
    path: Result<Path<JobPath>, PathRejection>,
) -> Result<Response, Failure> {
    let job = find(&shared.source, path).await?;
    Ok(Json(shared.source.set_suspended(job, false).await?).into_response())
}

/// `GET {job}/logs`: the text the source gives, as `text/plain`; 400 for a query that cannot
/// be read or a `sinceSeconds` that is not above 0 (as the Kubernetes API: a negative
/// `tailLines` is no tail).
async fn logs<S: Source>(
    State(shared): Dashboard<S>,
    path: Result<Path<JobPath>, PathRejection>,
    wanted: Result<Query<LogsQuery>, QueryRejection>,
) -> Result<Response, Failure> {
    let wanted = query(wanted)?;
    if let Some(seconds) = wanted.since_seconds.filter(|&seconds| seconds <= 0) {
        return Err(Failure::new(
            StatusCode::BAD_REQUEST,
            format!("sinceSeconds is {seconds}: it must be more than 0"),
        ));
    }
    let job = find(&shared.source, path).await?;
    let mut response = shared.source.logs(job, wanted).await?.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    Ok(response)
}

/// `GET {job}/scalars`: the job's curves, read now.
async fn scalars<S: Source>(
    State(shared): Dashboard<S>,
    path: Result<Path<JobPath>, PathRejection>,
    wanted: Result<Query<ScalarsQuery>, QueryRejection>,
) -> Result<Response, Failure> {
    let points = query(wanted)?.points();
    let job = find(&shared.source, path).await?;
    let curves = S::Curves::default();
    Ok(Json(shared.source.scalars(&job, &curves, points).await?).into_response())
}

/// `GET /api/v1/watch/job-summaries`: event `jobs`, `{"items": [...]}`; computed once per
/// change for every stream.
async fn watch_summaries<S: Source>(State(shared): Dashboard<S>) -> Response {
    stream(shared.source.changes(), None, move |version| {
        let shared = Arc::clone(&shared);
        Box::pin(async move {
            let items = async {
                let items = shared.source.summaries().await;
                Next::of("jobs", items.map(|items| Items { items }))
            };
            shared.summaries.get(version, items).await
        })
    })
}

/// `GET /api/v1/watch/machine`: event `machine`; computed once per change for every stream.
async fn watch_machine<S: Source>(State(shared): Dashboard<S>) -> Response {
    if let Some(failure) = shared.source.no_machine() {
        return failure.into_response();
    }
    stream(shared.source.changes(), None, move |version| {
        let shared = Arc::clone(&shared);
        Box::pin(async move {
            let machine = async { Next::of("machine", shared.source.machine().await) };
            shared.machine.get(version, machine).await
        })
    })
}

/// `GET /api/v1/watch/namespaces/{ns}/{plural}/{name}`: event `job`, then `deleted` when the
/// job is gone. The source's failure at once when there is no such job.
async fn watch_one<S: Source>(
    State(shared): Dashboard<S>,
    path: Result<Path<JobPath>, PathRejection>,
) -> Response {
    let job = match find(&shared.source, path).await {
        Ok(job) => job,
        Err(failure) => return failure.into_response(),
    };
    stream(shared.source.changes(), None, move |_| {
        let (shared, job) = (Arc::clone(&shared), job.clone());
        Box::pin(async move { Next::unless_gone("job", shared.source.view_now(&job).await) })
    })
}

/// `GET /api/v1/watch/namespaces/{ns}/{plural}/{name}/scalars`: event `scalars` each time the
/// curves changed (read again at each change, and every [`Source::CURVES_EVERY`]), then
/// `deleted` when the job is gone. The source's failure at once when there is no such job.
async fn watch_scalars<S: Source>(
    State(shared): Dashboard<S>,
    path: Result<Path<JobPath>, PathRejection>,
    wanted: Result<Query<ScalarsQuery>, QueryRejection>,
) -> Response {
    let found = match query(wanted) {
        Ok(wanted) => find(&shared.source, path)
            .await
            .map(|job| (job, wanted.points())),
        Err(failure) => Err(failure),
    };
    let (job, points) = match found {
        Ok(found) => found,
        Err(failure) => return failure.into_response(),
    };
    let curves = S::Curves::default();
    stream(shared.source.changes(), S::CURVES_EVERY, move |_| {
        let (shared, job, curves) = (Arc::clone(&shared), job.clone(), curves.clone());
        Box::pin(async move {
            let read = shared.source.scalars(&job, &curves, points).await;
            Next::unless_gone("scalars", read)
        })
    })
}

#[cfg(test)]
mod tests;
