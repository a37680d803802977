//! A shim killed under a running server (`kill -KILL`): the server notices at once, stops the
//! replicas whose output lost its reader (with what they started, through their cgroups), says
//! so on each in a `ShimLost` event, starts them again through a new shim as their restart
//! policy says, and every job submitted afterwards runs.

use std::time::{Duration, Instant};

use trainctl_cli_harness::server::{Server, state};

/// The pid of the shim serving `state_dir`'s socket.
fn shim_of(state_dir: &std::path::Path) -> Option<u32> {
    let socket = state_dir.join("shim.sock");
    let wanted = format!("__shim\0--socket\0{}\0", socket.display());
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(&wanted))
        })
}

fn job(name: &str, policy: &str, script: &str) -> String {
    format!(
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {{name: {name}}}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: {policy}
      template:
        spec:
          containers:
            - name: tensorflow
              image: busybox
              command: [sh, -c, '{script}']
"
    )
}

#[test]
fn a_killed_shim_is_noticed_said_on_its_replicas_and_replaced() {
    let server = Server::start(&["--gpus", "0", "--restart-backoff", "0s"]);
    // Chatty replicas, as the probe's: a line every 50 ms.
    let chatty = job(
        "chatty",
        "OnFailure",
        "while true; do echo tick; sleep 0.05; done",
    );
    let (status, _) = server.request("POST", "/api/v1/jobs", Some(&chatty));
    assert_eq!(status, 201);
    let running = server.wait_for("chatty", "Running", |view| {
        view["replicas"].as_array().is_some_and(|replicas| {
            replicas.len() == 2 && replicas.iter().all(|r| r["state"] == "Running")
        })
    });
    let first_pids: Vec<u64> = running["replicas"]
        .as_array()
        .expect("replicas")
        .iter()
        .filter_map(|replica| replica["pid"].as_u64())
        .collect();
    assert_eq!(first_pids.len(), 2, "{running}");
    let shim = shim_of(server.state_dir()).expect("the server's shim");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &shim.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success(), "kill the shim {shim}");

    // Each replica is stopped, said to be lost with its shim, and runs again.
    let again = server.wait_for("chatty", "both replicas restarted", |view| {
        view["replicas"].as_array().is_some_and(|replicas| {
            replicas.len() == 2
                && replicas
                    .iter()
                    .all(|r| r["state"] == "Running" && r["restarts"] == 1)
        })
    });
    for pid in &first_pids {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|stat| stat.contains(") Z")),
            "the replica {pid} of the dead shim still runs"
        );
    }
    let (_, described) = server.job("chatty");
    let lost: Vec<&str> = described["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|event| event["reason"] == "ShimLost")
        .filter_map(|event| event["message"].as_str())
        .collect();
    assert_eq!(lost.len(), 2, "{described}");
    assert!(
        lost.iter().any(|message| message.starts_with(
            "the shim that kept the output of pod chatty-worker-0 died: the replica, whose \
             output had no reader any more, was stopped (exit code 137)"
        )),
        "{lost:?}"
    );
    assert_ne!(shim_of(server.state_dir()), Some(shim), "{again}");
    assert!(shim_of(server.state_dir()).is_some(), "a new shim runs");

    // A job submitted afterwards runs through the new shim, and its output is kept.
    let (status, _) = server.request(
        "POST",
        "/api/v1/jobs",
        Some(&job("after", "Never", "echo after-the-shim")),
    );
    assert_eq!(status, 201);
    let started = Instant::now();
    let after = server.wait_for("after", "Succeeded", |view| state(view) == "Succeeded");
    assert!(started.elapsed() < Duration::from_secs(30), "{after}");
    let (status, _) = server.request("GET", "/healthz", None);
    assert_eq!(status, 200);
}
