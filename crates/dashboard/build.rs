//! Builds the dashboard's web files into `OUT_DIR/dist` and writes `OUT_DIR/assets.rs`, which
//! embeds each of them (`include_bytes!`).
//!
//! The packages of `web/package-lock.json` are installed by `npm ci` in `OUT_DIR/npm` (never in
//! the source tree), again only when the lock file changes or the last install failed;
//! `web/build.mjs` then bundles `web/src` with esbuild. Needs Node.js 18 or newer and npm
//! (`TRAINCTL_NPM` and `TRAINCTL_NODE` name other commands).

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let web = manifest.join("web");
    for watched in ["src", "build.mjs", "package.json", "package-lock.json"] {
        println!("cargo:rerun-if-changed=web/{watched}");
    }
    println!("cargo:rerun-if-env-changed=TRAINCTL_NPM");
    println!("cargo:rerun-if-env-changed=TRAINCTL_NODE");
    let npm = env::var("TRAINCTL_NPM").unwrap_or_else(|_| "npm".to_owned());
    let node = env::var("TRAINCTL_NODE").unwrap_or_else(|_| "node".to_owned());

    let packages = out.join("npm");
    install(&npm, &web, &packages);
    let dist = out.join("dist");
    let mut bundle = Command::new(&node);
    bundle
        .arg(web.join("build.mjs"))
        .arg(packages.join("node_modules"))
        .arg(&dist);
    run(
        &mut bundle,
        &format!("{node} web/build.mjs (bundling the dashboard)"),
    );
    write_assets(&dist, &out.join("assets.rs"));
}

/// `npm ci` of `web`'s lock file into `packages`, unless the same lock file was installed there.
fn install(npm: &str, web: &Path, packages: &Path) {
    let lock = fs::read(web.join("package-lock.json")).expect("read web/package-lock.json");
    // Written only once `npm ci` succeeded with this lock: a failed install is tried again.
    let done = packages.join("installed-lock.json");
    if fs::read(&done).is_ok_and(|copy| copy == lock) {
        return;
    }
    fs::create_dir_all(packages).expect("create OUT_DIR/npm");
    fs::copy(web.join("package.json"), packages.join("package.json")).expect("copy package.json");
    // npm ci checks the lock against package.json, then installs exactly the lock; its packages
    // come from npm's cache when they are there.
    fs::write(packages.join("package-lock.json"), &lock).expect("copy package-lock.json");
    let mut ci = Command::new(npm);
    ci.args([
        "ci",
        "--ignore-scripts",
        "--prefer-offline",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
    ])
    .current_dir(packages);
    let _ = fs::remove_file(&done);
    run(&mut ci, &format!("{npm} ci (the dashboard's packages)"));
    fs::write(&done, &lock).expect("record the installed lock");
}

/// Runs `command`; panics, saying what to install, when it cannot start or fails.
fn run(command: &mut Command, what: &str) {
    match command.status() {
        Ok(status) if status.success() => {}
        Ok(status) => panic!("{what} failed ({status}): see its output above"),
        Err(error) => panic!(
            "{what} could not start: {error}. The dashboard is built with Node.js (18 or newer) \
             and npm: install them (Debian: apt-get install nodejs npm), or name them with \
             TRAINCTL_NODE and TRAINCTL_NPM"
        ),
    }
}

/// Writes `ASSETS`, every file of `dist` (one level of folders) with its path as served.
fn write_assets(dist: &Path, target: &Path) {
    let mut files = Vec::new();
    collect(dist, dist, &mut files);
    files.sort();
    let mut code =
        String::from("/// Every file of the built dashboard, by the path it is served at.\n");
    code.push_str("pub static ASSETS: &[Asset] = &[\n");
    for (served, path) in &files {
        let _ = writeln!(
            code,
            "    Asset {{ path: {served:?}, bytes: include_bytes!({path:?}) }},"
        );
    }
    code.push_str("];\n");
    fs::write(target, code).expect("write assets.rs");
}

fn collect(dist: &Path, dir: &Path, files: &mut Vec<(String, String)>) {
    for entry in fs::read_dir(dir).expect("read the built dashboard") {
        let path = entry.expect("read the built dashboard").path();
        if path.is_dir() {
            collect(dist, &path, files);
        } else {
            let relative = path.strip_prefix(dist).expect("under dist");
            let served = format!("/{}", relative.to_string_lossy());
            files.push((served, path.to_string_lossy().into_owned()));
        }
    }
}
