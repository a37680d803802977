//! The Kubernetes client the operator runs with: kube's default stack, plus a timeout on every
//! call.
//!
//! kube's `Config` sets no read timeout (it would cut exec and attach sessions), so a call that
//! the API server (or a half-open connection) never answers hangs for ever. For a controller
//! that is worse than an error: kube-runtime reconciles one job at a time, so the job whose
//! reconcile hangs is never reconciled again. Here every call fails after a timeout if its
//! response has not begun, and the controller retries the job like after any error. The
//! timeout runs until the response begins, not until it ends: a watch's response begins at
//! once and its stream then runs on (kube's watcher has its own idle timeout for streams).

use std::time::Duration;

use kube::client::ClientBuilder;
use kube::{Client, Config};
use tower::timeout::TimeoutLayer;

/// How long a call may wait for its response to begin: far longer than a healthy API server
/// takes (milliseconds; it gives up on its own requests after 60 s), short enough that a lost
/// call holds its job up for half a minute, not for ever.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A client for `config` whose every call fails after `timeout` without a response.
pub fn client(config: Config, timeout: Duration) -> Result<Client, kube::Error> {
    Ok(ClientBuilder::try_from(config)?
        .with_layer(&TimeoutLayer::new(timeout))
        .build())
}
