//! The README's quick start, as written: each command of its first `sh` block runs from the
//! repository root (a fresh clone, in CI) with `trainctl` and the examples' Python on `PATH`,
//! and exits 0. Its setup lines (`cd` into the clone, the build, `PATH`) are what the test
//! itself provides: this test's `trainctl` and `TRAINCTL_EXAMPLES_PATH`.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::{SCRUBBED_ENV, Sandbox, repo_root};

/// The commands of the README's quick start, setup lines and comments left out.
fn quick_start_commands() -> Vec<String> {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("the README");
    let section = readme
        .split_once("\n## Quick start\n")
        .expect("a Quick start section")
        .1;
    let block = section
        .split_once("```sh\n")
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .expect("an sh block")
        .0;
    block
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter(|line| {
            !["cd ", "cargo build", "export PATH="]
                .iter()
                .any(|setup| line.starts_with(setup))
        })
        .map(str::to_owned)
        .collect()
}

impl Sandbox {
    /// `bash -c LINE` from the repository root, with this test's `trainctl` and the
    /// virtualenv first on `PATH`, this test's state directory and `BACKUP_DIR`.
    fn shell(&self, line: &str) -> Command {
        let binary_dir: PathBuf = trainctl_cli_harness::binary()
            .parent()
            .expect("the binary's directory")
            .to_owned();
        let path = std::env::join_paths([binary_dir, self.venv_bin.clone()].into_iter().chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .expect("PATH entries hold no separator");
        let mut command = Command::new("bash");
        command
            .args(["-c", line])
            .current_dir(repo_root())
            .env("PATH", path)
            .env("TRAINCTL_HOME", self.dir.join("state"))
            .env("BACKUP_DIR", self.backup_dir())
            .env("TRAINCTL_GPUS", "0")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        for name in SCRUBBED_ENV.iter().filter(|name| **name != "TRAINCTL_HOME") {
            command.env_remove(name);
        }
        command
    }
}

#[test]
#[ignore = "needs the examples' Python packages: run through ./scripts/test"]
fn the_readme_quick_start_runs_as_written() {
    let sandbox = Sandbox::new("quick-start");
    let commands = quick_start_commands();
    assert!(
        commands
            .iter()
            .any(|line| line.starts_with("trainctl run -f examples/tfjob-mwms.yaml")),
        "{commands:?}"
    );
    for line in &commands {
        let output = sandbox.shell(line).output().expect("bash runs");
        assert!(
            output.status.success(),
            "`{line}` exited {:?}:\n{}\n{}",
            output.status.code(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    sandbox.assert_no_process_left();
}
