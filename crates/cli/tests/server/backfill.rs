//! Backfill in the server's admission queue (`docs/server.md`, "Queue order and backfill"): a job
//! behind the head starts at once when it fits in what the head cannot use and delays no job
//! ahead; one that would delay the head waits and says so. On a faked machine (`--gpus 2`), with
//! jobs that end when the test lets them (a file barrier).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use trainctl_cli_harness::server::{Server, state};

/// A TFJob with one worker asking for `gpus` GPUs and `cpus` CPUs, running `script`.
fn job(name: &str, gpus: u32, cpus: u32, script: &str) -> String {
    format!(
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: {name}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: busybox
              command: [sh, -c, '{script}']
              resources:
                requests:
                  cpu: {cpus}
                limits:
                  nvidia.com/gpu: {gpus}
"
    )
}

/// A script that runs until the file `gate` exists.
fn until(gate: &Path) -> String {
    format!(
        "while [ ! -e {} ]; do sleep 0.05; done",
        gate.to_str().expect("a UTF-8 path")
    )
}

fn submit(server: &Server, manifest: &str) {
    let (status, body) = server.request("POST", "/api/v1/jobs", Some(manifest));
    assert_eq!(status, 201, "{body}");
}

/// The `waiting` words of a job's view.
fn waiting(view: &Value) -> &str {
    view["waiting"].as_str().unwrap_or("")
}

/// When the job's (only) replica started or finished.
fn replica_time<'a>(view: &'a Value, which: &str) -> &'a str {
    view["replicas"][0][which]
        .as_str()
        .unwrap_or_else(|| panic!("no replica {which} time: {view}"))
}

/// Asserts that the job stays `Pending` with the same `waiting` words for a while: nothing
/// admits it meanwhile.
fn stays_pending(server: &Server, name: &str, why: &str) {
    let until = Instant::now() + Duration::from_millis(1_500);
    while Instant::now() < until {
        let (status, view) = server.job(name);
        assert_eq!(status, 200, "{view}");
        assert_eq!(
            (state(&view), waiting(&view)),
            ("Pending", why),
            "{name}: {view}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_cpu_job_starts_before_a_head_waiting_for_gpus_and_a_gpu_job_does_not() {
    let gates = tempfile::tempdir().expect("tempdir");
    let gate = |name: &str| gates.path().join(name);
    let server = Server::start(&["--gpus", "2", "--cpus", "4", "--restart-backoff", "0s"]);

    // X holds one of the two GPUs until the test lets it end.
    submit(&server, &job("x", 1, 0, &until(&gate("x"))));
    server.wait_for("x", "Running", |view| state(view) == "Running");

    // H, at the head, waits for both GPUs.
    submit(&server, &job("h", 2, 0, &until(&gate("h"))));
    server.wait_for("h", "waiting for the GPUs", |view| {
        waiting(view).contains("waiting for 2 GPUs, 1 free")
    });

    // J fits what is free (one GPU) but would take the GPU H waits for: it waits, and says why.
    submit(&server, &job("j", 1, 0, "true"));
    let j_waits = "queued behind 1 job; would delay tfjob/default/h at the head of the queue";
    server.wait_for("j", "held back behind h", |view| waiting(view) == j_waits);

    // C wants a CPU, which H does not need: it starts at once, before H and J.
    submit(&server, &job("c", 0, 1, &until(&gate("c"))));
    let c = server.wait_for("c", "Running by backfill", |view| state(view) == "Running");
    assert_eq!(c["replicas"][0]["gpus"], serde_json::json!([]), "{c}");
    stays_pending(&server, "j", j_waits);
    let (_, h) = server.job("h");
    assert_eq!(state(&h), "Pending", "{h}");

    // X ends: H takes both GPUs while C still runs (C did not delay it), and J, now at the head,
    // waits for a GPU.
    std::fs::write(gate("x"), "").expect("open x's gate");
    server.wait_for("x", "Succeeded", |view| state(view) == "Succeeded");
    let h = server.wait_for("h", "Running", |view| state(view) == "Running");
    assert_eq!(h["replicas"][0]["gpus"], serde_json::json!([0, 1]), "{h}");
    let (_, c) = server.job("c");
    assert_eq!(state(&c), "Running", "C still runs when H is admitted: {c}");
    let j = server.wait_for("j", "waiting for a GPU at the head", |view| {
        waiting(view).contains("waiting for 1 GPU, 0 free")
    });
    stays_pending(&server, "j", waiting(&j));

    // H ends: only now does J run.
    std::fs::write(gate("h"), "").expect("open h's gate");
    let h = server.wait_for("h", "Succeeded", |view| state(view) == "Succeeded");
    let j = server.wait_for("j", "Succeeded", |view| state(view) == "Succeeded");
    let (h_end, j_start) = (replica_time(&h, "finished"), replica_time(&j, "started"));
    assert!(
        j_start >= h_end,
        "J started at {j_start}, before H ended at {h_end}"
    );

    std::fs::write(gate("c"), "").expect("open c's gate");
    server.wait_for("c", "Succeeded", |view| state(view) == "Succeeded");
}

#[test]
fn a_job_that_can_never_fit_fails_at_once_even_behind_the_head() {
    let gates = tempfile::tempdir().expect("tempdir");
    let gate = gates.path().join("holder");
    let server = Server::start(&["--gpus", "2"]);
    submit(&server, &job("holder", 2, 0, &until(&gate)));
    server.wait_for("holder", "Running", |view| state(view) == "Running");
    submit(&server, &job("head", 2, 0, "true"));
    server.wait_for("head", "waiting for the GPUs", |view| {
        waiting(view).contains("waiting for 2 GPUs, 0 free")
    });
    submit(&server, &job("huge", 3, 0, "true"));
    let huge = server.wait_for("huge", "Failed", |view| state(view) == "Failed");
    assert!(
        huge.to_string()
            .contains("the job can never start here: its replicas together need 3 GPUs but this machine has 2 GPUs"),
        "{huge}"
    );
    let (_, head) = server.job("head");
    assert_eq!(state(&head), "Pending", "{head}");
    std::fs::write(&gate, "").expect("open the gate");
    server.wait_for("head", "Succeeded", |view| state(view) == "Succeeded");
}

#[test]
fn a_job_taken_over_after_a_crash_holds_no_place_in_the_queue() {
    let gates = tempfile::tempdir().expect("tempdir");
    let gate = gates.path().join("x");
    let server = Server::start(&["--gpus", "2"]);
    submit(&server, &job("x", 1, 0, &until(&gate)));
    server.wait_for("x", "Running", |view| state(view) == "Running");
    // The server dies; the next one takes X over, running, with its GPU.
    let server = Server::start_in(server.kill(), &["--gpus", "2"]);
    // The other GPU is free: a job that wants it starts at once, not behind X.
    submit(&server, &job("next", 1, 0, "true"));
    let next = server.wait_for("next", "Succeeded", |view| state(view) == "Succeeded");
    assert_eq!(
        next["replicas"][0]["gpus"],
        serde_json::json!([1]),
        "{next}"
    );
    let (_, x) = server.job("x");
    assert_eq!(state(&x), "Running", "{x}");
    std::fs::write(&gate, "").expect("open the gate");
    server.wait_for("x", "Succeeded", |view| state(view) == "Succeeded");
}
