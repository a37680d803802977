//! The web dashboard of trainctl: its pages (Jobs, Job, Curves, Machine), written in `web/src`
//! with Preact, htm and uPlot, bundled by esbuild when this crate is built (`build.rs`) and
//! embedded in the binary, so that it works offline with nothing installed beside it.
//!
//! [`router`] serves them: `/` the page, `/assets/*` its script and style under content-hashed
//! names. None of them holds data: the page asks the API for everything, with the token it was
//! given in its address (`/#token=...`), so these routes need no token.

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// A file of the built dashboard.
#[derive(Debug)]
pub struct Asset {
    /// Where it is served (`/index.html`, `/assets/main-HASH.js`).
    pub path: &'static str,
    /// Its content.
    pub bytes: &'static [u8],
}

include!(concat!(env!("OUT_DIR"), "/assets.rs"));

/// What the page may load and do: its own scripts and styles and the API, nothing else; no
/// frame may hold it.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The licences of the bundled packages: the one asset whose name has no hash.
const LICENSES: &str = "/assets/licenses.txt";

/// The built file served at `path`, if any.
#[must_use]
pub fn asset(path: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|asset| asset.path == path)
}

/// The routes of the dashboard: `/` and `/assets/{file}`.
pub fn router<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new()
        .route("/", get(page))
        .route("/assets/{file}", get(file))
}

async fn page() -> Response {
    match asset("/index.html") {
        Some(index) => served(index, "no-cache"),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn file(Path(file): Path<String>) -> Response {
    match asset(&format!("/assets/{file}")) {
        Some(found) if found.path == LICENSES => served(found, "no-cache"),
        // The other names change with their content: a browser may keep them for good.
        Some(found) => served(found, "public, max-age=31536000, immutable"),
        None => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("no dashboard file /assets/{file}\n"),
        )
            .into_response(),
    }
}

fn served(asset: &'static Asset, cache: &'static str) -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static(content_type(asset.path)),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static(cache)),
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
        asset.bytes,
    )
        .into_response()
}

/// The media type of a built file, by its extension.
fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, extension)| extension) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        _ => "text/plain; charset=utf-8",
    }
}

#[cfg(test)]
mod tests {
    use axum::body::{Body, to_bytes};
    use axum::http::Request;
    use tower::ServiceExt;

    use super::*;

    async fn fetch(path: &str) -> (StatusCode, Vec<(String, String)>, String) {
        let response = router::<()>()
            .oneshot(Request::get(path).body(Body::empty()).expect("request"))
            .await
            .expect("response");
        let status = response.status();
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_str().unwrap_or("").to_owned()))
            .collect();
        let body = to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        (status, headers, String::from_utf8_lossy(&body).into_owned())
    }

    fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
        headers
            .iter()
            .find(|(key, _)| key == name)
            .map_or("", |(_, value)| value)
    }

    #[tokio::test]
    async fn the_page_names_its_hashed_script_and_style_which_are_served() {
        let (status, headers, page) = fetch("/").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(header(&headers, "content-type"), "text/html; charset=utf-8");
        assert_eq!(header(&headers, "cache-control"), "no-cache");
        assert!(header(&headers, "content-security-policy").contains("frame-ancestors 'none'"));
        for (extension, media) in [(".js", "text/javascript"), (".css", "text/css")] {
            let start = page
                .find("/assets/main-")
                .expect("an asset named in the page");
            let rest = &page[start..];
            let path = rest
                .split('"')
                .find(|piece| piece.ends_with(extension))
                .or_else(|| {
                    page.split('"')
                        .find(|piece| piece.starts_with("/assets/") && piece.ends_with(extension))
                })
                .expect("the asset of this kind");
            let (status, headers, body) = fetch(path).await;
            assert_eq!(status, StatusCode::OK, "{path}");
            assert!(
                header(&headers, "content-type").starts_with(media),
                "{path}"
            );
            assert!(
                header(&headers, "cache-control").contains("immutable"),
                "{path}"
            );
            assert!(body.len() > 1_000, "{path} is {} bytes", body.len());
        }
    }

    #[tokio::test]
    async fn an_unknown_file_is_404_and_no_path_escapes_the_assets() {
        for path in [
            "/assets/nothing.js",
            "/assets/..%2Fbuild.rs",
            "/assets/%2e%2e",
        ] {
            let (status, _, _) = fetch(path).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        }
    }

    #[test]
    fn the_third_party_licences_are_embedded() {
        let legal = ASSETS
            .iter()
            .find(|asset| asset.path == LICENSES)
            .expect("the bundled packages' licences");
        let text = String::from_utf8_lossy(legal.bytes);
        for package in ["preact", "htm", "uplot"] {
            assert!(text.contains(&format!("{package} ")), "{package} in {text}");
        }
    }
}
