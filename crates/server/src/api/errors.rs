//! Errors as the API answers them: every error, the API's own and the HTTP layer's (an unknown
//! path, a method a path does not take, a query or a path that cannot be read), is the JSON
//! envelope `{"error": "...", "details": [...]}` with its status.

use axum::Json;
use axum::body::to_bytes;
use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use trainctl_dashboard::Failure;
use trainctl_server_api::ErrorBody;

use crate::supervisor::SupervisorError;

/// The most of an error's plain-text body kept as its message.
const MAX_PLAIN_ERROR: usize = 64 * 1024;

/// The envelope: `{"error": message, "details": details}` with `status`.
pub(super) fn error(status: StatusCode, message: &str, details: &[String]) -> Response {
    (
        status,
        Json(ErrorBody {
            error: message.to_owned(),
            details: details.to_vec(),
        }),
    )
        .into_response()
}

/// The answer to a request the supervisor refused or failed.
pub(super) fn failed(failure: &SupervisorError) -> Response {
    refused(failure).into_response()
}

/// What the supervisor refused or failed, as the dashboard's routes answer it: a job not found
/// is [`Failure::gone`] (its event streams end with `deleted`).
pub(super) fn refused(failure: &SupervisorError) -> Failure {
    let message = failure.to_string();
    match failure {
        SupervisorError::Invalid(details) => {
            Failure::new(StatusCode::BAD_REQUEST, message).with_details(details.clone())
        }
        SupervisorError::BadRequest(_) => Failure::new(StatusCode::BAD_REQUEST, message),
        SupervisorError::NotFound(_) => Failure::gone(message),
        SupervisorError::Conflict(_) => Failure::new(StatusCode::CONFLICT, message),
        SupervisorError::Store(_) | SupervisorError::Reaper(_) | SupervisorError::Keep(_) => {
            Failure::new(StatusCode::INTERNAL_SERVER_ERROR, message)
        }
    }
}

/// A path the API does not have.
pub(super) async fn unknown_path(method: Method, request: Request) -> Response {
    error(
        StatusCode::NOT_FOUND,
        &format!(
            "no such path: {method} {}; the API's paths are in /openapi.json",
            request.uri().path()
        ),
        &[],
    )
}

/// Puts every error answered without the envelope (the HTTP layer's: a method a path does not
/// take, a query or a path segment that cannot be read) in it, its text as the message.
pub(super) async fn envelope(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = next.run(request).await;
    let status = response.status();
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = to_bytes(body, MAX_PLAIN_ERROR).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let message = if status == StatusCode::METHOD_NOT_ALLOWED {
        format!("{method} is not allowed on {path}; the API's methods are in /openapi.json")
    } else if text.trim().is_empty() {
        status.canonical_reason().unwrap_or("error").to_owned()
    } else {
        text.trim().to_owned()
    };
    let enveloped = error(status, &message, &[]);
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    let (_, body) = enveloped.into_parts();
    Response::from_parts(parts, body)
}
