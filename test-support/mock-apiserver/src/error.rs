//! The failures the server answers with, as Kubernetes `Status` objects.

use axum::http::StatusCode;
use serde_json::{Value, json};

/// A request the server refuses, with the HTTP status and `Status.reason` Kubernetes uses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// The path names no resource this server stores.
    #[error("the server could not find the requested resource")]
    NoResource,
    /// The object does not exist.
    #[error("{plural} \"{name}\" not found")]
    NotFound {
        /// The resource's plural (`pods`).
        plural: &'static str,
        /// The object's name.
        name: String,
    },
    /// A creation named an object that exists.
    #[error("{plural} \"{name}\" already exists")]
    AlreadyExists {
        /// The resource's plural (`pods`).
        plural: &'static str,
        /// The object's name.
        name: String,
    },
    /// A replace carried a `resourceVersion` that is not the stored one.
    #[error(
        "Operation cannot be fulfilled on {plural} \"{name}\": the object has been modified; please apply your changes to the latest version and try again"
    )]
    Conflict {
        /// The resource's plural (`pods`).
        plural: &'static str,
        /// The object's name.
        name: String,
    },
    /// The request is malformed (body, parameters, selectors).
    #[error("{0}")]
    BadRequest(String),
    /// A patch of a content type this server does not implement.
    #[error(
        "the body of the request was in an unknown format - accepted media types include: application/apply-patch+yaml, application/merge-patch+json (got {0})"
    )]
    UnsupportedMediaType(String),
    /// A method this server does not implement on that path.
    #[error("the server does not allow this method on the requested resource")]
    MethodNotAllowed,
    /// A watch asked to resume from a `resourceVersion` the server no longer remembers.
    #[error("too old resource version: {requested} ({oldest})")]
    Expired {
        /// The version asked for.
        requested: u64,
        /// The oldest version the server can resume from.
        oldest: u64,
    },
    /// A failure injected by the test or benchmark.
    #[error("injected failure: {0}")]
    Injected(StatusCode),
}

impl ApiError {
    /// The HTTP status.
    #[must_use]
    pub fn code(&self) -> StatusCode {
        match self {
            ApiError::NoResource | ApiError::NotFound { .. } => StatusCode::NOT_FOUND,
            ApiError::AlreadyExists { .. } | ApiError::Conflict { .. } => StatusCode::CONFLICT,
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Expired { .. } => StatusCode::GONE,
            ApiError::Injected(code) => *code,
        }
    }

    /// `Status.reason`, as client libraries match it (`is_not_found`, `is_conflict`).
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            ApiError::NoResource | ApiError::NotFound { .. } => "NotFound",
            ApiError::AlreadyExists { .. } => "AlreadyExists",
            ApiError::Conflict { .. } => "Conflict",
            ApiError::BadRequest(_) => "BadRequest",
            ApiError::UnsupportedMediaType(_) => "UnsupportedMediaType",
            ApiError::MethodNotAllowed => "MethodNotAllowed",
            ApiError::Expired { .. } => "Expired",
            ApiError::Injected(code) => match code.as_u16() {
                409 => "Conflict",
                429 => "TooManyRequests",
                500 => "InternalError",
                503 => "ServiceUnavailable",
                504 => "Timeout",
                _ => "Unknown",
            },
        }
    }

    /// The `Status` object of this failure.
    #[must_use]
    pub fn status(&self) -> Value {
        let mut status = json!({
            "apiVersion": "v1",
            "kind": "Status",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": self.reason(),
            "code": self.code().as_u16(),
        });
        if let ApiError::NotFound { plural, name }
        | ApiError::AlreadyExists { plural, name }
        | ApiError::Conflict { plural, name } = self
        {
            status["details"] = json!({"name": name, "kind": plural});
        }
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_is_a_kubernetes_status() {
        let error = ApiError::NotFound {
            plural: "pods",
            name: "mnist-worker-0".to_owned(),
        };
        assert_eq!(
            error.status(),
            json!({
                "apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
                "message": "pods \"mnist-worker-0\" not found", "reason": "NotFound", "code": 404,
                "details": {"name": "mnist-worker-0", "kind": "pods"},
            })
        );
    }

    #[test]
    fn injected_failures_carry_the_reason_of_their_code() {
        assert_eq!(
            ApiError::Injected(StatusCode::CONFLICT).reason(),
            "Conflict"
        );
        assert_eq!(
            ApiError::Injected(StatusCode::INTERNAL_SERVER_ERROR).reason(),
            "InternalError"
        );
        assert_eq!(
            ApiError::Injected(StatusCode::IM_A_TEAPOT).reason(),
            "Unknown"
        );
    }
}
