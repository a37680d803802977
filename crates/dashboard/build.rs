//! Embeds the dashboard's web files and writes `OUT_DIR/assets.rs`, which names each of them
//! (`include_bytes!`) with the version it is served under. Nothing is compiled or bundled: the
//! browser loads the modules of `web/src` and `web/vendor` as they are.
//!
//! - Every file of `web/src` is served at `/assets/src/PATH`, every vendored one at
//!   `/assets/vendor/PATH`, each under its version: the first 16 hex digits of its sha256.
//! - `web/vendor/manifest.txt` (written by `scripts/vendor-dashboard`) lists each vendored npm
//!   package and file with its sha256: a vendored file that differs from it, or one it does not
//!   list, fails the build, as vendored files are kept exactly as npm publishes them.
//! - `index.html` is written here: the style sheets (the vendored ones, then those of `web/src`
//!   by path), then an import map that resolves the packages' bare names (`preact`) and every
//!   module's address to its versioned address (`?v=VERSION`), so that a module imported by a
//!   relative path is fetched fresh after it changed while each address can be cached for good.
//!   The policy's hash of the import map (an inline script) is `import_map_hash!()`.
//! - `licenses.txt` holds the vendored packages' LICENSE files.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use sha2::{Digest as _, Sha256};

/// A file to serve: where, from which file, and its version.
struct Served {
    path: String,
    source: PathBuf,
    version: String,
}

/// A vendored file as the manifest lists it.
struct Vendored {
    /// Under `web/vendor`.
    path: String,
    sha256: String,
    /// The bare name the page imports it by, for a module.
    import: Option<String>,
}

/// A vendored npm package as the manifest lists it.
struct Package {
    name: String,
    version: String,
    files: Vec<Vendored>,
}

fn main() {
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let web = manifest_dir.join("web");
    // A folder is watched whole, files added and removed included.
    println!("cargo:rerun-if-changed=web/src");
    println!("cargo:rerun-if-changed=web/vendor");

    let packages = read_manifest(&web.join("vendor/manifest.txt"));
    let vendor = check_vendored(&web.join("vendor"), &packages);
    let mut assets = served_under(&web.join("src"), "/assets/src", &files_of(&web.join("src")));
    assets.extend(served_under(&web.join("vendor"), "/assets/vendor", &vendor));

    let licenses = out.join("licenses.txt");
    fs::write(&licenses, licenses_text(&web.join("vendor"), &packages)).expect("write licenses");
    assets.push(serve("/assets/licenses.txt".to_owned(), licenses));

    let (index, import_map) = index_html(&assets, &packages);
    let index_file = out.join("index.html");
    fs::write(&index_file, index).expect("write index.html");
    assets.push(serve("/index.html".to_owned(), index_file));
    assets.sort_by(|a, b| a.path.cmp(&b.path));

    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(&import_map));
    fs::write(out.join("assets.rs"), assets_rs(&assets, &hash)).expect("write assets.rs");
}

/// Reads `web/vendor/manifest.txt`: `package NAME VERSION TARBALL INTEGRITY` lines, each
/// followed by its `file PATH SHA256 [IMPORT-NAME]` lines; `#` starts a comment line.
fn read_manifest(path: &Path) -> Vec<Package> {
    let text =
        fs::read_to_string(path).unwrap_or_else(|error| panic!("read {}: {error}", path.display()));
    let mut packages: Vec<Package> = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let wrong = || {
            panic!(
                "{}:{}: not a manifest line: {line}",
                path.display(),
                number + 1
            )
        };
        match fields.as_slice() {
            [] => {}
            [comment, ..] if comment.starts_with('#') => {}
            ["package", name, version, _tarball, _integrity] => packages.push(Package {
                name: (*name).to_owned(),
                version: (*version).to_owned(),
                files: Vec::new(),
            }),
            ["file", file, sha256, import @ ..] if import.len() <= 1 => {
                let Some(package) = packages.last_mut() else {
                    wrong()
                };
                if !file.starts_with(&format!("{}-{}/", package.name, package.version)) {
                    wrong();
                }
                package.files.push(Vendored {
                    path: (*file).to_owned(),
                    sha256: (*sha256).to_owned(),
                    import: import.first().map(|name| (*name).to_owned()),
                });
            }
            _ => wrong(),
        }
    }
    packages
}

/// The files of `web/vendor` but its manifest, after checking that they are exactly those the
/// manifest lists, each with its sha256.
fn check_vendored(vendor: &Path, packages: &[Package]) -> Vec<String> {
    let present: Vec<String> = files_of(vendor)
        .into_iter()
        .filter(|path| path != "manifest.txt")
        .collect();
    let mut listed: Vec<String> = packages
        .iter()
        .flat_map(|package| package.files.iter().map(|file| file.path.clone()))
        .collect();
    listed.sort();
    assert!(
        present == listed,
        "web/vendor holds {present:?} but its manifest lists {listed:?}: vendored packages are \
         changed only by scripts/vendor-dashboard"
    );
    for file in packages.iter().flat_map(|package| &package.files) {
        let actual = sha256_hex(&fs::read(vendor.join(&file.path)).expect("read a vendored file"));
        assert!(
            actual == file.sha256,
            "web/vendor/{} has sha256 {actual}, its manifest {}: vendored files are kept as npm \
             publishes them (scripts/vendor-dashboard fetches them again)",
            file.path,
            file.sha256
        );
    }
    present
}

/// Every file under `dir`, by its path relative to it (`/`-separated), sorted.
fn files_of(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, files: &mut Vec<String>) {
        let entries =
            fs::read_dir(dir).unwrap_or_else(|error| panic!("read {}: {error}", dir.display()));
        for entry in entries {
            let path = entry.expect("read a web folder").path();
            if path.is_dir() {
                walk(root, &path, files);
            } else {
                let relative = path.strip_prefix(root).expect("under its root");
                let parts: Vec<_> = relative.iter().map(|part| part.to_string_lossy()).collect();
                files.push(parts.join("/"));
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    files.sort();
    files
}

/// `files` of `root`, served under `prefix`.
fn served_under(root: &Path, prefix: &str, files: &[String]) -> Vec<Served> {
    files
        .iter()
        .map(|file| serve(format!("{prefix}/{file}"), root.join(file)))
        .collect()
}

fn serve(path: String, source: PathBuf) -> Served {
    // Paths go into HTML, JSON and Rust strings unescaped: keep them to plain characters.
    assert!(
        path.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c)),
        "{path}: a dashboard file's name may hold only letters, digits, '/', '.', '_' and '-'"
    );
    let bytes =
        fs::read(&source).unwrap_or_else(|error| panic!("read {}: {error}", source.display()));
    let version = sha256_hex(&bytes)[..16].to_owned();
    Served {
        path,
        source,
        version,
    }
}

/// The extension of `path`, as the server reads it to name a file's type (case counts).
fn extension(path: &str) -> Option<&str> {
    path.rsplit_once('.').map(|(_, extension)| extension)
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .fold(String::new(), |mut hex, byte| {
            let _ = write!(hex, "{byte:02x}");
            hex
        })
}

/// Each package's LICENSE file under a line naming it and its version.
fn licenses_text(vendor: &Path, packages: &[Package]) -> String {
    let texts: Vec<String> = packages
        .iter()
        .map(|package| {
            let license = package
                .files
                .iter()
                .find(|file| file.path.ends_with("/LICENSE"))
                .unwrap_or_else(|| panic!("{}: no LICENSE file vendored", package.name));
            let text = fs::read_to_string(vendor.join(&license.path)).expect("read a licence");
            let heading = format!("{} {}", package.name, package.version);
            format!(
                "{heading}\n{}\n\n{}\n",
                "=".repeat(heading.len()),
                text.trim()
            )
        })
        .collect();
    texts.join("\n\n")
}

/// The import-map names of the modules `entry` imports statically (`import ... from "X"`),
/// and those they import, `entry` included; a dynamic `import("X")` is not followed.
fn static_graph(
    assets: &[Served],
    imports: &[(String, String)],
    entry: &str,
) -> std::collections::BTreeSet<String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut next = vec![entry.to_owned()];
    while let Some(name) = next.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        // A module's file, found through the import map: its own path for ours, the vendored
        // file for a package's bare name (`preact/hooks`, which imports `preact`).
        let asset = imports
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, address)| {
                address
                    .split_once("?v=")
                    .map_or(address.as_str(), |(path, _)| path)
            })
            .and_then(|path| assets.iter().find(|asset| asset.path == path))
            .unwrap_or_else(|| panic!("{name} is in the import map but not served"));
        let text = fs::read_to_string(&asset.source)
            .unwrap_or_else(|error| panic!("read {}: {error}", asset.source.display()));
        for specifier in static_imports(&text) {
            let resolved = if specifier.starts_with('.') {
                let base = name.rsplit_once('/').map_or("", |(dir, _)| dir);
                normalize(&format!("{base}/{specifier}"))
            } else {
                specifier.to_owned()
            };
            if imports.iter().any(|(known, _)| *known == resolved) {
                next.push(resolved);
            }
        }
    }
    seen
}

/// The specifiers of a module's static imports: `from "X"` and `import "X"`, with or without the
/// space (minified packages leave it out), not `import("X")`.
fn static_imports(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    for keyword in ["from \"", "from\"", "import \"", "import\""] {
        let mut rest = text;
        while let Some(at) = rest.find(keyword) {
            rest = &rest[at + keyword.len()..];
            if let Some(end) = rest.find('"') {
                found.push(&rest[..end]);
            }
        }
    }
    found
}

/// `path` with its `.` and `..` segments resolved.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    parts.join("/")
}

/// The page, and the text of its import map.
fn index_html(assets: &[Served], packages: &[Package]) -> (String, String) {
    let versioned = |path: &str| {
        let asset = assets
            .iter()
            .find(|asset| asset.path == path)
            .unwrap_or_else(|| panic!("{path} is not a dashboard file"));
        format!("{path}?v={}", asset.version)
    };
    let vendored = packages.iter().flat_map(|package| &package.files);
    let mut imports: Vec<(String, String)> = vendored
        .clone()
        .filter_map(|file| {
            let name = file.import.clone()?;
            Some((name, versioned(&format!("/assets/vendor/{}", file.path))))
        })
        .collect();
    let modules = assets.iter().filter(|asset| {
        asset.path.starts_with("/assets/src/") && extension(&asset.path) == Some("js")
    });
    imports.extend(modules.map(|module| (module.path.clone(), versioned(&module.path))));
    let entries: Vec<String> = imports
        .iter()
        .map(|(name, address)| format!("\"{name}\": \"{address}\""))
        .collect();
    let import_map = format!("{{\"imports\": {{\n{}\n}}}}", entries.join(",\n"));

    // The packages' style sheets first, so that the page's own rules win over theirs.
    let styles = vendored
        .map(|file| format!("/assets/vendor/{}", file.path))
        .chain(
            assets
                .iter()
                .filter(|asset| asset.path.starts_with("/assets/src/"))
                .map(|asset| asset.path.clone()),
        )
        .filter(|path| extension(path) == Some("css"));
    let mut head = String::new();
    for style in styles {
        let _ = writeln!(
            head,
            "<link rel=\"stylesheet\" href=\"{}\">",
            versioned(&style)
        );
    }
    let _ = writeln!(head, "<script type=\"importmap\">{import_map}</script>");
    // The modules the page loads at once, fetched together rather than each only once its
    // importer has arrived; those imported later (`import(...)`: the Curves tab and uPlot) are
    // not fetched before they are needed.
    let statically = static_graph(assets, &imports, "/assets/src/main.js");
    for (name, address) in &imports {
        if statically.contains(name) {
            let _ = writeln!(head, "<link rel=\"modulepreload\" href=\"{address}\">");
        }
    }
    let index = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>trainctl</title>\n<link rel=\"icon\" href=\"data:,\">\n{head}\
         <script type=\"module\" src=\"{}\"></script>\n</head>\n\
         <body><div id=\"app\"></div></body>\n</html>\n",
        versioned("/assets/src/main.js")
    );
    (index, import_map)
}

fn assets_rs(assets: &[Served], import_map_hash: &str) -> String {
    let mut code = String::from(
        "/// Every file of the dashboard, by the path it is served at (`/index.html` at `/`).\n\
         pub static ASSETS: &[Asset] = &[\n",
    );
    for asset in assets {
        let _ = writeln!(
            code,
            "    Asset {{ path: {:?}, version: {:?}, bytes: include_bytes!({:?}) }},",
            asset.path,
            asset.version,
            asset.source.to_string_lossy()
        );
    }
    code.push_str("];\n\n");
    let _ = writeln!(
        code,
        "/// The hash of the page's import map, as a policy names it.\n\
         macro_rules! import_map_hash {{ () => {{ \"sha256-{import_map_hash}\" }} }}"
    );
    code
}
