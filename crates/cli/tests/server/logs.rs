//! A server's replicas' logs are kept within `--log-max-size` × `--log-max-files`, as `trainctl
//! run`'s are: the shim pumps each replica's output into its log and rotates it.

use trainctl_cli_harness as harness;
use trainctl_cli_harness::server::{Server, state};

#[test]
fn a_servers_replica_logs_are_rotated_within_their_limit() {
    let scratch = tempfile::tempdir().expect("scratch");
    let server = Server::start(&["--log-max-size", "1Ki", "--log-max-files", "2"]);
    // 200 lines of 100 bytes: 20,000 bytes, of which the last two files keep at most 2 KiB.
    let manifest = format!(
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: chatty
spec:
  tfReplicaSpecs:
    Worker:
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: busybox
              workingDir: {}
              command: [sh, -c, 'i=0; while [ $i -lt 200 ]; do printf \"%099d\\n\" $i; i=$((i+1)); done']
",
        scratch.path().display()
    );
    let (status, body) = server.request("POST", "/api/v1/jobs", Some(&manifest));
    assert_eq!(status, 201, "{body}");
    let done = server.wait_for("chatty", "Succeeded", |view| state(view) == "Succeeded");
    let uid = done["uid"].as_str().expect("uid");
    let logs = server.state_dir().join("logs").join(uid);
    let current = std::fs::read_to_string(logs.join("worker-0.log")).expect("log");
    let previous = std::fs::read_to_string(logs.join("worker-0.log.1")).expect("rotated log");
    assert!(
        !logs.join("worker-0.log.2").exists(),
        "only two files are kept"
    );
    assert!(current.len() <= 1024 && previous.len() <= 1024);
    let kept = format!("{previous}{current}");
    let last = format!("{:099}\n", 199);
    assert!(kept.ends_with(&last), "the last line is kept: {kept:?}");
    // Every line kept is whole, and they follow each other.
    let numbers: Vec<u32> = kept
        .lines()
        .map(|line| line.parse().expect("a number"))
        .collect();
    assert!(
        numbers.windows(2).all(|pair| pair[1] == pair[0] + 1),
        "{numbers:?}"
    );
    // The API's log is what is kept, oldest file first; so is `trainctl logs`.
    let (status, body) = server.request(
        "GET",
        "/api/v1/namespaces/default/tfjobs/chatty/logs?replica=worker-0",
        None,
    );
    assert_eq!(status, 200);
    assert_eq!(body, serde_json::Value::String(kept.clone()));
    let logs = harness::trainctl(&[
        "--state-dir",
        &server.state_dir().display().to_string(),
        "logs",
        "tfjob",
        "chatty",
        "--replica",
        "worker-0",
    ]);
    assert_eq!(logs.code, Some(0), "{}", logs.stderr);
    assert_eq!(logs.stdout, kept);
}
