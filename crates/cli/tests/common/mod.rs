//! Helpers shared by the CLI's integration tests: run the real binary, capture everything; the
//! job manifests they run (`manifest`) and a server of their own (`server`).

#![allow(
    dead_code,
    reason = "each test binary uses a different subset of these helpers"
)]

pub mod manifest;
pub mod server;
pub mod sse;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// What a `trainctl` invocation did.
pub struct Run {
    /// Exit code (`None` if killed by a signal).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Runs `trainctl` with `args`.
pub fn trainctl(args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_trainctl"))
        .args(args)
        .env_remove("CUSTOM_CLUSTER_DOMAIN")
        .output()
        .expect("the trainctl binary runs");
    into_run(&output)
}

/// Runs `trainctl` with `args`, writing `input` to its standard input.
pub fn trainctl_with_stdin(args: &[&str], input: &str) -> Run {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_trainctl"))
        .args(args)
        .env_remove("CUSTOM_CLUSTER_DOMAIN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the trainctl binary runs");
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    into_run(&child.wait_with_output().expect("trainctl finishes"))
}

/// The captured `output` of a `trainctl` run; fails the test if it panicked.
pub fn into_run(output: &Output) -> Run {
    let run = Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    assert!(
        !run.stderr.contains("panicked"),
        "trainctl panicked:\n{}",
        run.stderr
    );
    run
}

/// The manifests of users and upstream that the tests run (`testdata/fixtures`).
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/fixtures")
}

/// This crate's `tests/` directory.
pub fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// The invalid-manifest corpus, which belongs to the api crate (`crates/api/tests/invalid`).
pub fn invalid_corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../api/tests/invalid")
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

/// A live process as `/proc` shows it: what a test needs to pick out and signal one replica.
#[derive(Debug, Clone)]
pub struct ProcessEnv {
    /// Its pid.
    pub pid: u32,
    /// `/proc/<pid>/comm`: the program's name (`python`, `trainctl`).
    pub comm: String,
    /// Its environment, `NAME=value` entries.
    pub environ: Vec<String>,
}

impl ProcessEnv {
    /// The value of the variable `name` in its environment.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.environ
            .iter()
            .find_map(|entry| entry.strip_prefix(name)?.strip_prefix('='))
    }
}

/// The live (not zombie) processes of this user whose environment holds the entry `entry`
/// (`NAME=value`, exactly). A variable set only on one test's `trainctl` (replicas inherit
/// its environment) picks out that test's processes, grandchildren and orphans included.
pub fn processes_with_env(entry: &str) -> Vec<ProcessEnv> {
    let Ok(proc_entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    proc_entries
        .filter_map(Result::ok)
        .filter_map(|dir| dir.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (head, rest) = stat.rsplit_once(')')?;
            if matches!(rest.split_whitespace().next(), None | Some("Z" | "X")) {
                return None;
            }
            let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
            let environ: Vec<String> = environ
                .split(|&byte| byte == 0)
                .map(|var| String::from_utf8_lossy(var).into_owned())
                .collect();
            let comm = head.split_once('(')?.1.to_owned();
            environ
                .iter()
                .any(|var| var == entry)
                .then_some(ProcessEnv { pid, comm, environ })
        })
        .collect()
}
