//! A server killed with `SIGKILL` and started again: the replicas outlive it, the next server
//! adopts those still running (same pid, no restart), applies the restart policy to those that
//! exited meanwhile, and kills processes of a job that its records do not know.
//!
//! Replicas are `sh` scripts driven by files in a scratch directory, so each test decides when a
//! replica exits; tests poll for what they wait for, with a timeout.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use trainctl_cli_harness as harness;

use serde_json::Value;
use trainctl_cli_harness::server::{Server, state};

/// A TFJob of `workers` workers under `restart_policy`, each running `script` in `dir`.
fn job(name: &str, workers: u32, restart_policy: &str, dir: &Path, script: &str) -> String {
    format!(
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: {name}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: {workers}
      restartPolicy: {restart_policy}
      template:
        spec:
          containers:
            - name: tensorflow
              image: busybox
              workingDir: {dir}
              command: [sh, -c, '{script}']
",
        dir = dir.display()
    )
}

fn submit(server: &Server, manifest: &str) {
    let (status, body) = server.request("POST", "/api/v1/jobs", Some(manifest));
    assert_eq!(status, 201, "{body}");
}

/// The pids of the job's replicas, once every one runs.
fn running_pids(server: &Server, name: &str, count: usize) -> Vec<i64> {
    let view = server.wait_for(name, "running every replica", |view| {
        let replicas = view["replicas"].as_array().map_or(&[][..], Vec::as_slice);
        replicas.len() == count
            && replicas
                .iter()
                .all(|r| r["state"] == "Running" && r["pid"].is_i64())
    });
    pid_list(&view)
}

fn pid_list(view: &Value) -> Vec<i64> {
    view["replicas"]
        .as_array()
        .expect("replicas")
        .iter()
        .map(|replica| replica["pid"].as_i64().unwrap_or(0))
        .collect()
}

fn is_alive(pid: i64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(
        |stat| !matches!(stat.rsplit_once(") "), Some((_, rest)) if rest.starts_with('Z')),
    )
}

/// Waits until the process is gone (exited and reaped, or a zombie).
fn wait_gone(pid: i64) {
    let started = Instant::now();
    while is_alive(pid) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{pid} still runs"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn running_replicas_outlive_a_killed_server_and_the_next_one_adopts_them() {
    let scratch = tempfile::tempdir().expect("scratch");
    let server = Server::start(&[]);
    submit(
        &server,
        &job(
            "adopted",
            2,
            "OnFailure",
            scratch.path(),
            "while [ ! -e go ]; do sleep 0.05; done",
        ),
    );
    let pids = running_pids(&server, "adopted", 2);
    let (_, view) = server.job("adopted");
    let uid = view["uid"].as_str().expect("uid").to_owned();
    // A process of the job that no record knows: one started just before a crash.
    let mut stray = Command::new("sleep")
        .arg("60")
        .env("TRAINCTL_JOB_UID", &uid)
        .stdin(Stdio::null())
        .spawn()
        .expect("sleep starts");

    let state_dir = server.kill();
    for pid in &pids {
        assert!(is_alive(*pid), "replica {pid} died with the server");
    }
    let server = Server::start_in(state_dir, &[]);

    let status = stray.wait().expect("the stray is reaped");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9),
        "the process no record knows is killed"
    );
    assert_eq!(
        running_pids(&server, "adopted", 2),
        pids,
        "adopted, not restarted"
    );
    std::fs::write(scratch.path().join("go"), "").expect("go");
    let done = server.wait_for("adopted", "Succeeded", |view| state(view) == "Succeeded");
    for replica in done["replicas"].as_array().expect("replicas") {
        assert_eq!(
            (replica["exitCode"].as_i64(), replica["restarts"].as_i64()),
            (Some(0), Some(0)),
            "{replica}"
        );
    }
    for pid in pids {
        wait_gone(pid);
    }
}

#[test]
fn replicas_that_exit_while_no_server_runs_restart_or_fail_by_their_policy() {
    let scratch = tempfile::tempdir().expect("scratch");
    let server = Server::start(&["--restart-backoff", "0s"]);
    // Exits 3 on its first run, when told to; succeeds on the next.
    let retry = "if [ -e retried ]; then exit 0; fi; touch retried; \
                 while [ ! -e die ]; do sleep 0.05; done; exit 3";
    submit(
        &server,
        &job("retry", 1, "OnFailure", scratch.path(), retry),
    );
    let fails = "while [ ! -e die ]; do sleep 0.05; done; exit 1";
    submit(&server, &job("fails", 1, "Never", scratch.path(), fails));
    let retry_pids = running_pids(&server, "retry", 1);
    let fails_pids = running_pids(&server, "fails", 1);

    let state_dir = server.kill();
    std::fs::write(scratch.path().join("die"), "").expect("die");
    for pid in retry_pids.iter().chain(&fails_pids) {
        wait_gone(*pid);
    }
    let server = Server::start_in(state_dir, &["--restart-backoff", "0s"]);

    let retried = server.wait_for("retry", "Succeeded", |view| state(view) == "Succeeded");
    let replica = &retried["replicas"][0];
    assert_eq!(
        (replica["exitCode"].as_i64(), replica["restarts"].as_i64()),
        (Some(0), Some(1)),
        "{replica}"
    );
    let failed = server.wait_for("fails", "Failed", |view| state(view) == "Failed");
    let replica = &failed["replicas"][0];
    assert_eq!(
        (replica["exitCode"].as_i64(), replica["restarts"].as_i64()),
        (Some(1), Some(0)),
        "{replica}"
    );
}

/// Kills the shim of the server on `state_dir` with `SIGKILL`: with the server, a double crash.
fn kill_shim(state_dir: &Path) {
    let wanted = format!(
        "__shim\0--socket\0{}\0",
        state_dir.join("shim.sock").display()
    );
    let shims: Vec<u32> = std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|line| line.ends_with(wanted.as_bytes()))
        })
        .collect();
    assert_eq!(shims.len(), 1, "one shim to kill");
    let status = Command::new("kill")
        .args(["-KILL", &shims[0].to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -KILL {}", shims[0]);
}

#[test]
fn a_replica_whose_exit_no_one_saw_runs_again_and_is_never_given_a_made_up_code() {
    let scratch = tempfile::tempdir().expect("scratch");
    let server = Server::start(&[]);
    // Succeeds on both runs: the first once told to, while neither the server nor its shim runs.
    // Under `Never`, a made-up 137 would fail the job.
    let twice = "echo run >> runs; if [ -e ran ]; then exit 0; fi; touch ran; \
                 while [ ! -e go ]; do sleep 0.05; done; exit 0";
    submit(&server, &job("unseen", 1, "Never", scratch.path(), twice));
    let pids = running_pids(&server, "unseen", 1);

    let state_dir = server.kill();
    kill_shim(state_dir.path());
    std::fs::write(scratch.path().join("go"), "").expect("go");
    wait_gone(pids[0]);
    let server = Server::start_in(state_dir, &[]);

    let done = server.wait_for("unseen", "Succeeded", |view| state(view) == "Succeeded");
    let runs = std::fs::read_to_string(scratch.path().join("runs")).expect("runs");
    assert_eq!(
        runs, "run\nrun\n",
        "created again, as a pod whose node vanished"
    );
    let replica = &done["replicas"][0];
    assert_eq!(replica["exitCode"].as_i64(), Some(0), "{replica}");
    let events: Vec<(&str, &str)> = done["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|event| {
            (
                event["reason"].as_str().unwrap_or(""),
                event["message"].as_str().unwrap_or(""),
            )
        })
        .collect();
    let lost = format!(
        "worker-0 (pid {}) ended while neither the server nor its shim ran: its exit code is \
         unknown. As a pod whose node vanished, its pod is deleted and created again",
        pids[0]
    );
    assert!(
        events.contains(&("ReplicaLost", lost.as_str())),
        "{events:?}"
    );
    assert!(
        events.iter().all(|(_, message)| !message.contains("137")),
        "no made-up exit code: {events:?}"
    );
}

#[test]
fn delete_works_with_no_server_and_stops_what_the_job_left_running() {
    let scratch = tempfile::tempdir().expect("scratch");
    let server = Server::start(&[]);
    submit(
        &server,
        &job("orphan", 1, "Never", scratch.path(), "sleep 300"),
    );
    let pids = running_pids(&server, "orphan", 1);
    let (_, view) = server.job("orphan");
    let uid = view["uid"].as_str().expect("uid").to_owned();
    // The server dies; its shim keeps the replica running, and no server is started again.
    let state_dir = server.kill();
    assert!(is_alive(pids[0]), "the replica outlives the server");

    let delete = harness::trainctl(&[
        "--state-dir",
        &state_dir.path().display().to_string(),
        "delete",
        "orphan",
    ]);
    assert_eq!(delete.code, Some(0), "{}", delete.stderr);
    assert_eq!(
        delete.stdout,
        format!(
            "tfjob.kubeflow.org/orphan deleted (no server runs for {}: removed from the state \
             directory, and its replica that still ran stopped)\n",
            state_dir.path().display()
        )
    );
    wait_gone(pids[0]);
    assert!(
        !state_dir.path().join("logs").join(&uid).exists(),
        "logs kept"
    );
    let get = harness::trainctl(&[
        "--state-dir",
        &state_dir.path().display().to_string(),
        "get",
        "tfjob",
        "orphan",
    ]);
    assert_eq!(get.code, Some(1), "{}", get.stdout);
    assert_eq!(
        get.stderr,
        "error: tfjob \"orphan\" not found in namespace \"default\"\n"
    );
}
