//! `run` under a low open-file limit: each running replica holds three files open in trainctl
//! (its output's pipe, its log and the log's index), so a soft limit of 64 would fail a job of
//! 40 replicas half-way with "Too many open files". `run` raises its soft limit to the hard one,
//! as the server does, and a job that the hard limit cannot hold fails before any replica starts,
//! saying why with the job's other reasons not to run here.

use std::process::Command;

use trainctl_cli_harness::manifest::{Replicas, tfjob};
use trainctl_cli_harness::scratch::Scratch;
use trainctl_cli_harness::{binary, run_to_end};

/// `trainctl run -f job.yaml` of `workers` workers that each exit 0 after `script`, under the
/// open-file limits `ulimit` sets first (`-S -n 64`).
fn run_under(
    scratch: &Scratch,
    workers: u32,
    script: &str,
    ulimit: &str,
) -> trainctl_cli_harness::Run {
    scratch.write(
        "job.yaml",
        &tfjob("files", "", &[Replicas::workers(workers, script)]),
    );
    let mut shell = Command::new("sh");
    shell
        .arg("-c")
        .arg(format!(r#"ulimit {ulimit} && exec "$0" "$@""#))
        .arg(binary());
    run_to_end(scratch.command_with(shell, &["run", "-f", "job.yaml"]))
}

#[test]
fn run_raises_its_soft_limit_to_the_hard_one_and_runs_every_replica() {
    let scratch = Scratch::new("open-files-raised");
    // Every worker waits until all 40 run, so that their files are open at once.
    let script = "mktemp -p . started-XXXXXX >/dev/null; while [ $(ls started-* | wc -l) -lt 40 ]; do sleep 0.05; done";
    let run = run_under(&scratch, 40, script, "-S -n 64");
    assert_eq!(run.code, Some(0), "{run}");
    assert!(!run.stderr.contains("Too many open files"), "{run}");
}

#[test]
fn run_refuses_a_job_the_hard_limit_cannot_hold_before_starting_a_replica() {
    let scratch = Scratch::new("open-files-refused");
    let run = run_under(&scratch, 20, "mktemp -p . started-XXXXXX", "-n 100");
    assert_eq!(run.code, Some(1), "{run}");
    let failed: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.starts_with("trainctl: Failed: "))
        .collect();
    assert_eq!(
        failed,
        [
            "trainctl: Failed: cannot run on this machine: the job's 20 replicas need about 124 \
          open files (3 each, and 64 for trainctl), more than this process may open: 100; raise \
          the hard limit (`ulimit -Hn 124` as root, or `nofile` in /etc/security/limits.conf) or \
          run fewer replicas"
        ],
        "{run}"
    );
    let started = std::fs::read_dir(scratch.dir())
        .expect("the scratch directory")
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("started-"))
        .count();
    assert_eq!(started, 0);
}
