//! The bearer token every API route but `/healthz` (and the dashboard's files) needs:
//! [`require_token`], a middleware for axum's `from_fn_with_state`, which guards the dashboard's
//! routes ([`crate::app`]) and the server's own; the tokens themselves ([`new_token`]); and the
//! dashboard's one-time login codes ([`LoginCodes`]), which stand for the token in the addresses
//! a browser is given.
//!
//! An address holding the token itself would leave it, for good, wherever the address goes: the
//! arguments of the browser `trainctl dashboard` starts (readable by every user of the machine in
//! `/proc`), the server's log, the browser's history. A login code goes there instead: it can be
//! exchanged once, for a few minutes, for the token (`POST /api/v1/dashboard/login`), which the
//! page then keeps to itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use trainctl_server_api::{ErrorBody, LoginRequest, LoginToken};

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
            Json(ErrorBody {
                error: "missing or wrong bearer token (the CLI reads it from server.token in the state directory)".to_owned(),
                details: Vec::new(),
            }),
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

/// A fresh random token (or login code): 64 hex digits.
#[must_use]
pub fn new_token() -> String {
    let a = uuid::Uuid::new_v4().simple().to_string();
    let b = uuid::Uuid::new_v4().simple().to_string();
    format!("{a}{b}")
}

/// How long a login code given at the server's start may be used.
pub const START_CODE_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// How long a login code asked for later (`trainctl dashboard`) may be used.
pub const CODE_LIFETIME: Duration = Duration::from_secs(5 * 60);

/// The login codes not used yet, each until it expires.
#[derive(Debug, Default)]
pub struct LoginCodes {
    live: Mutex<HashMap<String, Instant>>,
}

impl LoginCodes {
    /// A new code, usable once within `lifetime`.
    #[must_use]
    pub fn issue(&self, lifetime: Duration) -> String {
        let code = new_token();
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        live.retain(|_, expires| *expires > now);
        live.insert(code.clone(), now + lifetime);
        code
    }

    /// Whether `code` was issued and has neither been used nor expired; it is used up either way.
    #[must_use]
    pub fn redeem(&self, code: &str) -> bool {
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.remove(code)
            .is_some_and(|expires| expires > Instant::now())
    }
}

/// The route of `POST /api/v1/dashboard/login` (it needs no token): `{"code": "..."}` gives
/// `{"token": token}` when the code is one of `codes` not used nor expired, `401` otherwise.
pub fn login_router<S>(token: Arc<str>, codes: Arc<LoginCodes>) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new()
        .route("/api/v1/dashboard/login", post(login))
        .with_state(Login { token, codes })
}

/// What the login route holds.
#[derive(Clone)]
struct Login {
    token: Arc<str>,
    codes: Arc<LoginCodes>,
}

async fn login(State(login): State<Login>, body: axum::body::Bytes) -> Response {
    // Read here rather than by axum's `Json`, whose refusals (415, 422) are not the API's.
    let Ok(body) = serde_json::from_slice::<LoginRequest>(&body) else {
        return (
            StatusCode::BAD_REQUEST,
            Json(ErrorBody {
                error: r#"the body must be a JSON object {"code": "..."} with the login code"#
                    .to_owned(),
                details: Vec::new(),
            }),
        )
            .into_response();
    };
    if login.codes.redeem(&body.code) {
        Json(LoginToken {
            token: login.token.to_string(),
        })
        .into_response()
    } else {
        (
            StatusCode::UNAUTHORIZED,
            Json(ErrorBody {
                error: "this login code is unknown, used or expired: `trainctl dashboard` gives a new address".to_owned(),
                details: Vec::new(),
            }),
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_is_good_once_and_only_before_it_expires() {
        let codes = LoginCodes::default();
        let code = codes.issue(Duration::from_secs(60));
        assert_eq!(code.len(), 64);
        assert!(!codes.redeem("not-a-code"));
        assert!(codes.redeem(&code));
        assert!(!codes.redeem(&code), "a second use");
        let expired = codes.issue(Duration::ZERO);
        assert!(!codes.redeem(&expired));
    }
}
