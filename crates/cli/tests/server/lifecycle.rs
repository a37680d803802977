//! `trainctl server` end to end: a real server process on a temporary state directory, driven
//! through its HTTP API with real replica processes.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};
use trainctl_cli_harness as harness;

use trainctl_cli_harness::server::{Server, state};

fn job(name: &str, gpus: u32, script: &str, run_policy: &str) -> String {
    format!(
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: {name}
spec:
  runPolicy: {{{run_policy}}}
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
                limits:
                  nvidia.com/gpu: {gpus}
"
    )
}

#[test]
fn a_job_that_does_not_fit_waits_with_a_reason_then_runs_when_the_first_finishes() {
    let server = Server::start(&["--gpus", "2", "--restart-backoff", "0s"]);
    let (status, _) = server.request(
        "POST",
        "/api/v1/jobs",
        Some(&job("first", 2, "sleep 1.5", "")),
    );
    assert_eq!(status, 201);
    server.wait_for("first", "Running", |view| state(view) == "Running");
    let (status, _) = server.request("POST", "/api/v1/jobs", Some(&job("second", 2, "true", "")));
    assert_eq!(status, 201);
    let waiting = server.wait_for("second", "queued with a reason", |view| {
        view["waiting"]
            .as_str()
            .is_some_and(|why| why.contains("GPU"))
    });
    assert_eq!(state(&waiting), "Pending", "{waiting}");
    let first = server.wait_for("first", "Succeeded", |view| state(view) == "Succeeded");
    let second = server.wait_for("second", "Succeeded", |view| state(view) == "Succeeded");
    let first_end = first["replicas"][0]["finished"].as_str().expect("finished");
    let second_start = second["replicas"][0]["started"].as_str().expect("started");
    assert!(
        second_start >= first_end,
        "{second_start} before {first_end}"
    );
}

#[test]
fn a_suspended_job_gives_its_gpus_to_a_waiting_one() {
    let server = Server::start(&["--gpus", "2", "--restart-backoff", "0s"]);
    let holder = job("holder", 2, "sleep 60", "");
    assert_eq!(server.request("POST", "/api/v1/jobs", Some(&holder)).0, 201);
    server.wait_for("holder", "Running", |view| state(view) == "Running");
    let waiter = job("waiter", 2, "true", "");
    assert_eq!(server.request("POST", "/api/v1/jobs", Some(&waiter)).0, 201);
    server.wait_for("waiter", "queued for the GPUs", |view| {
        view["waiting"]
            .as_str()
            .is_some_and(|why| why.contains("GPU"))
    });
    let (status, view) = server.request(
        "POST",
        "/api/v1/namespaces/default/tfjobs/holder/suspend",
        None,
    );
    assert_eq!((status, state(&view)), (200, "Suspended"), "{view}");
    // Suspended, the holder is unfinished and its owner (the server) alive: only giving its
    // GPUs back lets the other job run.
    server.wait_for("waiter", "Succeeded", |view| state(view) == "Succeeded");
    assert_eq!(
        server
            .request("DELETE", "/api/v1/namespaces/default/tfjobs/holder", None)
            .0,
        200
    );
}

/// Submits a job asking for 2 GPUs whose command does not exist here, and waits for it to fail
/// saying so.
fn submit_a_job_that_cannot_run(server: &Server) {
    let broken = job("broken", 2, "true", "").replace(
        "command: [sh, -c, 'true']",
        "command: [no-such-program-xyz]",
    );
    assert_eq!(server.request("POST", "/api/v1/jobs", Some(&broken)).0, 201);
    let failed = server.wait_for("broken", "Failed", |view| state(view) == "Failed");
    assert!(
        failed.to_string().contains(
            "cannot run on this machine: worker-0: command `no-such-program-xyz` not found on this machine"
        ),
        "{failed}"
    );
}

#[test]
fn a_job_that_cannot_run_fails_at_once_and_keeps_no_gpus_from_the_next_one() {
    let server = Server::start(&["--gpus", "2"]);
    submit_a_job_that_cannot_run(&server);
    // Its replicas are found unable to run once it is admitted with the GPUs; its owner (the
    // server) lives on: the next job runs only if the failure ended it for good.
    assert_eq!(
        server
            .request("POST", "/api/v1/jobs", Some(&job("next", 2, "true", "")))
            .0,
        201
    );
    server.wait_for("next", "Succeeded", |view| state(view) == "Succeeded");
}

#[test]
fn a_job_that_cannot_run_fails_at_once_rather_than_wait_for_the_gpus() {
    let server = Server::start(&["--gpus", "2"]);
    assert_eq!(
        server
            .request(
                "POST",
                "/api/v1/jobs",
                Some(&job("holder", 2, "sleep 60", ""))
            )
            .0,
        201
    );
    server.wait_for("holder", "Running", |view| state(view) == "Running");
    submit_a_job_that_cannot_run(&server);
    assert_eq!(
        server
            .request("DELETE", "/api/v1/namespaces/default/tfjobs/holder", None)
            .0,
        200
    );
}

#[test]
fn suspend_stops_the_replicas_and_resume_runs_the_job_again() {
    let server = Server::start(&[]);
    let (status, _) = server.request(
        "POST",
        "/api/v1/jobs",
        Some(&job("sleeper", 0, "sleep 60", "")),
    );
    assert_eq!(status, 201);
    let running = server.wait_for("sleeper", "Running", |view| {
        state(view) == "Running" && view["replicas"][0]["pid"].is_i64()
    });
    let pid = running["replicas"][0]["pid"].as_i64().expect("pid");
    let (status, view) = server.request(
        "POST",
        "/api/v1/namespaces/default/tfjobs/sleeper/suspend",
        None,
    );
    assert_eq!(status, 200, "{view}");
    assert_eq!(state(&view), "Suspended", "{view}");
    assert!(
        !PathBuf::from(format!("/proc/{pid}")).exists(),
        "replica {pid} still runs"
    );
    // The replica was suspended, not failed by the SIGTERM that stopped it.
    let suspended = server.wait_for("sleeper", "its replica recorded Suspended", |view| {
        view["replicas"][0]["state"] == "Suspended"
    });
    assert_eq!(suspended["replicas"][0]["exitCode"], 143, "{suspended}");
    let (status, view) = server.request(
        "POST",
        "/api/v1/namespaces/default/tfjobs/sleeper/resume",
        None,
    );
    assert_eq!(status, 200, "{view}");
    let resumed = server.wait_for("sleeper", "running again", |view| {
        state(view) == "Running"
            && view["replicas"][0]["pid"]
                .as_i64()
                .is_some_and(|p| p != pid)
    });
    let (status, _) = server.request("DELETE", "/api/v1/namespaces/default/tfjobs/sleeper", None);
    assert_eq!(status, 200);
    let new_pid = resumed["replicas"][0]["pid"].as_i64().expect("pid");
    assert!(
        !PathBuf::from(format!("/proc/{new_pid}")).exists(),
        "replica {new_pid} still runs"
    );
    assert_eq!(server.job("sleeper").0, 404);
}

#[test]
fn a_finished_job_is_deleted_when_its_ttl_runs_out() {
    let server = Server::start(&[]);
    // Long enough for the test to see the job succeed before it goes, even on a busy machine.
    let manifest = job("brief", 0, "true", "ttlSecondsAfterFinished: 3");
    assert_eq!(
        server.request("POST", "/api/v1/jobs", Some(&manifest)).0,
        201
    );
    let done = server.wait_for("brief", "Succeeded", |view| state(view) == "Succeeded");
    let finished = Instant::now();
    assert!(done["finished"].as_bool().expect("finished"));
    while server.job("brief").0 == 200 {
        assert!(
            finished.elapsed() < Duration::from_secs(10),
            "never deleted"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Not before its TTL (3 s after completion; the job completed before `finished` was taken).
    let completed: jiff::Timestamp = done["job"]["status"]["completionTime"]
        .as_str()
        .expect("completionTime")
        .parse()
        .expect("a timestamp");
    let deleted = jiff::Timestamp::now();
    assert!(
        deleted.duration_since(completed) >= jiff::SignedDuration::from_millis(3000),
        "deleted at {deleted}, completed at {completed}"
    );
    let logs = server
        .state_dir()
        .join("logs")
        .join(done["uid"].as_str().expect("uid"));
    assert!(!logs.exists(), "{} kept", logs.display());
}

#[test]
fn concurrent_submits_are_each_recorded_exactly_once() {
    let server = Server::start(&[]);
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..100)
            .map(|i| {
                let server = &server;
                scope.spawn(move || {
                    // Ten submits of each name: exactly one of each is accepted.
                    let name = format!("job-{}", i % 10);
                    let manifest = job(&name, 0, "sleep 30", "");
                    server.request("POST", "/api/v1/jobs", Some(&manifest)).0
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    assert_eq!(
        statuses.iter().filter(|&&s| s == 201).count(),
        10,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|&&s| s == 409).count(),
        90,
        "{statuses:?}"
    );
    let (_, list) = server.request("GET", "/api/v1/jobs", None);
    let mut names: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["name"].as_str().expect("name"))
        .collect();
    names.sort_unstable();
    let expected: Vec<String> = (0..10).map(|i| format!("job-{i}")).collect();
    assert_eq!(names, expected);
}

#[test]
fn requests_without_the_token_are_refused_and_health_needs_none() {
    let server = Server::start(&[]);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let refused = agent
        .get(&format!("{}/api/v1/jobs", server.url))
        .call()
        .expect("answer");
    assert_eq!(refused.status().as_u16(), 401);
    let health = agent
        .get(&format!("{}/healthz", server.url))
        .call()
        .expect("answer");
    assert_eq!(health.status().as_u16(), 200);
    let (status, metrics) = server.request("GET", "/metrics", None);
    assert_eq!(status, 200);
    assert!(
        metrics
            .as_str()
            .expect("text")
            .contains("trainctl_queue_depth 0"),
        "{metrics}"
    );
}

#[test]
fn a_non_loopback_address_is_refused_unless_allowed() {
    let state = tempfile::tempdir().expect("tempdir");
    let output = Command::new(trainctl_cli_harness::binary())
        .arg("--state-dir")
        .arg(state.path())
        .args(["server", "--listen", "0.0.0.0:0"])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not a loopback address"), "{stderr}");
    assert!(!state.path().join("server.json").exists());
}

#[test]
fn a_second_server_on_the_same_state_directory_is_refused_naming_the_first() {
    let server = Server::start(&["--gpus", "0"]);
    let published = std::fs::read(server.state_dir().join("server.json")).expect("server.json");
    let first: serde_json::Value = serde_json::from_slice(&published).expect("JSON");
    let second = Command::new(trainctl_cli_harness::binary())
        .arg("--state-dir")
        .arg(server.state_dir())
        .args(["server", "--volume", "data=/tmp"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run");
    assert_eq!(second.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&second.stderr),
        format!(
            "error: another trainctl server is running on the state directory {} (pid {} at \
             {}): stop it first, or give this one another --state-dir\n",
            server.state_dir().display(),
            first["pid"],
            server.url
        )
    );
    // Nothing of the first one's was taken: its address, its token, its volumes.
    assert_eq!(
        std::fs::read(server.state_dir().join("server.json")).expect("server.json"),
        published
    );
    let (status, _) = server.request("GET", "/api/v1/jobs", None);
    assert_eq!(status, 200);
    let claims = harness::trainctl(&[
        "--state-dir",
        server.state_dir().to_str().expect("UTF-8 path"),
        "volumes",
    ]);
    assert_eq!(claims.code, Some(0), "{}", claims.stderr);
    assert_eq!(claims.stdout, "", "no claim bound");
}

#[test]
fn the_cli_submits_suspends_resumes_and_deletes_through_the_server() {
    let server = Server::start(&[]);
    let state_dir = server.state_dir().to_str().expect("UTF-8 path").to_owned();
    let manifest = server.state_dir().join("sleeper.yaml");
    std::fs::write(&manifest, job("sleeper", 0, "sleep 60", "")).expect("write");
    let manifest = manifest.to_str().expect("UTF-8 path");
    let cli = |args: &[&str]| harness::trainctl(&[&["--state-dir", &state_dir], args].concat());

    let submitted = cli(&["submit", "-f", manifest]);
    assert_eq!(submitted.code, Some(0), "{}", submitted.stderr);
    assert_eq!(
        submitted.stdout.trim(),
        "tfjob.kubeflow.org/sleeper submitted (Pending)"
    );
    let again = cli(&["submit", "-f", manifest]);
    assert_eq!(again.code, Some(1));
    assert!(
        again
            .stderr
            .contains("TFJob default/sleeper exists and has not finished; delete it first"),
        "{}",
        again.stderr
    );
    let running = server.wait_for("sleeper", "Running", |view| {
        state(view) == "Running" && view["replicas"][0]["pid"].is_i64()
    });
    let pid = running["replicas"][0]["pid"].as_i64().expect("pid");

    let suspended = cli(&["suspend", "tfjob", "sleeper"]);
    assert_eq!(
        (suspended.code, suspended.stdout.trim()),
        (Some(0), "tfjob.kubeflow.org/sleeper suspended"),
        "{}",
        suspended.stderr
    );
    assert!(
        !PathBuf::from(format!("/proc/{pid}")).exists(),
        "{pid} runs"
    );
    let table = cli(&["get"]);
    assert!(
        table.stdout.contains("tfjob/sleeper   Suspended"),
        "{}",
        table.stdout
    );

    let resumed = cli(&["resume", "sleeper"]);
    assert_eq!(
        (resumed.code, resumed.stdout.trim()),
        (Some(0), "tfjob.kubeflow.org/sleeper resumed"),
        "{}",
        resumed.stderr
    );
    let running = server.wait_for("sleeper", "running again", |view| {
        state(view) == "Running"
            && view["replicas"][0]["pid"]
                .as_i64()
                .is_some_and(|p| p != pid)
    });
    let pid = running["replicas"][0]["pid"].as_i64().expect("pid");

    let deleted = cli(&["delete", "sleeper"]);
    assert_eq!(
        (deleted.code, deleted.stdout.trim()),
        (Some(0), "tfjob.kubeflow.org/sleeper deleted"),
        "{}",
        deleted.stderr
    );
    assert!(
        !PathBuf::from(format!("/proc/{pid}")).exists(),
        "{pid} runs"
    );
    assert_eq!(server.job("sleeper").0, 404);
    let missing = cli(&["delete", "sleeper"]);
    assert_eq!(missing.code, Some(1));
    assert!(
        missing.stderr.contains("job \"sleeper\" not found"),
        "{}",
        missing.stderr
    );
}

#[test]
fn a_replica_past_its_memory_limit_is_reported_oomkilled_through_the_shim() {
    let server = Server::start(&["--gpus", "0"]);
    let manifest = job(
        "oom",
        0,
        "head -c 300000000 /dev/zero | tail -c 300000000 >/dev/null",
        "",
    )
    .replace("nvidia.com/gpu: 0", "memory: 64Mi");
    let (status, _) = server.request("POST", "/api/v1/jobs", Some(&manifest));
    assert_eq!(status, 201);
    let failed = server.wait_for("oom", "Failed", |view| {
        matches!(state(view), "Failed" | "Succeeded")
    });
    let events = failed["events"].as_array().expect("events");
    if events
        .iter()
        .any(|event| event["reason"] == "LimitsNotEnforced")
    {
        eprintln!("skipped: limits are not enforced here: {failed}");
        return;
    }
    assert_eq!(state(&failed), "Failed", "{failed}");
    assert_eq!(failed["replicas"][0]["exitCode"], 137, "{failed}");
    let oom_killed = events
        .iter()
        .filter(|event| event["reason"] == "OOMKilled")
        .filter_map(|event| event["message"].as_str())
        .collect::<Vec<_>>();
    assert_eq!(
        oom_killed,
        [
            "the kernel killed a process of pod oom-worker-0 for using more than its limit of \
             64Mi memory (OOMKilled); the replica exited with code 137: raise \
             `resources.limits.memory`, or use less"
        ],
        "{failed}"
    );
}

#[test]
fn the_cli_says_a_queued_jobs_place_as_the_dashboard_does_and_its_admission_is_an_event() {
    let server = Server::start(&["--gpus", "2", "--restart-backoff", "0s"]);
    let gate = tempfile::tempdir().expect("temp dir");
    let open = gate.path().join("open");
    let wait = format!("while [ ! -e {} ]; do sleep 0.05; done", open.display());
    let (status, _) = server.request("POST", "/api/v1/jobs", Some(&job("first", 2, &wait, "")));
    assert_eq!(status, 201);
    server.wait_for("first", "Running", |view| state(view) == "Running");
    for name in ["second", "third"] {
        let (status, _) = server.request("POST", "/api/v1/jobs", Some(&job(name, 2, "true", "")));
        assert_eq!(status, 201);
    }
    server.wait_for("third", "queued", |view| view["waiting"].is_string());
    // The head of the queue says "next in the queue" until the engine's first try at placing
    // it writes what it lacks; compare once that is said.
    server.wait_for("second", "told what it lacks", |view| {
        view["waiting"]
            .as_str()
            .is_some_and(|why| why.contains("waiting for 2 GPUs"))
    });
    let dir = server.state_dir().to_str().expect("UTF-8 path").to_owned();
    let cli = |args: &[&str]| {
        let mut all = vec!["--state-dir", dir.as_str()];
        all.extend_from_slice(args);
        harness::trainctl(&all)
    };
    // What the dashboard's Jobs page shows: `#N in queue: why`.
    let (_, summaries) = server.request("GET", "/api/v1/job-summaries", None);
    let shown = |name: &str| {
        let summary = summaries["items"]
            .as_array()
            .and_then(|items| items.iter().find(|item| item["name"] == name))
            .unwrap_or_else(|| panic!("{name} in {summaries}"));
        format!(
            "#{} in queue: {}",
            summary["queuePosition"],
            summary["waiting"].as_str().expect("why it waits")
        )
    };
    assert!(shown("third").starts_with("#2 in queue: "), "{summaries}");
    let got = cli(&["get", "-o", "wide"]);
    let rows = harness::table(&got.stdout);
    let reason = |name: &str| {
        rows.iter()
            .find(|row| row["NAME"] == format!("tfjob/{name}") || row["NAME"] == name)
            .map_or_else(|| panic!("{name} in {got}"), |row| row["REASON"].clone())
    };
    assert_eq!(reason("third"), shown("third"), "{got}");
    assert_eq!(reason("second"), shown("second"), "{got}");
    let described = cli(&["describe", "tfjob", "third"]);
    let waiting = format!("Waiting:      {}", shown("third"));
    assert!(
        described.stdout.lines().any(|line| line == waiting),
        "{described}"
    );

    std::fs::write(&open, "").expect("open the gate");
    let second = server.wait_for("second", "Succeeded", |view| state(view) == "Succeeded");
    let admitted: Vec<&str> = second["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|event| event["reason"] == "Admitted" && event["type"] == "Normal")
        .filter_map(|event| event["message"].as_str())
        .collect();
    assert!(
        matches!(admitted.as_slice(), [message] if message.starts_with("admitted after ")
            && message.ends_with(": GPUs 0,1")),
        "{second}"
    );
}
