//! What `trainctl` did: a finished invocation's exit and output ([`Run`], failing the test if it
//! panicked), one started in the background ([`Running`]), and the distinct lines of an output.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Child, ExitStatus};
use std::time::Duration;

use super::wait_for;

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
    /// The lines the replica `replica` (`chief-0`) printed, as `run` streams them on stderr.
    pub fn replica_lines(&self, replica: &str) -> Vec<&str> {
        let prefix = format!("{replica} | ");
        self.stderr
            .lines()
            .filter_map(|line| line.strip_prefix(&prefix))
            .collect()
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

/// What a finished `trainctl` did; fails the test if it panicked.
pub(super) fn into_run(output: &std::process::Output) -> Run {
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

/// A `trainctl run` started in the background; killed if the test ends before it does.
pub struct Running {
    pub(super) child: Child,
    pub(super) stdout: PathBuf,
    pub(super) stderr: PathBuf,
}

impl Running {
    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `timeout` for it to exit; what it did.
    pub fn finish(mut self, timeout: Duration) -> Run {
        let status: ExitStatus = wait_for("trainctl run to exit", timeout, || {
            self.child.try_wait().expect("try_wait")
        });
        let run = Run {
            code: status.code(),
            stdout: std::fs::read_to_string(&self.stdout).unwrap_or_default(),
            stderr: std::fs::read_to_string(&self.stderr).unwrap_or_default(),
        };
        assert!(
            !run.stderr.contains("panicked"),
            "trainctl panicked:\n{run}"
        );
        run
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The distinct lines of `lines`, sorted.
pub fn sorted<'a>(lines: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    lines
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}
