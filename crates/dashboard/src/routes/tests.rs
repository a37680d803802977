//! The routes over a fake source: the token, the bodies the source gives, the failures it says,
//! and the event streams' first events.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use tokio::sync::watch;
use tower::ServiceExt;
use trainctl_server_api::{
    DashboardInfo, JobSummary, JobView, LogsQuery, MachineView, ScalarsView,
};

use super::app;
use crate::auth::LoginCodes;
use crate::{Failure, JobPath, Source};

const TOKEN: &str = "the-token";

/// One job, `default/tfjobs/mnist`, which is gone once `deleted`; no Machine page.
#[derive(Clone)]
struct Fake {
    /// Held while the streams should go on; `None`: each stream ends after its first event.
    changes: watch::Receiver<u64>,
    deleted: bool,
}

fn summary() -> JobSummary {
    JobSummary {
        namespace: "default".to_owned(),
        name: "mnist".to_owned(),
        kind: "TFJob",
        plural: "tfjobs",
        uid: "u-1".to_owned(),
        state: "Running",
        waiting: None,
        failure: None,
        reason: None,
        queue_position: None,
        replicas_ready: 1,
        replicas_total: 2,
        restarts: 0,
        created: jiff::Timestamp::UNIX_EPOCH,
        started: None,
        finished_at: None,
        gpus: 0,
    }
}

fn view() -> JobView {
    JobView {
        namespace: "default".to_owned(),
        name: "mnist".to_owned(),
        kind: "TFJob",
        uid: "u-1".to_owned(),
        state: "Running",
        waiting: None,
        failure: None,
        reason: None,
        created: jiff::Timestamp::UNIX_EPOCH,
        finished: false,
        job: json!({}),
        replicas: Vec::new(),
        events: Vec::new(),
    }
}

impl Source for Fake {
    type Job = String;
    type Curves = ();
    const CURVES_EVERY: Option<Duration> = None;

    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.clone()
    }

    async fn info(&self) -> DashboardInfo {
        DashboardInfo {
            source: trainctl_server_api::Source::Local,
            curves: false,
            machine: Some(false),
            actions: false,
            version: None,
            cluster: None,
        }
    }

    async fn summaries(&self) -> Result<Vec<JobSummary>, Failure> {
        Ok(vec![summary()])
    }

    fn no_machine(&self) -> Option<Failure> {
        Some(Failure::new(StatusCode::NOT_FOUND, "no machine here"))
    }

    async fn machine(&self) -> Result<MachineView, Failure> {
        Err(Failure::new(StatusCode::NOT_FOUND, "no machine here"))
    }

    async fn find(&self, path: &JobPath) -> Result<String, Failure> {
        path.kind()
            .map_err(|unknown| Failure::new(StatusCode::NOT_FOUND, unknown.to_string()))?;
        if path.name == "mnist" {
            Ok(path.name.clone())
        } else {
            Err(Failure::new(StatusCode::NOT_FOUND, "no such job"))
        }
    }

    async fn view(&self, _: &String) -> Result<JobView, Failure> {
        Ok(view())
    }

    async fn view_now(&self, _: &String) -> Result<JobView, Failure> {
        if self.deleted {
            Err(Failure::gone("gone"))
        } else {
            Ok(view())
        }
    }

    async fn delete(&self, _: String) -> Result<JobView, Failure> {
        Ok(view())
    }

    async fn set_suspended(&self, _: String, _: bool) -> Result<JobView, Failure> {
        Err(Failure::new(StatusCode::CONFLICT, "it has finished").with_details(vec!["a".into()]))
    }

    async fn logs(&self, _: String, query: LogsQuery) -> Result<Body, Failure> {
        Ok(Body::from(format!("tail {:?}\n", query.tail_lines)))
    }

    async fn scalars(&self, _: &String, (): &(), points: usize) -> Result<ScalarsView, Failure> {
        if self.deleted {
            return Err(Failure::gone("gone"));
        }
        Ok(ScalarsView {
            roots: Vec::new(),
            series: Vec::new(),
            problems: vec![format!("{points} points")],
            env: "TRAINCTL_TENSORBOARD_DIR",
        })
    }
}

/// The fake's dashboard; no change will come, so each stream ends after its first event.
fn fake(deleted: bool) -> axum::Router {
    let (_, changes) = watch::channel(0);
    app(
        Fake { changes, deleted },
        TOKEN,
        Arc::new(LoginCodes::default()),
    )
}

/// `method path` with the token (unless `token` is `None`): the status, the media type and
/// the body.
async fn call(
    app: axum::Router,
    method: &str,
    path: &str,
    token: Option<&str>,
) -> (StatusCode, String, String) {
    let mut request = Request::builder().method(method).uri(path);
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("bearer {token}"));
    }
    let response = app
        .oneshot(request.body(Body::empty()).expect("a request"))
        .await
        .expect("an answer");
    let status = response.status();
    let media = response
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|value| value.to_str().expect("text").to_owned())
        .unwrap_or_default();
    let body = to_bytes(response.into_body(), 1 << 20)
        .await
        .expect("a body");
    (
        status,
        media,
        String::from_utf8(body.to_vec()).expect("UTF-8"),
    )
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|_| panic!("JSON: {body}"))
}

#[tokio::test]
async fn the_api_is_refused_without_the_token_the_pages_and_health_are_not() {
    for token in [None, Some("not-the-token")] {
        let (status, media, body) = call(fake(false), "GET", "/api/v1/job-summaries", token).await;
        assert_eq!(
            (status, media.as_str()),
            (StatusCode::UNAUTHORIZED, "application/json")
        );
        assert_eq!(json(&body)["details"], json!([]), "{body}");
    }
    for path in ["/healthz", "/"] {
        let (status, _, _) = call(fake(false), "GET", path, None).await;
        assert_eq!(status, StatusCode::OK, "{path}");
    }
}

#[tokio::test]
async fn each_route_answers_what_the_source_gives_in_the_apis_shapes() {
    let (status, _, body) = call(fake(false), "GET", "/api/v1/job-summaries", Some(TOKEN)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(json(&body), json!({ "items": [summary()] }));
    let job = "/api/v1/namespaces/default/tfjobs/mnist";
    let (status, _, body) = call(fake(false), "DELETE", job, Some(TOKEN)).await;
    assert_eq!(
        (status, json(&body)),
        (StatusCode::OK, json!({ "deleted": view() }))
    );
    let (status, _, body) = call(
        fake(false),
        "GET",
        &format!("{job}/scalars?points=5"),
        Some(TOKEN),
    )
    .await;
    assert_eq!(
        (status, &json(&body)["problems"]),
        (StatusCode::OK, &json!(["10 points"]))
    );
    let (status, media, body) = call(
        fake(false),
        "GET",
        &format!("{job}/logs?tailLines=3"),
        Some(TOKEN),
    )
    .await;
    assert_eq!(
        (status, media.as_str(), body.as_str()),
        (
            StatusCode::OK,
            "text/plain; charset=utf-8",
            "tail Some(3)\n"
        )
    );
}

#[tokio::test]
async fn failures_are_the_envelope_with_their_status() {
    let jobs = "/api/v1/namespaces";
    let cases = [
        (
            "POST",
            format!("{jobs}/default/tfjobs/mnist/suspend"),
            409,
            "it has finished",
            json!(["a"]),
        ),
        (
            "GET",
            format!("{jobs}/Not_A_Namespace/tfjobs/mnist"),
            400,
            "the path's namespace: ",
            json!([]),
        ),
        (
            "GET",
            format!("{jobs}/default/cronjobs/mnist"),
            404,
            "cronjobs",
            json!([]),
        ),
        (
            "GET",
            format!("{jobs}/default/tfjobs/other"),
            404,
            "no such job",
            json!([]),
        ),
        (
            "GET",
            format!("{jobs}/default/tfjobs/mnist/logs?sinceSeconds=0"),
            400,
            "sinceSeconds is 0",
            json!([]),
        ),
        (
            "GET",
            format!("{jobs}/default/tfjobs/mnist/logs?follow=maybe"),
            400,
            "Failed to deserialize",
            json!([]),
        ),
        (
            "GET",
            "/api/v1/machine".to_owned(),
            404,
            "no machine here",
            json!([]),
        ),
        (
            "GET",
            "/api/v1/watch/machine".to_owned(),
            404,
            "no machine here",
            json!([]),
        ),
    ];
    for (method, path, status, said, details) in cases {
        let (answered, media, body) = call(fake(false), method, &path, Some(TOKEN)).await;
        assert_eq!(
            (answered.as_u16(), media.as_str()),
            (status, "application/json"),
            "{path}: {body}"
        );
        let body = json(&body);
        let message = body["error"].as_str().expect("a message");
        assert!(message.contains(said), "{path}: {message}");
        assert_eq!(body["details"], details, "{path}");
    }
}

#[tokio::test]
async fn a_stream_sends_its_first_event_at_once_and_deleted_once_the_job_is_gone() {
    let (status, media, body) = call(
        fake(false),
        "GET",
        "/api/v1/watch/job-summaries",
        Some(TOKEN),
    )
    .await;
    assert_eq!(
        (status, media.as_str()),
        (StatusCode::OK, "text/event-stream")
    );
    let data = body
        .strip_prefix("event: jobs\ndata: ")
        .and_then(|rest| rest.strip_suffix("\n\n"))
        .unwrap_or_else(|| panic!("one event `jobs`: {body:?}"));
    assert_eq!(json(data), json!({ "items": [summary()] }));
    let watched = "/api/v1/watch/namespaces/default/tfjobs/mnist";
    for path in [watched.to_owned(), format!("{watched}/scalars")] {
        let (_, _, body) = call(fake(true), "GET", &path, Some(TOKEN)).await;
        assert_eq!(body, "event: deleted\ndata: {}\n\n", "{path}");
    }
    let (_, _, body) = call(fake(false), "GET", watched, Some(TOKEN)).await;
    assert!(body.starts_with("event: job\ndata: {"), "{body}");
}
