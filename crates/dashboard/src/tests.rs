use std::fmt::Write as _;

use axum::body::{Body, to_bytes};
use axum::http::Request;
use base64::Engine as _;
use sha2::{Digest as _, Sha256};
use tower::ServiceExt;

use super::*;

/// The manifest of the vendored packages, as committed.
const MANIFEST: &str = include_str!("../web/vendor/manifest.txt");

struct Fetched {
    status: StatusCode,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Fetched {
    fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map_or("", |(_, value)| value)
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

async fn fetch_with(path: &str, if_none_match: Option<&str>) -> Fetched {
    let mut request = Request::get(path);
    if let Some(tag) = if_none_match {
        request = request.header(header::IF_NONE_MATCH, tag);
    }
    let response = router::<()>()
        .oneshot(request.body(Body::empty()).expect("request"))
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
        .expect("body")
        .to_vec();
    Fetched {
        status,
        headers,
        body,
    }
}

async fn fetch(path: &str) -> Fetched {
    fetch_with(path, None).await
}

/// The text of the page's import map.
fn import_map(page: &str) -> &str {
    let start = page
        .find("<script type=\"importmap\">")
        .expect("an import map")
        + "<script type=\"importmap\">".len();
    let length = page[start..].find("</script>").expect("its end");
    &page[start..start + length]
}

/// The import map's entries, `(name, address)`: the page writes one a line.
fn imports(page: &str) -> Vec<(String, String)> {
    import_map(page)
        .lines()
        .filter_map(|line| {
            let mut quoted = line.split('"').skip(1).step_by(2);
            let name = quoted.next()?;
            let address = quoted.next()?;
            Some((name.to_owned(), address.to_owned()))
        })
        .collect()
}

/// Every address of the page's `href` and `src` attributes that is ours.
fn linked(page: &str) -> Vec<String> {
    page.split(" href=\"")
        .skip(1)
        .chain(page.split(" src=\"").skip(1))
        .filter_map(|rest| rest.split('"').next())
        .filter(|address| address.starts_with("/assets/"))
        .map(str::to_owned)
        .collect()
}

/// The file an address names under its version, and the version.
fn versioned(address: &str) -> (&'static Asset, &str) {
    let (path, version) = address
        .split_once("?v=")
        .unwrap_or_else(|| panic!("{address} names no version"));
    let found = asset(path).unwrap_or_else(|| panic!("{address}: no such file"));
    (found, version)
}

#[tokio::test]
async fn the_page_is_revalidated_and_its_policy_allows_its_import_map_and_no_other_inline_script() {
    let index = fetch("/").await;
    assert_eq!(index.status, StatusCode::OK);
    assert_eq!(index.header("content-type"), "text/html; charset=utf-8");
    assert_eq!(index.header("cache-control"), "no-cache");
    let page = index.text();
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(import_map(&page)));
    let policy = index.header("content-security-policy");
    assert!(
        policy.contains(&format!("script-src 'self' 'sha256-{hash}';")),
        "{policy}"
    );
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    // The import map and the entry module (by address): no other script.
    assert_eq!(page.matches("<script").count(), 2, "{page}");
    assert!(page.contains("<script type=\"module\" src=\"/assets/src/main.js?v="));
}

#[tokio::test]
async fn every_address_the_page_names_is_served_for_good_with_its_type() {
    let page = fetch("/").await.text();
    let mut addresses = linked(&page);
    addresses.extend(imports(&page).into_iter().map(|(_, address)| address));
    assert!(addresses.len() > 20, "{addresses:?}");
    for address in addresses {
        let (file, version) = versioned(&address);
        assert_eq!(version, file.version, "{address}");
        let served = fetch(&address).await;
        assert_eq!(served.status, StatusCode::OK, "{address}");
        let media = if address.contains(".css?") {
            "text/css; charset=utf-8"
        } else {
            "text/javascript; charset=utf-8"
        };
        assert_eq!(served.header("content-type"), media, "{address}");
        assert_eq!(served.header("cache-control"), IMMUTABLE, "{address}");
        assert_eq!(served.header("etag"), format!("\"{version}\""), "{address}");
        assert_eq!(served.header("x-content-type-options"), "nosniff");
        assert_eq!(served.body, file.bytes, "{address}");
    }
}

#[tokio::test]
async fn the_import_map_names_the_packages_and_every_module_under_its_current_version() {
    let page = fetch("/").await.text();
    let imports = imports(&page);
    let names: Vec<&str> = imports.iter().map(|(name, _)| name.as_str()).collect();
    for bare in ["preact", "preact/hooks", "htm", "uplot"] {
        assert!(names.contains(&bare), "{bare} in {names:?}");
    }
    let modules: Vec<&str> = ASSETS
        .iter()
        .map(|asset| asset.path)
        .filter(|path| {
            path.starts_with("/assets/src/") && content_type(path).contains("javascript")
        })
        .collect();
    assert!(modules.contains(&"/assets/src/components/chart.js"));
    for module in &modules {
        assert!(names.contains(module), "{module} in {names:?}");
    }
    for (name, address) in &imports {
        let (file, _) = versioned(address);
        if name.starts_with('/') {
            assert_eq!(file.path, name, "a module's address maps to its own file");
        } else {
            assert!(
                file.path.starts_with("/assets/vendor/"),
                "{name}: {address}"
            );
        }
    }
    // The packages' style sheets come first, so that the page's own rules win.
    let styles: Vec<String> = linked(&page)
        .into_iter()
        .filter(|address| address.contains(".css?"))
        .collect();
    assert!(styles[0].starts_with("/assets/vendor/uplot-"), "{styles:?}");
    assert!(
        styles[1].starts_with("/assets/src/styles/base.css?"),
        "{styles:?}"
    );
    assert_eq!(styles.len(), 5, "{styles:?}");
}

#[tokio::test]
async fn the_page_preloads_what_it_imports_at_once_and_neither_the_curves_tab_nor_uplot() {
    let page = fetch("/").await.text();
    let preloaded: Vec<&str> = page
        .split("<link rel=\"modulepreload\" href=\"")
        .skip(1)
        .filter_map(|rest| rest.split("?v=").next())
        .collect();
    for module in [
        "/assets/src/main.js",
        "/assets/src/app.js",
        "/assets/src/pages/jobs.js",
        "/assets/src/pages/job.js",
        "/assets/src/html.js",
    ] {
        assert!(preloaded.contains(&module), "{module} in {preloaded:?}");
    }
    let vendored: Vec<&str> = preloaded
        .iter()
        .filter_map(|address| address.strip_prefix("/assets/vendor/"))
        .collect();
    assert!(
        vendored
            .iter()
            .any(|file| file.ends_with("/preact.module.js"))
            && vendored
                .iter()
                .any(|file| file.ends_with("/hooks.module.js"))
            && vendored.iter().any(|file| file.ends_with("/htm.module.js")),
        "{vendored:?}"
    );
    for later in [
        "/assets/src/pages/curves.js",
        "/assets/src/components/chart.js",
    ] {
        assert!(!preloaded.contains(&later), "{later} in {preloaded:?}");
    }
    assert!(
        !vendored.iter().any(|file| file.starts_with("uplot-")),
        "{vendored:?}"
    );
}

#[tokio::test]
async fn a_plain_or_stale_address_is_revalidated_and_a_current_etag_gets_304() {
    let main = asset("/assets/src/main.js").expect("the entry module");
    let etag = format!("\"{}\"", main.version);
    for address in [
        "/assets/src/main.js",
        "/assets/src/main.js?v=0123456789abcdef",
    ] {
        let served = fetch(address).await;
        assert_eq!(served.status, StatusCode::OK, "{address}");
        assert_eq!(served.header("cache-control"), "no-cache", "{address}");
        assert_eq!(served.header("etag"), etag, "{address}");
        assert_eq!(served.body, main.bytes, "{address}");
    }
    for tag in [etag.as_str(), &format!("\"other\", W/{etag}"), "*"] {
        let revalidated = fetch_with("/assets/src/main.js", Some(tag)).await;
        assert_eq!(revalidated.status, StatusCode::NOT_MODIFIED, "{tag}");
        assert!(revalidated.body.is_empty());
        assert_eq!(revalidated.header("etag"), etag);
    }
    let stale = fetch_with("/assets/src/main.js", Some("\"0123456789abcdef\"")).await;
    assert_eq!(stale.status, StatusCode::OK);
    assert_eq!(stale.body, main.bytes);

    let index = fetch("/").await;
    let again = fetch_with("/", Some(index.header("etag"))).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
}

#[tokio::test]
async fn an_unknown_file_is_404_and_no_path_escapes_the_assets() {
    for path in [
        "/assets/nothing.js",
        "/assets/..%2Fbuild.rs",
        "/assets/%2e%2e",
        "/assets/src/../../build.rs",
        "/assets/vendor/manifest.txt",
        "/assets/index.html",
        "/index.html",
    ] {
        let served = fetch(path).await;
        assert_eq!(served.status, StatusCode::NOT_FOUND, "{path}");
    }
}

#[tokio::test]
async fn the_licences_name_every_vendored_package_and_version() {
    let licenses = fetch("/assets/licenses.txt").await;
    assert_eq!(licenses.status, StatusCode::OK);
    assert_eq!(licenses.header("content-type"), "text/plain; charset=utf-8");
    assert_eq!(licenses.header("cache-control"), "no-cache");
    let text = licenses.text();
    let packages: Vec<Vec<&str>> = MANIFEST
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|fields| fields.first() == Some(&"package"))
        .collect();
    assert_eq!(packages.len(), 3, "{MANIFEST}");
    for fields in packages {
        let heading = format!("{} {}\n", fields[1], fields[2]);
        assert!(text.contains(&heading), "{heading} in {text}");
    }
    assert!(text.contains("Permission is hereby granted"), "{text}");
}

#[test]
fn every_vendored_file_is_embedded_as_its_manifest_records() {
    let mut files = 0;
    for line in MANIFEST.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.first() != Some(&"file") {
            continue;
        }
        let path = format!("/assets/vendor/{}", fields[1]);
        let embedded = asset(&path).unwrap_or_else(|| panic!("{path} is not embedded"));
        let sha256 = Sha256::digest(embedded.bytes)
            .iter()
            .fold(String::new(), |mut hex, byte| {
                let _ = write!(hex, "{byte:02x}");
                hex
            });
        assert_eq!(sha256, fields[2], "{path}");
        assert_eq!(embedded.version, &sha256[..16], "{path}");
        files += 1;
    }
    let vendored = ASSETS
        .iter()
        .filter(|asset| asset.path.starts_with("/assets/vendor/"))
        .count();
    assert_eq!(
        files, vendored,
        "every embedded vendored file is in the manifest"
    );
}
