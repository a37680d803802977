//! `trainctl run` end to end: the job rules of docs/semantics.md §4–§7 and §9 (the local
//! runtime), one test per rule, with small `sh` replicas.
//!
//! Each test has its own scratch directory (state dir, manifests, and the working directory of
//! the replicas, which coordinate through files there) and finds its processes by a mark in
//! their environment (see `trainctl_cli_harness`). Nothing sleeps to wait: a test polls for the event it
//! needs (a file, a process, a line), with a timeout. Scripts write `$$$$` for the shell's
//! `$$` because the kubelet's `$(VAR)` expansion turns `$$` into `$`.
//!
//! The rules by theme in the modules below, the helpers they share here and in the CLI's test
//! harness (`trainctl_cli_harness`).

mod crash_loops;
mod ending;
mod env;
mod input;
mod keeping;
mod mxnet;
mod output;
mod resources;
mod restarts;
mod signals;
mod sizes;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde_json::Value;
use trainctl_api::JobKind;

use trainctl_cli_harness::{
    Run, Scratch, conditions, env_lines, expect_conditions, expect_counts, lines_after, ran_then,
    replica_counts, signal, summary, table, wait_for,
};

/// How long a test waits for something that takes milliseconds when all is well.
const SOON: Duration = Duration::from_secs(10);

/// One replica type of a TFJob built by [`tfjob`].
#[derive(Clone, Copy)]
struct Replicas<'a> {
    replica_type: &'a str,
    count: u32,
    policy: &'a str,
    /// What its `tensorflow` container runs, as `sh -c SCRIPT`.
    script: &'a str,
    /// More fields of the container (`env:`, `resources:`), YAML at the container's level.
    container: &'a str,
}

/// `count` replicas of `replica_type` with `restartPolicy: policy`, running `sh -c script`.
fn replicas<'a>(
    replica_type: &'a str,
    count: u32,
    policy: &'a str,
    script: &'a str,
) -> Replicas<'a> {
    Replicas {
        replica_type,
        count,
        policy,
        script,
        container: "",
    }
}

impl<'a> Replicas<'a> {
    /// The same, with more container fields.
    fn with(self, container: &'a str) -> Replicas<'a> {
        Replicas { container, ..self }
    }
}

/// Container fields giving the replica its index as `$INDEX`.
const INDEX_ENV: &str = "env:
- name: INDEX
  valueFrom: {fieldRef: {fieldPath: \"metadata.labels['training.kubeflow.org/replica-index']\"}}";

/// A TFJob named `name` whose replicas run `sh -c SCRIPT` in a `tensorflow` container, with a
/// grace period of 1 s; `spec` are extra lines under `spec:` (e.g. `runPolicy: {...}`).
fn tfjob(name: &str, spec: &[&str], replica_specs: &[Replicas<'_>]) -> String {
    job_of_kind(JobKind::TFJob, name, spec, replica_specs)
}

/// A job of `kind` named `name` whose replicas run `sh -c SCRIPT` in the kind's framework
/// container, with a grace period of 1 s; `spec` are extra lines under `spec:`.
fn job_of_kind(kind: JobKind, name: &str, spec: &[&str], replica_specs: &[Replicas<'_>]) -> String {
    let mut yaml =
        format!("apiVersion: kubeflow.org/v1\nkind: {kind}\nmetadata:\n  name: {name}\nspec:\n");
    let mut line = |indent: usize, text: &str| {
        writeln!(yaml, "{:indent$}{text}", "").expect("writing to a String cannot fail");
    };
    for text in spec {
        line(2, text);
    }
    line(2, &format!("{}:", kind.replica_specs_field()));
    // Not pulled here: any image does, one of the framework reads best.
    let image = match kind {
        JobKind::MXJob => "python:3.9-slim",
        _ => "tensorflow/tensorflow:2.16.1",
    };
    for replicas in replica_specs {
        line(4, &format!("{}:", replicas.replica_type));
        line(6, &format!("replicas: {}", replicas.count));
        line(6, &format!("restartPolicy: {}", replicas.policy));
        line(6, "template:");
        line(8, "spec:");
        line(10, "terminationGracePeriodSeconds: 1");
        line(10, "containers:");
        line(
            10,
            &format!("- name: {}", kind.default_container().unwrap_or("main")),
        );
        line(12, &format!("image: {image}"));
        for text in replicas.container.lines() {
            line(12, text);
        }
        for text in ["command:", "- sh", "- -c", "- |"] {
            line(12, text);
        }
        for text in replicas.script.lines() {
            line(14, text);
        }
    }
    yaml
}

/// A TFJob of one worker needing `gpus` GPUs, running `script`.
fn gpu_job(name: &str, gpus: u32, script: &str) -> String {
    let resources = format!("resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}");
    tfjob(
        name,
        &[],
        &[replicas("Worker", 1, "Never", script).with(&resources)],
    )
}

/// `(state, exit, restarts)` of each replica in the summary.
fn outcomes(stderr: &str) -> BTreeMap<String, (String, String, u32)> {
    summary(stderr)
        .into_iter()
        .map(|(replica, row)| (replica, (row.state, row.exit, row.restarts)))
        .collect()
}

fn expect_outcomes(
    expected: &[(&str, &str, &str, u32)],
) -> BTreeMap<String, (String, String, u32)> {
    expected
        .iter()
        .map(|&(replica, state, exit, restarts)| {
            (
                replica.to_owned(),
                (state.to_owned(), exit.to_owned(), restarts),
            )
        })
        .collect()
}

/// The env of the main container of pod `pod` in `trainctl render -f MANIFEST -o json`.
fn rendered_env(scratch: &Scratch, manifest: &str, pod: &str) -> BTreeMap<String, String> {
    let render = scratch.trainctl(&["render", "-f", manifest, "-o", "json"]);
    assert_eq!(render.code, Some(0), "{render}");
    let list = render.json();
    let item = list["items"]
        .as_array()
        .expect("a List")
        .iter()
        .find(|item| item["kind"] == "Pod" && item["metadata"]["name"] == pod)
        .unwrap_or_else(|| panic!("no pod {pod} rendered"));
    item["spec"]["containers"][0]["env"]
        .as_array()
        .expect("env")
        .iter()
        .map(|var| {
            (
                var["name"].as_str().expect("name").to_owned(),
                var["value"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// `trainctl logs NAME --replica REPLICA`, which must succeed.
fn replica_log(scratch: &Scratch, name: &str, replica: &str) -> String {
    let logs = scratch.trainctl(&["logs", name, "--replica", replica]);
    assert_eq!(logs.code, Some(0), "{logs}");
    logs.stdout
}

/// The runs of a replica's log as `logs` prints it: the text between the separator lines it
/// puts where the replica restarted (`--- worker-0: restart 1 at ... ---`), each separator's
/// words after the time checked against `restart N`.
fn runs_of(log: &str) -> Vec<String> {
    let mut runs = vec![String::new()];
    for line in log.split_inclusive('\n') {
        if let Some(separator) = line.strip_prefix("--- ")
            && separator.trim_end().ends_with(" ---")
        {
            let restart = format!(": restart {} at ", runs.len());
            assert!(separator.contains(&restart), "{line:?} in {log}");
            runs.push(String::new());
        } else if let Some(run) = runs.last_mut() {
            run.push_str(line);
        }
    }
    runs
}

/// `trainctl get tfjob NAME -o json`, or `None` if that failed (the store busy).
fn stored_job(scratch: &Scratch, name: &str) -> Option<Value> {
    let get = scratch.trainctl(&["get", "tfjob", name, "-o", "json"]);
    serde_json::from_str(&get.stdout).ok()
}

/// The value of the `-o wide` column `column` for the only job in the state dir.
fn wide_column(scratch: &Scratch, column: &str) -> String {
    let get = scratch.trainctl(&["get", "-o", "wide"]);
    assert_eq!(get.code, Some(0), "{get}");
    let rows = table(&get.stdout);
    assert_eq!(rows.len(), 1, "{get}");
    rows[0][column].clone()
}
