//! The web dashboard of trainctl: its pages (Jobs, Job, Curves, Machine) and the one API they
//! read, served alike by `trainctl server` (from its state database) and by `trainctl --kube
//! dashboard` (from a cluster).
//!
//! [`app`] is the dashboard's whole router over a [`Source`] of data, which the server and the
//! cluster each implement: the API's routes behind the bearer token ([`auth`]), their event
//! streams, the login with a one-time code, and the pages. [`connections`] serves a router with
//! the bounds that keep slow or silent peers from holding the process.
//!
//! The pages are written in `web/src` as plain JavaScript modules with Preact, htm and uPlot,
//! embedded in the binary so that they work offline with nothing installed beside them.
//! Building them needs only cargo: nothing is compiled or bundled, the browser loads the
//! modules as they are.
//!
//! The three packages are vendored in `web/vendor` unmodified, as npm's registry publishes them,
//! each with its licence; `web/vendor/manifest.txt` names the tarball each file came from and
//! its sha256. `scripts/vendor-dashboard` fetches them again (after a version is changed there)
//! and, with `--check`, verifies them against the registry (CI runs it); `build.rs` refuses a
//! vendored file that differs from its manifest.
//!
//! [`router`] serves the files: `/` the page (`index.html`, written by `build.rs`),
//! `/assets/src/*` our modules and style sheets, `/assets/vendor/*` the packages' files, and
//! `/assets/licenses.txt` the packages' licences. The page names each file under its version
//! (`?v=` and the start of its sha256), its style sheets by `<link>`, its modules through an
//! import map that also maps each module's plain address to its versioned one: a module
//! imported by a relative path (`./html.js`) is therefore fetched under its current version too.
//! A file asked for under its current version may be cached for good; otherwise (the page, the
//! licences, a plain or stale address) it is `no-cache`, and every response has an `ETag`. The
//! Content-Security-Policy allows no script but ours and, by its hash, the inline import map.
//!
//! None of these files holds data: the page asks the API for everything, with the token it was
//! given in its address (`/#token=...`) or for its login code (`/#code=...`), so these routes
//! need no token.

pub mod auth;
pub mod connections;
mod routes;
mod source;
mod sse;

pub use routes::app;
pub use source::{Failure, JobPath, Source};

use axum::Router;
use axum::extract::{Path, RawQuery};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// A file of the dashboard.
#[derive(Debug)]
pub struct Asset {
    /// Where it is served (`/index.html` is served at `/`, the others at their path:
    /// `/assets/src/main.js`).
    pub path: &'static str,
    /// The first 16 hex digits of its sha256: the page names it as `PATH?v=VERSION`.
    pub version: &'static str,
    /// Its content.
    pub bytes: &'static [u8],
}

include!(concat!(env!("OUT_DIR"), "/assets.rs"));

/// What the page may load and do: its own scripts (and the inline import map, by its hash),
/// styles and the API, nothing else; no frame may hold it. uPlot sets inline styles.
const CONTENT_SECURITY_POLICY: &str = concat!(
    "default-src 'none'; script-src 'self' '",
    import_map_hash!(),
    "'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
);

/// How a file asked for under its current version may be cached: for good.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The file served at `path`, if any.
#[must_use]
pub fn asset(path: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|asset| asset.path == path)
}

/// The routes of the dashboard: `/` and `/assets/{*path}`.
pub fn router<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new()
        .route("/", get(page))
        .route("/assets/{*path}", get(file))
}

async fn page(headers: HeaderMap) -> Response {
    match asset("/index.html") {
        Some(index) => served(index, None, &headers),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn file(Path(path): Path<String>, RawQuery(query): RawQuery, headers: HeaderMap) -> Response {
    match asset(&format!("/assets/{path}")) {
        Some(found) => served(found, query.as_deref(), &headers),
        None => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("no dashboard file /assets/{path}\n"),
        )
            .into_response(),
    }
}

/// `asset`, asked for with `query` and `headers`: `304 Not Modified` when the browser's copy
/// (`If-None-Match`) is current.
fn served(asset: &'static Asset, query: Option<&str>, headers: &HeaderMap) -> Response {
    // Only the address naming the current version may be kept for good: a plain or stale one
    // is checked again each time.
    let current = query.and_then(|query| query.strip_prefix("v=")) == Some(asset.version);
    let cache = if current { IMMUTABLE } else { "no-cache" };
    let etag =
        HeaderValue::try_from(format!("\"{}\"", asset.version)).expect("a version is hex digits");
    let fresh = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|tag| {
            let tag = tag.trim();
            tag == "*" || tag.trim_start_matches("W/") == etag
        });
    let status = if fresh {
        StatusCode::NOT_MODIFIED
    } else {
        StatusCode::OK
    };
    let body = if fresh { &[][..] } else { asset.bytes };
    (
        status,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static(content_type(asset.path)),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static(cache)),
            (header::ETAG, etag),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CONTENT_SECURITY_POLICY),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            ),
        ],
        body,
    )
        .into_response()
}

/// The media type of a file, by its extension.
fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, extension)| extension) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        _ => "text/plain; charset=utf-8",
    }
}

#[cfg(test)]
mod tests;
