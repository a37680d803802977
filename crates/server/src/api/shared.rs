//! What the server's own handlers share: their state, and the check of a `namespace` query.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::Response;
use trainctl_api::manifest::check_namespace;
use trainctl_dashboard::auth::LoginCodes;

use super::errors::error;
use crate::supervisor::Supervisor;

/// What the server's own handlers share.
#[derive(Clone)]
pub(super) struct Api {
    pub(super) supervisor: Arc<Supervisor>,
    /// The dashboard's one-time login codes.
    pub(super) codes: Arc<LoginCodes>,
}

/// Checks the query parameter `namespace`, when given: 400 unless it is a DNS-1123 label.
pub(super) fn query_namespace(namespace: Option<&str>) -> Result<(), Box<Response>> {
    match namespace.map(check_namespace) {
        Some(Err(problem)) => Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            &format!("the query parameter `namespace`: {problem}"),
            &[],
        ))),
        _ => Ok(()),
    }
}
