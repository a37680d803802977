//! A submitted manifest's body: at most [`MAX_MANIFEST_BYTES`], the limit of every manifest
//! (`trainctl validate`, `run` and `submit` refuse larger files before sending them), and sent
//! without stalling: [`BODY_IDLE_TIMEOUT`] without a byte, or [`BODY_READ_TIMEOUT`] in all, and
//! the request is refused.

use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use futures_util::StreamExt as _;
use tokio::time::Instant;
use trainctl_api::manifest::MAX_MANIFEST_BYTES;

use super::errors::error;

/// How long a request's body may go without a byte.
pub const BODY_IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a request's body may take in all.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(60);

/// The whole body, or the answer refusing it: 413 past the limit (at once when its length says
/// so), 408 when it stalls, 400 when it cannot be read.
pub(super) async fn read(headers: &HeaderMap, body: Body) -> Result<Vec<u8>, Response> {
    let too_large = |size: &str| {
        error(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!(
                "the manifest is {size}; manifests are limited to {} MiB ({MAX_MANIFEST_BYTES} \
                 bytes)",
                MAX_MANIFEST_BYTES / (1024 * 1024)
            ),
            &[],
        )
    };
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if let Some(length) = length
        && length > MAX_MANIFEST_BYTES as u64
    {
        return Err(too_large(&format!("{length} bytes")));
    }
    let deadline = Instant::now() + BODY_READ_TIMEOUT;
    let mut bytes = Vec::with_capacity(length.map_or(0, |length| length as usize));
    let mut stream = body.into_data_stream();
    loop {
        let wait = deadline.min(Instant::now() + BODY_IDLE_TIMEOUT);
        match tokio::time::timeout_at(wait, stream.next()).await {
            Err(_) => {
                return Err(error(
                    StatusCode::REQUEST_TIMEOUT,
                    &format!(
                        "the request's body stalled: {} bytes came, then nothing for {} s (or \
                         it took more than {} s in all)",
                        bytes.len(),
                        BODY_IDLE_TIMEOUT.as_secs(),
                        BODY_READ_TIMEOUT.as_secs()
                    ),
                    &[],
                ));
            }
            Ok(None) => return Ok(bytes),
            Ok(Some(Err(failure))) => {
                return Err(error(
                    StatusCode::BAD_REQUEST,
                    &format!("cannot read the request's body: {failure}"),
                    &[],
                ));
            }
            Ok(Some(Ok(chunk))) => {
                if bytes.len() + chunk.len() > MAX_MANIFEST_BYTES {
                    return Err(too_large(&format!("more than {MAX_MANIFEST_BYTES} bytes")));
                }
                bytes.extend_from_slice(&chunk);
            }
        }
    }
}
