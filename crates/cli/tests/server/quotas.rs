//! `ResourceQuota`s on the local control plane (`docs/server.md`, "Teams and quotas"): a job its
//! namespace's quota cannot hold waits with Kubernetes' message while another namespace's job
//! that fits its own quota runs; raising the quota admits it; a job larger than its quota fails
//! at once; `count/tfjobs.kubeflow.org` limits the jobs; quotas survive a restart. On a faked
//! machine (`--gpus 4`), with jobs that end when the test lets them (a file barrier).

use std::path::Path;
use std::time::{Duration, Instant};
use trainctl_cli_harness as harness;

use serde_json::Value;
use trainctl_cli_harness::server::{Server, state};

/// A TFJob of `namespace` with one worker asking for `gpus` GPUs, running `script`.
fn job(namespace: &str, name: &str, gpus: u32, script: &str) -> String {
    format!(
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: {name}
  namespace: {namespace}
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
                limits:
                  nvidia.com/gpu: {gpus}
"
    )
}

/// A quota `name` in `namespace` with these `spec.hard` entries.
fn quota(namespace: &str, name: &str, hard: &[(&str, &str)]) -> String {
    let hard: Vec<String> = hard
        .iter()
        .map(|(key, value)| format!("    {key}: \"{value}\""))
        .collect();
    let hard = hard.join("\n") + "\n";
    format!(
        "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  hard:\n{hard}"
    )
}

/// A script that runs until the file `gate` exists.
fn until(gate: &Path) -> String {
    format!(
        "while [ ! -e {} ]; do sleep 0.05; done",
        gate.to_str().expect("a UTF-8 path")
    )
}

fn submit(server: &Server, manifest: &str) -> Value {
    let (status, body) = server.request("POST", "/api/v1/jobs", Some(manifest));
    assert_eq!(status, 201, "{body}");
    body
}

fn view(server: &Server, namespace: &str, name: &str) -> Value {
    let (status, view) = server.request(
        "GET",
        &format!("/api/v1/namespaces/{namespace}/tfjobs/{name}"),
        None,
    );
    assert_eq!(status, 200, "{view}");
    view
}

/// Polls the job until `done` holds for its view.
fn wait_for(server: &Server, namespace: &str, name: &str, done: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let view = view(server, namespace, name);
        if done(&view) {
            return view;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{namespace}/{name}: never as expected; last {view}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn waiting(view: &Value) -> &str {
    view["waiting"].as_str().unwrap_or("")
}

/// The messages of the job's conditions.
fn condition_messages(view: &Value) -> Vec<String> {
    view["job"]["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|condition| condition["message"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_team_over_its_quota_waits_while_another_team_runs_until_the_quota_is_raised() {
    let gates = tempfile::tempdir().expect("tempdir");
    let gate = |name: &str| gates.path().join(name);
    let server = Server::start(&["--gpus", "4", "--cpus", "8", "--restart-backoff", "0s"]);
    let applied = submit(
        &server,
        &format!(
            "{}---\n{}---\n{}",
            quota("team-a", "team-a", &[("requests.nvidia.com/gpu", "2")]),
            quota("team-b", "team-b", &[("requests.nvidia.com/gpu", "2")]),
            job("team-a", "a1", 2, &until(&gate("a1"))),
        ),
    );
    assert_eq!(applied["resourceQuotas"][0]["action"], "created");
    assert_eq!(
        applied["resourceQuotas"][1]["quota"]["metadata"]["namespace"],
        "team-b"
    );
    wait_for(&server, "team-a", "a1", |view| state(view) == "Running");

    submit(&server, &job("team-a", "a2", 2, &until(&gate("a2"))));
    let exceeded = "exceeded quota: team-a, requested: requests.nvidia.com/gpu=2, used: \
                    requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=2; used by \
                    tfjob/team-a/a1";
    let a2 = wait_for(&server, "team-a", "a2", |view| waiting(view) == exceeded);
    assert_eq!(state(&a2), "Pending");
    // `get -o wide` says why, in Kubernetes' words.
    let dir = server.state_dir().to_str().expect("UTF-8 path").to_owned();
    let started = Instant::now();
    loop {
        let wide = harness::trainctl(&[
            "--state-dir",
            &dir,
            "get",
            "tfjob",
            "a2",
            "-n",
            "team-a",
            "-o",
            "wide",
        ]);
        if wide
            .stdout
            .lines()
            .nth(1)
            .is_some_and(|row| row.contains(exceeded))
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{}",
            wide.stdout
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // Team B's job, queued behind a2, fits its own quota and the 2 free GPUs: it runs.
    submit(&server, &job("team-b", "b1", 2, &until(&gate("b1"))));
    wait_for(&server, "team-b", "b1", |view| state(view) == "Running");
    assert_eq!(state(&view(&server, "team-a", "a2")), "Pending");

    let (status, team_a) = server.request(
        "GET",
        "/api/v1/namespaces/team-a/resourcequotas/team-a",
        None,
    );
    assert_eq!(status, 200, "{team_a}");
    assert_eq!(team_a["status"]["used"]["requests.nvidia.com/gpu"], "2");
    assert_eq!(team_a["status"]["hard"]["requests.nvidia.com/gpu"], "2");

    // Raised, the quota admits a2 once the machine has the GPUs (b1 ends).
    let raised = submit(
        &server,
        &quota("team-a", "team-a", &[("requests.nvidia.com/gpu", "4")]),
    );
    assert_eq!(raised["resourceQuotas"][0]["action"], "configured");
    let a2 = wait_for(&server, "team-a", "a2", |view| {
        !waiting(view).starts_with("exceeded")
    });
    assert_eq!(state(&a2), "Pending", "the machine's 4 GPUs are in use");
    std::fs::write(gate("b1"), "").expect("gate");
    wait_for(&server, "team-a", "a2", |view| state(view) == "Running");
    for name in ["a1", "a2"] {
        std::fs::write(gate(name), "").expect("gate");
    }
}

#[test]
fn a_job_larger_than_its_quota_fails_at_once() {
    let server = Server::start(&["--gpus", "4", "--restart-backoff", "0s"]);
    submit(
        &server,
        &format!(
            "{}---\n{}",
            quota("team-a", "team-a", &[("requests.nvidia.com/gpu", "2")]),
            job("team-a", "big", 4, "true"),
        ),
    );
    let big = wait_for(&server, "team-a", "big", |view| state(view) == "Failed");
    let expected = "exceeds quota: team-a, requested: requests.nvidia.com/gpu=4, limited: \
                    requests.nvidia.com/gpu=2; the job asks for more than the quota allows in \
                    all and can never run under it (raise spec.hard or ask for less)";
    assert!(
        condition_messages(&big)
            .iter()
            .any(|m| m.contains(expected)),
        "{big}"
    );
}

#[test]
fn count_of_tfjobs_limits_the_jobs_admitted() {
    let gates = tempfile::tempdir().expect("tempdir");
    let gate = gates.path().join("first");
    let server = Server::start(&["--gpus", "4", "--restart-backoff", "0s"]);
    submit(
        &server,
        &format!(
            "{}---\n{}",
            quota("team-a", "jobs", &[("count/tfjobs.kubeflow.org", "1")]),
            job("team-a", "first", 0, &until(&gate)),
        ),
    );
    wait_for(&server, "team-a", "first", |view| state(view) == "Running");
    submit(&server, &job("team-a", "second", 0, "true"));
    let exceeded = "exceeded quota: jobs, requested: count/tfjobs.kubeflow.org=1, used: \
                    count/tfjobs.kubeflow.org=1, limited: count/tfjobs.kubeflow.org=1; used by \
                    tfjob/team-a/first";
    wait_for(&server, "team-a", "second", |view| {
        waiting(view) == exceeded
    });
    std::fs::write(&gate, "").expect("gate");
    wait_for(&server, "team-a", "second", |view| {
        state(view) == "Succeeded"
    });
}

#[test]
fn quotas_survive_a_restart_and_can_be_deleted() {
    let server = Server::start(&["--gpus", "4"]);
    submit(
        &server,
        &quota(
            "team-a",
            "team-a",
            &[("requests.nvidia.com/gpu", "2"), ("pods", "3")],
        ),
    );
    let state_dir = server.kill();
    let server = Server::start_in(state_dir, &["--gpus", "4"]);
    let (status, list) = server.request("GET", "/api/v1/resourcequotas?namespace=team-a", None);
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["items"][0]["metadata"]["name"], "team-a");
    assert_eq!(list["items"][0]["spec"]["hard"]["pods"], "3");
    let path = "/api/v1/namespaces/team-a/resourcequotas/team-a";
    let (status, deleted) = server.request("DELETE", path, None);
    assert_eq!(status, 200, "{deleted}");
    let (status, gone) = server.request("GET", path, None);
    assert_eq!(status, 404, "{gone}");
}

#[test]
fn the_users_allreduce_job_runs_under_a_quota_of_its_namespace() {
    let seed = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata/fixtures/seeds/allreduce-tfjob.yaml"),
    )
    .expect("the seed");
    let image = "              image: tensorflow/tensorflow:2.12.0\n";
    assert!(seed.contains(image), "the seed changed: {seed}");
    let seed = seed.replace(
        image,
        &format!("{image}              command: [sh, -c, 'true']\n"),
    );
    let server = Server::start(&["--gpus", "4", "--restart-backoff", "0s"]);
    let namespace = "kubeflow-user-example-com";
    submit(
        &server,
        &format!(
            "{}---\n{seed}",
            quota(
                namespace,
                "kubeflow-user",
                &[
                    ("pods", "5"),
                    ("count/tfjobs.kubeflow.org", "1"),
                    ("requests.nvidia.com/gpu", "0")
                ],
            )
        ),
    );
    wait_for(&server, namespace, "allreduce-tfjob", |view| {
        state(view) == "Succeeded"
    });
}

#[test]
fn get_describe_and_delete_quota_as_kubectl_shows_them() {
    let gates = tempfile::tempdir().expect("tempdir");
    let server = Server::start(&["--gpus", "4", "--cpus", "8"]);
    let dir = server.state_dir().to_str().expect("UTF-8 path").to_owned();
    let cli = |args: &[&str]| {
        let mut all = vec!["--state-dir", dir.as_str()];
        all.extend_from_slice(args);
        harness::trainctl(&all)
    };
    let file = gates.path().join("team-a.yaml");
    std::fs::write(
        &file,
        format!(
            "{}---\n{}",
            quota(
                "team-a",
                "gpus",
                &[("requests.nvidia.com/gpu", "2"), ("limits.memory", "8Gi")]
            ),
            job("team-a", "a1", 1, &until(&gates.path().join("a1"))),
        ),
    )
    .expect("write the manifest");
    let submitted = cli(&["submit", "-f", file.to_str().expect("UTF-8 path")]);
    assert_eq!(
        submitted.stdout, "resourcequota/gpus created\ntfjob.kubeflow.org/a1 submitted (Pending)\n",
        "{}",
        submitted.stderr
    );
    wait_for(&server, "team-a", "a1", |view| state(view) == "Running");

    let got = cli(&["get", "quota", "-n", "team-a"]);
    assert_eq!(
        got.stdout,
        "NAME   REQUEST                        LIMIT\n\
         gpus   requests.nvidia.com/gpu: 1/2   limits.memory: 0/8Gi\n",
        "{}",
        got.stderr
    );
    let described = cli(&["describe", "resourcequota", "gpus", "-n", "team-a"]);
    assert_eq!(
        described.stdout,
        "Name:       gpus\nNamespace:  team-a\n\
         Resource                  Used   Hard\n\
         --------                  ----   ----\n\
         limits.memory             0      8Gi\n\
         requests.nvidia.com/gpu   1      2\n"
    );
    let node = cli(&["top", "node"]);
    assert!(
        node.stdout.ends_with(
            "Quotas:\n  NAMESPACE   QUOTA   RESOURCE                  USED   HARD   LEFT\n  \
             team-a      gpus    limits.memory             0      8Gi    8Gi\n  \
             team-a      gpus    requests.nvidia.com/gpu   1      2      1\n"
        ),
        "{}",
        node.stdout
    );
    let missing = cli(&["get", "quota", "nope", "-n", "team-a"]);
    assert_eq!(
        (missing.code, missing.stderr.as_str()),
        (
            Some(1),
            "error: resourcequota \"nope\" not found in namespace \"team-a\"\n"
        )
    );
    let deleted = cli(&["delete", "quota", "gpus", "-n", "team-a"]);
    assert_eq!(deleted.stdout, "resourcequota \"gpus\" deleted\n");
    let emptied = cli(&["get", "quotas", "-n", "team-a"]);
    assert_eq!(
        (
            emptied.code,
            emptied.stdout.as_str(),
            emptied.stderr.as_str()
        ),
        (Some(0), "", "No resources found in team-a namespace.\n")
    );
    std::fs::write(gates.path().join("a1"), "").expect("open the gate");
}

#[test]
fn run_says_it_does_not_apply_the_quotas_of_its_file() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let file = scratch.path().join("job.yaml");
    std::fs::write(
        &file,
        format!(
            "{}---\n{}",
            quota("default", "small", &[("pods", "1")]),
            job("default", "solo", 0, "true")
        ),
    )
    .expect("write the manifest");
    let shown = file.to_str().expect("UTF-8 path");
    let state = scratch.path().join("state");
    let run = harness::trainctl(&[
        "--state-dir",
        state.to_str().expect("UTF-8 path"),
        "run",
        "-q",
        "-f",
        shown,
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr.starts_with(&format!(
            "warning: {shown}: ResourceQuota small is enforced by `trainctl server` (submit the \
             file to it); `trainctl run` does not apply quotas\n"
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn lowering_a_quota_stops_no_running_job_and_holds_new_ones() {
    let gates = tempfile::tempdir().expect("tempdir");
    let gate = |name: &str| gates.path().join(name);
    let server = Server::start(&["--gpus", "4", "--cpus", "8"]);
    submit(
        &server,
        &format!(
            "{}---\n{}",
            quota("team-a", "gpus", &[("requests.nvidia.com/gpu", "2")]),
            job("team-a", "a1", 2, &until(&gate("a1"))),
        ),
    );
    wait_for(&server, "team-a", "a1", |view| state(view) == "Running");
    let lowered = submit(
        &server,
        &format!(
            "{}---\n{}",
            quota("team-a", "gpus", &[("requests.nvidia.com/gpu", "1")]),
            job("team-a", "a2", 1, &until(&gate("a2"))),
        ),
    );
    assert_eq!(lowered["resourceQuotas"][0]["action"], "configured");
    let exceeded = "exceeded quota: gpus, requested: requests.nvidia.com/gpu=1, used: \
                    requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=1; used by \
                    tfjob/team-a/a1";
    wait_for(&server, "team-a", "a2", |view| waiting(view) == exceeded);
    assert_eq!(state(&view(&server, "team-a", "a1")), "Running");
    // a1 ends: the namespace uses nothing, and a2 fits the lowered quota.
    std::fs::write(gate("a1"), "").expect("gate");
    wait_for(&server, "team-a", "a2", |view| state(view) == "Running");
    std::fs::write(gate("a2"), "").expect("gate");
}
