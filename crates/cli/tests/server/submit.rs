//! `trainctl submit` against a server: `--wait` until the jobs end, saying how each did, and
//! `--on-finish`, a command the server runs when each job finishes.

use std::time::{Duration, Instant};

use serde_json::Value;
use trainctl_cli_harness as harness;
use trainctl_cli_harness::manifest::{Replicas, tfjob};
use trainctl_cli_harness::server::Server;

/// A TFJob `name` of one worker running `sh -c SCRIPT`, restartPolicy Never.
fn job(name: &str, script: &str) -> String {
    tfjob(name, "", &[Replicas::workers(1, script)])
}

/// `trainctl --state-dir <the server's> submit ARGS -f MANIFEST`, the manifest written to a file.
fn submit(server: &Server, manifest: &str, args: &[&str]) -> harness::Run {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("jobs.yaml");
    std::fs::write(&file, manifest).expect("write the manifest");
    let state_dir = server.state_dir().to_str().expect("UTF-8 path").to_owned();
    let mut all = vec!["--state-dir", state_dir.as_str(), "submit"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-f", file.to_str().expect("UTF-8 path")]);
    harness::trainctl(&all)
}

#[test]
fn submit_wait_says_how_each_job_ended_and_exits_as_they_did() {
    let server = Server::start(&["--gpus", "0"]);
    let manifest = format!(
        "{}---\n{}",
        job("fine", "sleep 0.3"),
        job("broken", "exit 3")
    );
    let submitted = submit(&server, &manifest, &["--wait"]);
    assert_eq!(submitted.code, Some(1), "{submitted}");
    let lines: Vec<&str> = submitted.stdout.lines().collect();
    assert_eq!(
        lines[2..],
        [
            "tfjob.kubeflow.org/fine Succeeded",
            "tfjob.kubeflow.org/broken Failed: worker-0 exited with code 3",
        ],
        "{submitted}"
    );
}

#[test]
fn the_server_runs_a_jobs_own_on_finish_command_with_the_notification() {
    let server = Server::start(&["--gpus", "0"]);
    let out = tempfile::tempdir().expect("temp dir");
    let payload = out.path().join("payload.json");
    let command = format!("cat > {}", payload.display());
    let submitted = submit(&server, &job("told", "exit 4"), &["--on-finish", &command]);
    assert_eq!(submitted.code, Some(0), "{submitted}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let told: Value = loop {
        if let Some(told) = std::fs::read(&payload)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        {
            break told;
        }
        assert!(Instant::now() < deadline, "the command never ran");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(told["state"], "Failed", "{told}");
    assert_eq!(told["cause"], "worker-0 exited with code 4", "{told}");
    assert_eq!(told["job"]["metadata"]["name"], "told", "{told}");
}

/// An MXJob through the server as a TFJob goes: submitted and waited for, served at its own
/// path (`mxjobs`), listed under its kind only, its replicas given MXNet's roles.
#[test]
fn an_mxjob_runs_through_the_server_as_a_tfjob_does() {
    let server = Server::start(&["--gpus", "0"]);
    let replica = |kind: &str, script: &str| {
        format!(
            "    {kind}:\n      replicas: 1\n      restartPolicy: Never\n      template:\n        \
             spec:\n          containers:\n            - name: mxnet\n              image: \
             mxnet\n              command: [sh, -c, '{script}']\n"
        )
    };
    let manifest = format!(
        "apiVersion: kubeflow.org/v1\nkind: MXJob\nmetadata:\n  name: ps\nspec:\n  jobMode: \
         MXTrain\n  mxReplicaSpecs:\n{}{}{}---\n{}",
        replica("Scheduler", "echo role=$DMLC_ROLE; sleep 0.5"),
        replica("Server", "echo role=$DMLC_ROLE; sleep 0.2"),
        replica("Worker", "echo role=$DMLC_ROLE id=$DMLC_WORKER_ID"),
        job("plain", "true")
    );
    let submitted = submit(&server, &manifest, &["--wait"]);
    assert_eq!(submitted.code, Some(0), "{submitted}");
    assert!(
        submitted
            .stdout
            .lines()
            .any(|line| line == "mxjob.kubeflow.org/ps Succeeded"),
        "{submitted}"
    );
    let (status, view) = server.request("GET", "/api/v1/namespaces/default/mxjobs/ps", None);
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["state"], "Succeeded", "{view}");
    let (_, listed) = server.request("GET", "/api/v1/jobs?kind=mxjobs", None);
    let names: Vec<(&str, &str)> = listed["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| {
            (
                item["kind"].as_str().unwrap_or_default(),
                item["name"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(names, [("MXJob", "ps")], "{listed}");
    let state_dir = server.state_dir().to_str().expect("UTF-8 path").to_owned();
    for (replica, line) in [
        ("scheduler-0", "role=scheduler"),
        ("server-0", "role=server"),
        ("worker-0", "role=worker id=0"),
    ] {
        let logs = harness::trainctl(&[
            "--state-dir",
            &state_dir,
            "logs",
            "mxjob/ps",
            "--replica",
            replica,
        ]);
        assert_eq!(logs.stdout.trim(), line, "{replica}: {logs}");
    }
}
