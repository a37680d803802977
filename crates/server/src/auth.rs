//! The bearer token every API route but `/healthz` (and the dashboard's files) needs:
//! [`require_token`], a middleware for axum's `from_fn_with_state`, shared by the server's API
//! and the cluster dashboard of `trainctl --kube dashboard`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// Lets through the requests whose `Authorization: Bearer <token>` (the scheme's name in any
/// case, as RFC 7235 has it) names `token`; answers 401 with the API's error envelope to the
/// others.
pub async fn require_token(
    State(token): State<Arc<str>>,
    request: Request,
    next: Next,
) -> Response {
    let given = bearer_token(request.headers()).unwrap_or("");
    if constant_time_eq(given.as_bytes(), token.as_bytes()) {
        next.run(request).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({
                "error": "missing or wrong bearer token (the CLI reads it from server.token in the state directory)",
                "details": [],
            })),
        )
            .into_response()
    }
}

/// The token of `Authorization: Bearer <token>`, the scheme's name in any case.
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim_matches(' '))
}

/// Compares without leaking where the first difference is.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |diff, (x, y)| diff | (x ^ y)) == 0
}
