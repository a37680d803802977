//! The router in process (`tower::ServiceExt::oneshot`), over a supervisor on a temporary state
//! directory: the token, the error envelope, submitting and listing jobs.

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::http::{Method, Request, StatusCode, header};
use serde_json::Value;
use tower::ServiceExt as _;
use trainctl_api::manifest::MAX_MANIFEST_BYTES;
use trainctl_dashboard::auth::LoginCodes;

use super::router;
use crate::testing::{job, runtime, serial, supervisor, suspended_job};

const TOKEN: &str = "the-token";

/// The router over a fresh supervisor of `dir`.
fn app(dir: &std::path::Path) -> (Router, Arc<crate::Supervisor>) {
    let supervisor = supervisor(dir, 0);
    let (_, changes) = tokio::sync::watch::channel(0);
    let app = router(
        Arc::clone(&supervisor),
        TOKEN,
        changes,
        Arc::new(LoginCodes::default()),
    );
    (app, supervisor)
}

fn request(method: Method, uri: &str, token: Option<&str>, body: impl Into<Body>) -> Request<Body> {
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    request.body(body.into()).expect("a request")
}

/// The status and JSON body of `request`'s answer.
async fn send(app: &Router, request: Request<Body>) -> (StatusCode, Value) {
    let response = app.clone().oneshot(request).await.expect("an answer");
    let status = response.status();
    let bytes = to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("a body");
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, body)
}

/// Runs `test` with the router over a fresh supervisor, then stops the supervisor.
fn with_app<F: Future<Output = ()>>(test: impl FnOnce(Router) -> F) {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("temp dir");
    runtime().block_on(async {
        let (app, supervisor) = app(dir.path());
        test(app).await;
        supervisor.shutdown().await;
    });
}

/// The envelope's message, checking that it has nothing else but `details`.
fn message(body: &Value) -> &str {
    let mut fields: Vec<&String> = body.as_object().expect("an object").keys().collect();
    fields.sort();
    assert_eq!(fields, ["details", "error"], "{body}");
    body["error"].as_str().expect("a message")
}

#[test]
fn requests_without_the_token_or_with_a_wrong_one_are_refused_with_401() {
    with_app(|app| async move {
        let wanted = "missing or wrong bearer token (the CLI reads it from server.token in the \
                      state directory)";
        for token in [None, Some("wrong"), Some("")] {
            let (status, body) = send(
                &app,
                request(Method::GET, "/api/v1/jobs", token, Body::empty()),
            )
            .await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{token:?}");
            assert_eq!(message(&body), wanted);
            assert_eq!(body["details"], serde_json::json!([]));
        }
        let (status, _) = send(
            &app,
            request(
                Method::POST,
                "/api/v1/jobs",
                Some("wrong"),
                job("default", "j", 0, "true"),
            ),
        )
        .await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "submitting needs the token too"
        );
    });
}

#[test]
fn the_token_is_taken_and_the_scheme_name_in_any_case() {
    with_app(|app| async move {
        let (status, body) = send(
            &app,
            request(Method::GET, "/api/v1/jobs", Some(TOKEN), Body::empty()),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, serde_json::json!({"items": []}));
        let lower = Request::get("/api/v1/jobs")
            .header(header::AUTHORIZATION, format!("bearer {TOKEN}"))
            .body(Body::empty())
            .expect("a request");
        assert_eq!(send(&app, lower).await.0, StatusCode::OK);
        let health = send(&app, request(Method::GET, "/healthz", None, Body::empty())).await;
        assert_eq!(health.0, StatusCode::OK, "/healthz needs no token");
    });
}

#[test]
fn an_invalid_manifest_is_refused_with_400_and_one_detail_per_problem() {
    with_app(|app| async move {
        let manifest = job("default", "bad", 0, "true").replace("replicas: 1", "replicas: -1");
        let (status, body) = send(
            &app,
            request(
                Method::POST,
                "/api/v1/jobs?source=bad.yaml",
                Some(TOKEN),
                manifest,
            ),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(message(&body), "the manifest is invalid");
        assert_eq!(
            body["details"],
            serde_json::json!([
                "bad.yaml:9:17: spec.tfReplicaSpecs[Worker].replicas: is -1: expected 0 or more"
            ]),
            "one detail, naming the source, line and column"
        );
        let (_, listed) = send(
            &app,
            request(Method::GET, "/api/v1/jobs", Some(TOKEN), Body::empty()),
        )
        .await;
        assert_eq!(
            listed["items"],
            serde_json::json!([]),
            "nothing was recorded"
        );
    });
}

#[test]
fn a_body_that_is_not_utf8_is_refused_with_400() {
    with_app(|app| async move {
        let (status, body) = send(
            &app,
            request(
                Method::POST,
                "/api/v1/jobs",
                Some(TOKEN),
                vec![0xff_u8, 0xfe, b'\n'],
            ),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(message(&body), "the manifest is invalid");
        assert!(
            !body["details"].as_array().expect("details").is_empty(),
            "{body}"
        );
    });
}

#[test]
fn a_valid_job_is_created_with_201_and_shown_by_its_path_and_the_list() {
    with_app(|app| async move {
        let (status, body) = send(
            &app,
            request(
                Method::POST,
                "/api/v1/jobs",
                Some(TOKEN),
                suspended_job("team-a", "ok"),
            ),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let jobs = body["jobs"].as_array().expect("jobs");
        assert_eq!(jobs.len(), 1, "{body}");
        assert_eq!(jobs[0]["namespace"], "team-a");
        assert_eq!(jobs[0]["name"], "ok");
        assert_eq!(jobs[0]["kind"], "TFJob");
        let uid = jobs[0]["uid"].as_str().expect("a uid").to_owned();
        let (status, one) = send(
            &app,
            request(
                Method::GET,
                "/api/v1/namespaces/team-a/tfjobs/ok",
                Some(TOKEN),
                Body::empty(),
            ),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{one}");
        assert_eq!(one["uid"], uid.as_str());
        let (status, listed) = send(
            &app,
            request(
                Method::GET,
                "/api/v1/jobs?namespace=team-a&kind=TFJob",
                Some(TOKEN),
                Body::empty(),
            ),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(listed["items"][0]["uid"], uid.as_str(), "{listed}");
        let (_, other) = send(
            &app,
            request(
                Method::GET,
                "/api/v1/jobs?namespace=team-b",
                Some(TOKEN),
                Body::empty(),
            ),
        )
        .await;
        assert_eq!(other["items"], serde_json::json!([]));
        let (status, again) = send(
            &app,
            request(
                Method::POST,
                "/api/v1/jobs",
                Some(TOKEN),
                suspended_job("team-a", "ok"),
            ),
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT, "{again}");
        assert_eq!(
            message(&again),
            "TFJob team-a/ok exists and has not finished; delete it first"
        );
    });
}

#[test]
fn a_namespace_query_that_is_not_a_dns_label_is_refused_with_400() {
    with_app(|app| async move {
        for (method, body) in [
            (Method::GET, String::new()),
            (Method::POST, job("default", "j", 0, "true")),
        ] {
            let (status, answer) = send(
                &app,
                request(
                    method.clone(),
                    "/api/v1/jobs?namespace=Not_A_Label",
                    Some(TOKEN),
                    body,
                ),
            )
            .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{method}");
            assert!(
                message(&answer).starts_with("the query parameter `namespace`: "),
                "{answer}"
            );
        }
        let (status, answer) = send(
            &app,
            request(
                Method::GET,
                "/api/v1/jobs?kind=NoSuchJob",
                Some(TOKEN),
                Body::empty(),
            ),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(message(&answer).contains("NoSuchJob"), "{answer}");
    });
}

#[test]
fn an_unknown_path_and_a_method_a_path_does_not_take_are_enveloped() {
    with_app(|app| async move {
        let (status, body) = send(
            &app,
            request(Method::GET, "/api/v1/nothing", Some(TOKEN), Body::empty()),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(
            message(&body),
            "no such path: GET /api/v1/nothing; the API's paths are in /openapi.json"
        );
        let (status, body) = send(
            &app,
            request(Method::PUT, "/api/v1/jobs", Some(TOKEN), Body::empty()),
        )
        .await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(
            message(&body),
            "PUT is not allowed on /api/v1/jobs; the API's methods are in /openapi.json"
        );
        let (status, body) = send(
            &app,
            request(
                Method::GET,
                "/api/v1/namespaces/default/tfjobs/absent",
                Some(TOKEN),
                Body::empty(),
            ),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(message(&body), "TFJob default/absent not found");
    });
}

#[test]
fn a_body_over_the_manifest_limit_is_refused_with_413() {
    with_app(|app| async move {
        let limit = format!("manifests are limited to 16 MiB ({MAX_MANIFEST_BYTES} bytes)");
        // Said by its length: refused before it is read.
        let declared = Request::post("/api/v1/jobs")
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .header(header::CONTENT_LENGTH, MAX_MANIFEST_BYTES + 1)
            .body(Body::empty())
            .expect("a request");
        let (status, body) = send(&app, declared).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(
            message(&body),
            format!("the manifest is {} bytes; {limit}", MAX_MANIFEST_BYTES + 1)
        );
        // Without a length: refused once it has passed the limit.
        let chunks = futures_util::stream::iter(
            std::iter::repeat_n(vec![b' '; 1024 * 1024], 17).map(Ok::<_, std::io::Error>),
        );
        let streamed = request(
            Method::POST,
            "/api/v1/jobs",
            Some(TOKEN),
            Body::from_stream(chunks),
        );
        let (status, body) = send(&app, streamed).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(
            message(&body),
            format!("the manifest is more than {MAX_MANIFEST_BYTES} bytes; {limit}")
        );
    });
}
