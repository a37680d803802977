//! What the CLI's integration tests share: the real `trainctl` binary run and its output
//! captured ([`Run`]), a scratch directory per test with its own state directory and its
//! processes found by a mark in their environment ([`scratch`]), the process table
//! ([`processes`]), readers of what `trainctl` prints ([`reading`]), the manifests the tests
//! write ([`manifest`]), a `trainctl server` of a test's own ([`server`]) and its event streams
//! ([`sse`]).
//!
//! Every process a test's `trainctl` starts inherits `TRAINCTL_TEST_MARK=<unique>` from it (a
//! replica inherits trainctl's environment), which is how a test finds "the processes of its
//! job" in `/proc`, grandchildren and processes that left the group included.

#![allow(
    clippy::missing_panics_doc,
    reason = "these helpers run inside tests, where a panic is the test's failure, said in its \
              message"
)]
#![allow(
    clippy::must_use_candidate,
    clippy::return_self_not_must_use,
    reason = "test helpers: a result left unused shows in the test that forgets it"
)]

pub mod manifest;
pub mod processes;
pub mod reading;
pub mod scratch;
pub mod server;
pub mod sse;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

pub use processes::{Process, processes_with_env};
pub use reading::*;
pub use scratch::{Running, Scratch, signal, wait_for};

/// The `trainctl` binary of the build that runs the tests: beside the directory of the test
/// binary (`target/debug/deps/..` → `target/debug/trainctl`), where Cargo builds a package's
/// binaries before its integration tests. A test binary run from elsewhere panics here.
pub fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let test = std::env::current_exe().expect("the test binary's path");
        let binary = test
            .parent()
            .and_then(Path::parent)
            .map(|dir| dir.join("trainctl"))
            .expect("the test binary is in target/<profile>/deps");
        assert!(
            binary.is_file(),
            "{} is not there: run the tests with cargo, which builds it first",
            binary.display()
        );
        binary
    })
}

/// What a finished `trainctl` invocation did.
#[derive(Debug)]
pub struct Run {
    /// Exit code (`None` if a signal ended it).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// The one JSON value on stdout (`run -o json`, `get -o json`).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|error| panic!("stdout is not one JSON value ({error}):\n{self}"))
    }

    /// The lines the replica `replica` (`chief-0`) printed, as `run` streams them on stderr.
    pub fn replica_lines(&self, replica: &str) -> Vec<&str> {
        lines_after(&self.stderr, &format!("{replica} | "))
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Runs `trainctl` with `args`.
pub fn trainctl(args: &[&str]) -> Run {
    let output = Command::new(binary())
        .args(args)
        .env_remove("CUSTOM_CLUSTER_DOMAIN")
        .output()
        .expect("the trainctl binary runs");
    into_run(&output)
}

/// Runs `trainctl` with `args`, writing `input` to its standard input.
pub fn trainctl_with_stdin(args: &[&str], input: &str) -> Run {
    use std::io::Write;
    let mut child = Command::new(binary())
        .args(args)
        .env_remove("CUSTOM_CLUSTER_DOMAIN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the trainctl binary starts");
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    into_run(&child.wait_with_output().expect("trainctl finishes"))
}

/// Runs `command` (a `trainctl`) with nothing on its stdin, to its end; what it did (failing the
/// test if it panicked).
pub fn run_to_end(mut command: Command) -> Run {
    let output = command
        .stdin(Stdio::null())
        .output()
        .expect("the trainctl binary runs");
    into_run(&output)
}

/// What a finished `trainctl` did; fails the test if it panicked.
pub fn into_run(output: &Output) -> Run {
    let run = Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    assert!(
        !run.stderr.contains("panicked"),
        "trainctl panicked:\n{run}"
    );
    run
}

/// The repository's root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The manifests of users and upstream that the tests run (`testdata/fixtures`).
pub fn fixtures() -> PathBuf {
    workspace().join("testdata/fixtures")
}

/// The CLI's `tests/` directory.
pub fn tests_dir() -> PathBuf {
    workspace().join("crates/cli/tests")
}

/// The invalid-manifest corpus, which belongs to the api crate (`crates/api/tests/invalid`).
pub fn invalid_corpus() -> PathBuf {
    workspace().join("crates/api/tests/invalid")
}

/// Every manifest fixture (seeds and upstream examples, not the CRDs), sorted.
pub fn fixture_manifests() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["seeds", "upstream"] {
        for entry in std::fs::read_dir(fixtures().join(dir)).expect("fixtures exist") {
            let path = entry.expect("readable fixture dir").path();
            if path.extension().is_some_and(|e| e == "yaml") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}
