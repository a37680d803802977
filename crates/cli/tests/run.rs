//! `trainctl run` end to end: the job rules of docs/semantics.md §4–§7 and §9 (the local
//! runtime), one test per rule, with small `sh` replicas.
//!
//! Each test has its own scratch directory (state dir, manifests, and the working directory of
//! the replicas, which coordinate through files there) and finds its processes by a mark in
//! their environment (see `support`). Nothing sleeps to wait: a test polls for the event it
//! needs (a file, a process, a line), with a timeout. Scripts write `$$$$` for the shell's
//! `$$` because the kubelet's `$(VAR)` expansion turns `$$` into `$`.

#[path = "run/support.rs"]
mod support;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde_json::Value;

use support::{
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
    let mut yaml =
        format!("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: {name}\nspec:\n");
    let mut line = |indent: usize, text: &str| {
        writeln!(yaml, "{:indent$}{text}", "").expect("writing to a String cannot fail");
    };
    for text in spec {
        line(2, text);
    }
    line(2, "tfReplicaSpecs:");
    for replicas in replica_specs {
        line(4, &format!("{}:", replicas.replica_type));
        line(6, &format!("replicas: {}", replicas.count));
        line(6, &format!("restartPolicy: {}", replicas.policy));
        line(6, "template:");
        line(8, "spec:");
        line(10, "terminationGracePeriodSeconds: 1");
        line(10, "containers:");
        line(10, "- name: tensorflow");
        line(12, "image: tensorflow/tensorflow:2.16.1");
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

/// `trainctl logs NAME --replica REPLICA`, which must succeed.
fn replica_log(scratch: &Scratch, name: &str, replica: &str) -> String {
    let logs = scratch.trainctl(&["logs", name, "--replica", replica]);
    assert_eq!(logs.code, Some(0), "{logs}");
    logs.stdout
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

// 1. Restart policies and exit-code classes (docs/semantics.md §6.1).

#[test]
fn never_policy_fails_the_job_when_a_replica_exits_non_zero() {
    let scratch = Scratch::new("never");
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "never",
            &[],
            &[replicas("Worker", 1, "Never", "echo attempt\nexit 1")],
        ),
    );
    let run = scratch.run(&manifest, &["-q", "-o", "json"]);
    assert_eq!(run.code, Some(1), "{run}");
    let job = run.json();
    assert_eq!(
        conditions(&job),
        ran_then(
            "TFJob",
            "TFJob never is created.",
            "TFJob default/never is running.",
            (
                "Failed",
                "TFJob default/never has failed because 1 Worker replica(s) failed."
            )
        ),
    );
    assert_eq!(replica_counts(&job), expect_counts(&[("Worker", 0, 0, 1)]));
    assert_eq!(
        outcomes(&run.stderr),
        expect_outcomes(&[("worker-0", "Failed", "1", 0)])
    );
    assert_eq!(replica_log(&scratch, "never", "worker-0"), "attempt\n");
}

#[test]
fn on_failure_restarts_a_failed_replica_in_place() {
    let scratch = Scratch::new("on-failure");
    let script = "if [ -e failed-once ]; then echo second; exit 0; fi
touch failed-once
echo first
exit 1";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "onfailure",
            &[],
            &[replicas("Worker", 1, "OnFailure", script)],
        ),
    );
    let run = scratch.run(&manifest, &["-q", "-o", "json"]);
    assert_eq!(run.code, Some(0), "{run}");
    let job = run.json();
    assert_eq!(
        conditions(&job),
        ran_then(
            "TFJob",
            "TFJob onfailure is created.",
            "TFJob default/onfailure is running.",
            (
                "Succeeded",
                "TFJob default/onfailure successfully completed."
            )
        ),
    );
    assert_eq!(replica_counts(&job), expect_counts(&[("Worker", 0, 1, 0)]));
    assert!(
        run.stderr.contains(
            "trainctl: worker-0 exited with code 1; restarting it in 0.1s (restartPolicy OnFailure, restart 1)"
        ),
        "{run}"
    );
    assert_eq!(
        outcomes(&run.stderr),
        expect_outcomes(&[("worker-0", "Succeeded", "0", 1)])
    );
    // The log file is appended to across restarts.
    assert_eq!(
        replica_log(&scratch, "onfailure", "worker-0"),
        "first\nsecond\n"
    );
}

#[test]
fn get_wide_counts_in_place_restarts() {
    let scratch = Scratch::new("wide-restarts");
    let script = "if [ -e failed-once ]; then exit 0; fi
touch failed-once
exit 1";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob("wide", &[], &[replicas("Worker", 1, "OnFailure", script)]),
    );
    let run = scratch.run(&manifest, &["-q"]);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(summary(&run.stderr)["worker-0"].restarts, 1, "{run}");
    assert_eq!(wide_column(&scratch, "RESTARTS"), "1");
}

#[test]
fn always_restarts_a_replica_even_after_it_succeeds() {
    let scratch = Scratch::new("always");
    // The worker succeeds every time; the chief, which decides, ends once it saw two runs.
    let chief = r#"until [ "$(grep -c run runs 2>/dev/null)" -ge 2 ]; do sleep 0.01; done"#;
    let worker = "echo run >> runs\necho run\nexit 0";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "always",
            &[],
            &[
                replicas("Chief", 1, "Never", chief),
                replicas("Worker", 1, "Always", worker),
            ],
        ),
    );
    let run = scratch.run(&manifest, &["-q", "-o", "json"]);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(
        conditions(&run.json()),
        ran_then(
            "TFJob",
            "TFJob always is created.",
            "TFJob default/always is running.",
            ("Succeeded", "TFJob default/always successfully completed.")
        ),
    );
    assert!(summary(&run.stderr)["worker-0"].restarts >= 1, "{run}");
    let runs = replica_log(&scratch, "always", "worker-0");
    assert!(runs.lines().count() >= 2, "{runs}");
    assert!(runs.lines().all(|line| line == "run"), "{runs}");
}

#[test]
fn exit_code_policy_fails_the_job_on_codes_below_128() {
    for code in [1, 2, 127] {
        let scratch = Scratch::new("exit-code-permanent");
        let script = format!("echo attempt >> attempts\nexit {code}");
        let manifest = scratch.write(
            "job.yaml",
            &tfjob(
                "exitcode",
                &[],
                &[replicas("Worker", 1, "ExitCode", &script)],
            ),
        );
        let run = scratch.run(&manifest, &["-q", "-o", "json"]);
        assert_eq!(run.code, Some(1), "exit {code}: {run}");
        let job = run.json();
        assert_eq!(
            conditions(&job),
            ran_then(
                "TFJob",
                "TFJob exitcode is created.",
                "TFJob default/exitcode is running.",
                (
                    "Failed",
                    "TFJob default/exitcode has failed because 1 Worker replica(s) failed."
                )
            ),
            "exit {code}"
        );
        assert_eq!(
            scratch.read("attempts").as_deref(),
            Some("attempt\n"),
            "exit {code}: no retry"
        );
        assert_eq!(
            outcomes(&run.stderr),
            expect_outcomes(&[("worker-0", "Failed", &code.to_string(), 0)]),
            "exit {code}"
        );
    }
}

#[test]
fn exit_code_policy_recreates_replicas_on_codes_from_128() {
    // 128 + n is how a kill by signal n is reported; every code >= 128 is retried
    // (docs/semantics.md §6.1).
    let cases = [
        (
            "kill -KILL $$$$",
            137,
            "was ended by SIGKILL (exit code 137)",
        ),
        (
            "kill -TERM $$$$",
            143,
            "was ended by SIGTERM (exit code 143)",
        ),
        ("exit 128", 128, "exited with code 128"),
    ];
    for (fail, code, words) in cases {
        let scratch = Scratch::new("exit-code-retryable");
        let script = format!(
            "echo attempt >> attempts\nif [ -e failed-once ]; then exit 0; fi\ntouch failed-once\n{fail}"
        );
        let manifest = scratch.write(
            "job.yaml",
            &tfjob("retry", &[], &[replicas("Worker", 1, "ExitCode", &script)]),
        );
        let run = scratch.run(&manifest, &["-q", "-o", "json"]);
        assert_eq!(run.code, Some(0), "{code}: {run}");
        assert!(
            run.stderr
                .contains(&format!("trainctl: worker-0 {words}\n")),
            "{code}: {run}"
        );
        assert!(
            run.stderr.contains(
                "trainctl: Restarting: TFJob retry is restarting because 1 Worker replica(s) failed."
            ),
            "{code}: {run}"
        );
        let job = run.json();
        assert_eq!(
            conditions(&job),
            ran_then(
                "TFJob",
                "TFJob retry is created.",
                "TFJob default/retry is running.",
                ("Succeeded", "TFJob default/retry successfully completed.")
            ),
            "{code}"
        );
        assert_eq!(
            replica_counts(&job),
            expect_counts(&[("Worker", 0, 1, 0)]),
            "{code}"
        );
        assert_eq!(
            scratch.read("attempts").as_deref(),
            Some("attempt\nattempt\n"),
            "{code}"
        );
        // The pod was re-created, which the job's restart count keeps.
        assert_eq!(wide_column(&scratch, "RESTARTS"), "1", "{code}");
    }
}

// 2. backoffLimit.

#[test]
fn backoff_limit_fails_the_job_after_that_many_restarts() {
    // Restarts count whichever way they happen: in place (OnFailure) or by re-creating the
    // replica (ExitCode with a retryable code).
    for (policy, fail) in [("OnFailure", "exit 3"), ("ExitCode", "kill -KILL $$$$")] {
        let scratch = Scratch::new("backoff");
        let script = format!("echo attempt\n{fail}");
        let manifest = scratch.write(
            "job.yaml",
            &tfjob(
                "backoff",
                &["runPolicy: {backoffLimit: 2}"],
                &[replicas("Worker", 1, policy, &script)],
            ),
        );
        let run = scratch.run(&manifest, &["-q", "-o", "json"]);
        assert_eq!(run.code, Some(1), "{policy}: {run}");
        assert_eq!(
            conditions(&run.json()),
            ran_then(
                "TFJob",
                "TFJob backoff is created.",
                "TFJob default/backoff is running.",
                (
                    "Failed",
                    "Job backoff has failed because it has reached the specified backoff limit"
                )
            ),
            "{policy}"
        );
        // Two restarts allowed: three runs, and the third failure fails the job.
        assert_eq!(
            replica_log(&scratch, "backoff", "worker-0"),
            "attempt\nattempt\nattempt\n",
            "{policy}"
        );
        assert!(scratch.processes().is_empty(), "{policy}");
    }
}

#[test]
fn backoff_limit_failure_reports_the_replica_failed() {
    let scratch = Scratch::new("backoff-summary");
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "backoff",
            &["runPolicy: {backoffLimit: 1}"],
            &[replicas("Worker", 1, "OnFailure", "exit 3")],
        ),
    );
    let run = scratch.run(&manifest, &["-q"]);
    assert_eq!(run.code, Some(1), "{run}");
    let row = &summary(&run.stderr)["worker-0"];
    assert_eq!(
        (row.state.as_str(), row.exit.as_str()),
        ("Failed", "3"),
        "{run}"
    );
}

// 3. activeDeadlineSeconds.

#[test]
fn active_deadline_fails_the_job_on_time_and_stops_its_replicas() {
    let scratch = Scratch::new("deadline");
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "deadline",
            &["runPolicy: {activeDeadlineSeconds: 1}"],
            &[replicas("Worker", 1, "Never", "sleep 30")],
        ),
    );
    let started = Instant::now();
    let run = scratch.run(&manifest, &["-q", "-o", "json"]);
    let took = started.elapsed();
    assert_eq!(run.code, Some(1), "{run}");
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(5),
        "took {took:?}"
    );
    assert_eq!(
        conditions(&run.json()),
        ran_then(
            "TFJob",
            "TFJob deadline is created.",
            "TFJob default/deadline is running.",
            (
                "Failed",
                "Job deadline has failed because it was active longer than specified deadline"
            )
        ),
    );
    assert_eq!(summary(&run.stderr)["worker-0"].state, "Stopped", "{run}");
    assert!(scratch.processes().is_empty(), "{:?}", scratch.processes());
}

/// A TFJob `name` whose chief succeeds once its worker is up; the worker ignores `SIGTERM`, so
/// that stopping it takes its whole grace period (1 s).
fn chief_and_a_worker_that_ignores_sigterm(name: &str) -> String {
    let chief = "until [ -e worker-up ]; do sleep 0.01; done";
    let worker = "trap '' TERM\ntouch worker-up\nsleep 300";
    tfjob(
        name,
        &[],
        &[
            replicas("Chief", 1, "Never", chief),
            replicas("Worker", 1, "Never", worker),
        ],
    )
}

#[test]
fn a_replica_that_ignores_sigterm_is_killed_after_its_grace_period() {
    let scratch = Scratch::new("grace");
    let manifest = scratch.write(
        "job.yaml",
        &chief_and_a_worker_that_ignores_sigterm("grace"),
    );
    let started = Instant::now();
    let run = scratch.run(&manifest, &["-q"]);
    let took = started.elapsed();
    assert_eq!(run.code, Some(0), "{run}");
    // SIGTERM, `terminationGracePeriodSeconds: 1`, then SIGKILL.
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(4),
        "took {took:?}"
    );
    assert_eq!(
        outcomes(&run.stderr),
        expect_outcomes(&[
            ("chief-0", "Succeeded", "0", 0),
            ("worker-0", "Stopped", "137", 0),
        ])
    );
    assert!(scratch.processes().is_empty(), "{:?}", scratch.processes());
}

#[test]
fn the_outcome_is_stored_before_a_replica_has_used_its_grace_period() {
    let scratch = Scratch::new("outcome-first");
    let manifest = scratch.write(
        "job.yaml",
        &chief_and_a_worker_that_ignores_sigterm("patient").replace(
            "terminationGracePeriodSeconds: 1",
            "terminationGracePeriodSeconds: 30",
        ),
    );
    let mut running = scratch.spawn_run(&manifest, &["-q"], "run");
    // The chief's success decides the job; the worker ignores SIGTERM for 30 s.
    let stored = wait_for("the outcome in the store", SOON, || {
        stored_job(&scratch, "patient").filter(|job| {
            job.pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|all| {
                    all.iter()
                        .any(|c| c["type"] == "Succeeded" && c["status"] == "True")
                })
        })
    });
    assert!(running.is_running(), "{stored:#}");
    // A Ctrl-C while the replicas are stopped kills them at once; the job had succeeded.
    signal(running.pid(), "INT");
    let run = running.finish(SOON);
    assert_eq!(run.code, Some(0), "{run}");
    assert!(scratch.processes().is_empty(), "{:?}", scratch.processes());
}

// 4. Who decides success (docs/semantics.md §5.3).

#[test]
fn chief_success_decides_tfjob_and_stops_running_workers() {
    let scratch = Scratch::new("chief-decides");
    let chief = r#"until [ "$(grep -c up workers 2>/dev/null)" = 2 ]; do sleep 0.01; done"#;
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "chief",
            &[],
            &[
                replicas("Chief", 1, "Never", chief),
                replicas("Worker", 2, "Never", "echo up >> workers\nexec sleep 300"),
            ],
        ),
    );
    let run = scratch.run(&manifest, &["-q", "-o", "json"]);
    assert_eq!(run.code, Some(0), "{run}");
    let job = run.json();
    assert_eq!(
        conditions(&job),
        ran_then(
            "TFJob",
            "TFJob chief is created.",
            "TFJob default/chief is running.",
            ("Succeeded", "TFJob default/chief successfully completed.")
        ),
    );
    // Replicas still running when the deciders succeeded count as succeeded (as upstream).
    assert_eq!(
        replica_counts(&job),
        expect_counts(&[("Chief", 0, 1, 0), ("Worker", 0, 2, 0)])
    );
    assert_eq!(
        outcomes(&run.stderr),
        expect_outcomes(&[
            ("chief-0", "Succeeded", "0", 0),
            ("worker-0", "Stopped", "143", 0),
            ("worker-1", "Stopped", "143", 0),
        ])
    );
    assert!(scratch.processes().is_empty(), "{:?}", scratch.processes());
}

#[test]
fn all_workers_policy_waits_for_every_worker() {
    let scratch = Scratch::new("all-workers");
    // Worker 0 succeeds at once; worker 1 only when the test releases it.
    let script = r#"if [ "$INDEX" = 0 ]; then echo done; exit 0; fi
until [ -e release ]; do sleep 0.01; done
echo released"#;
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "allworkers",
            &["successPolicy: AllWorkers"],
            &[replicas("Worker", 2, "Never", script).with(INDEX_ENV)],
        ),
    );
    let running = scratch.spawn_run(&manifest, &["-q", "-o", "json"], "run");
    // The engine has seen worker 0 succeed while worker 1 runs: the job must go on.
    let seen = wait_for("worker 0 to be counted as succeeded", SOON, || {
        let job = stored_job(&scratch, "allworkers")?;
        let workers = job.pointer("/status/replicaStatuses/Worker")?;
        (workers["active"] == 1 && workers["succeeded"] == 1).then_some(job)
    });
    let last = conditions(&seen).pop().expect("a condition");
    assert_eq!(
        (last.0.as_str(), last.1.as_str()),
        ("Running", "True"),
        "{seen:#}"
    );
    std::fs::write(scratch.path("release"), "").expect("release worker 1");
    let run = running.finish(SOON);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(
        conditions(&run.json()),
        ran_then(
            "TFJob",
            "TFJob allworkers is created.",
            "TFJob default/allworkers is running.",
            (
                "Succeeded",
                "TFJob default/allworkers successfully completed."
            )
        ),
    );
    assert_eq!(
        outcomes(&run.stderr),
        expect_outcomes(&[
            ("worker-0", "Succeeded", "0", 0),
            ("worker-1", "Succeeded", "0", 0),
        ])
    );
    assert_eq!(
        replica_log(&scratch, "allworkers", "worker-1"),
        "released\n"
    );
}

#[test]
fn worker_zero_decides_tfjob_without_chief() {
    let scratch = Scratch::new("worker-zero");
    let script = r#"if [ "$INDEX" = 0 ]; then
  until [ -e worker-1-up ]; do sleep 0.01; done
  exit 0
fi
touch worker-1-up
exec sleep 300"#;
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "workerzero",
            &[],
            &[replicas("Worker", 2, "Never", script).with(INDEX_ENV)],
        ),
    );
    let run = scratch.run(&manifest, &["-q", "-o", "json"]);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(
        conditions(&run.json()),
        ran_then(
            "TFJob",
            "TFJob workerzero is created.",
            "TFJob default/workerzero is running.",
            (
                "Succeeded",
                "TFJob default/workerzero successfully completed."
            )
        ),
    );
    assert_eq!(
        outcomes(&run.stderr),
        expect_outcomes(&[
            ("worker-0", "Succeeded", "0", 0),
            ("worker-1", "Stopped", "143", 0),
        ])
    );
}

// 5. A PS failure fails a TFJob.

#[test]
fn ps_failure_under_never_fails_tfjob() {
    let scratch = Scratch::new("ps-fails");
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "psfail",
            &[],
            &[
                replicas("Chief", 1, "Never", "exec sleep 300"),
                replicas(
                    "PS",
                    1,
                    "Never",
                    "until [ -e worker-up ]; do sleep 0.01; done\nexit 1",
                ),
                replicas("Worker", 1, "Never", "touch worker-up\nexec sleep 300"),
            ],
        ),
    );
    let run = scratch.run(&manifest, &["-q", "-o", "json"]);
    assert_eq!(run.code, Some(1), "{run}");
    let job = run.json();
    assert_eq!(
        conditions(&job),
        ran_then(
            "TFJob",
            "TFJob psfail is created.",
            "TFJob default/psfail is running.",
            (
                "Failed",
                "TFJob default/psfail has failed because 1 PS replica(s) failed."
            )
        ),
    );
    assert_eq!(
        outcomes(&run.stderr),
        expect_outcomes(&[
            ("chief-0", "Stopped", "143", 0),
            ("ps-0", "Failed", "1", 0),
            ("worker-0", "Stopped", "143", 0),
        ])
    );
    assert!(scratch.processes().is_empty(), "{:?}", scratch.processes());
}

// 6. Ctrl-C and SIGTERM stop every replica.

/// Starts a job of two replicas, each with a child in the background, sends `signal_name` to
/// `trainctl run` once all four `sleep`s run, and checks the exit and that nothing is left.
fn stopping_signal_stops_every_replica(signal_name: &str, exit: i32, words: &str) {
    let scratch = Scratch::new(&format!("sig{signal_name}"));
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "stopme",
            &[],
            &[replicas("Worker", 2, "Never", "sleep 300 &\nsleep 300")],
        ),
    );
    let running = scratch.spawn_run(&manifest, &["-q", "-o", "json"], "run");
    wait_for("four sleeps", SOON, || {
        (scratch.processes_named("sleep").len() == 4).then_some(())
    });
    signal(running.pid(), signal_name);
    let run = running.finish(SOON);
    assert_eq!(run.code, Some(exit), "{run}");
    assert!(scratch.processes().is_empty(), "{:?}", scratch.processes());
    let interrupted = format!("TFJob stopme was interrupted ({words}); its replicas were stopped.");
    assert_eq!(
        conditions(&run.json()),
        expect_conditions(&[
            (
                "Created",
                "True",
                "TFJobCreated",
                "TFJob stopme is created."
            ),
            (
                "Running",
                "False",
                "TFJobRunning",
                "TFJob default/stopme is running."
            ),
            ("Failed", "True", "Interrupted", &interrupted),
        ])
    );
    let rows = summary(&run.stderr);
    for replica in ["worker-0", "worker-1"] {
        assert_eq!(rows[replica].state, "Stopped", "{run}");
    }
    let get = scratch.trainctl(&["get"]);
    assert_eq!(table(&get.stdout)[0]["STATE"], "Failed", "{get}");
}

#[test]
fn ctrl_c_stops_every_replica_and_exits_130() {
    stopping_signal_stops_every_replica("INT", 130, "SIGINT");
}

#[test]
fn sigterm_stops_every_replica_and_exits_143() {
    stopping_signal_stops_every_replica("TERM", 143, "SIGTERM");
}

#[test]
fn second_ctrl_c_kills_the_replicas_at_once() {
    let scratch = Scratch::new("second-ctrl-c");
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "stubborn",
            &[],
            &[replicas("Worker", 1, "Never", "trap '' TERM\nsleep 300")],
        )
        .replace(
            "terminationGracePeriodSeconds: 1",
            "terminationGracePeriodSeconds: 30",
        ),
    );
    let running = scratch.spawn_run(&manifest, &["-q"], "run");
    wait_for("the replica's sleep", SOON, || {
        (scratch.processes_named("sleep").len() == 1).then_some(())
    });
    signal(running.pid(), "INT");
    let stopping = "trainctl: interrupted (Ctrl-C): stopping every replica (press Ctrl-C again to kill them now)\n";
    wait_for("trainctl to start stopping the replicas", SOON, || {
        running.stderr().contains(stopping).then_some(())
    });
    let second = Instant::now();
    signal(running.pid(), "INT");
    let run = running.finish(SOON);
    assert_eq!(run.code, Some(130), "{run}");
    assert!(
        second.elapsed() < Duration::from_secs(5),
        "{:?}",
        second.elapsed()
    );
    assert!(scratch.processes().is_empty(), "{:?}", scratch.processes());
    assert_eq!(
        outcomes(&run.stderr),
        expect_outcomes(&[("worker-0", "Stopped", "137", 0)])
    );
}

#[test]
fn ctrl_c_while_waiting_for_gpus_exits_130() {
    let scratch = Scratch::new("ctrl-c-pending");
    let first = scratch.write("a.yaml", &gpu_job("a", 1, "touch a-up\nexec sleep 300"));
    let second = scratch.write("b.yaml", &gpu_job("b", 1, "touch b-up"));
    let a = scratch.spawn_run(&first, &["-q", "--gpus", "1"], "a");
    wait_for("job a to start", SOON, || scratch.read("a-up"));
    let b = scratch.spawn_run(&second, &["-q", "-o", "json", "--gpus", "1"], "b");
    wait_for("job b to wait for the GPU", SOON, || {
        b.stderr()
            .contains("Pending: waiting for 1 GPU, 0 free.")
            .then_some(())
    });
    signal(b.pid(), "INT");
    let b = b.finish(SOON);
    assert_eq!(b.code, Some(130), "{b}");
    let last = conditions(&b.json()).pop().expect("a condition");
    assert_eq!(
        last,
        (
            "Failed".to_owned(),
            "True".to_owned(),
            "Interrupted".to_owned(),
            "TFJob b was interrupted (SIGINT); its replicas were stopped.".to_owned()
        )
    );
    assert!(scratch.read("b-up").is_none(), "job b started");
    signal(a.pid(), "INT");
    assert_eq!(a.finish(SOON).code, Some(130));
}

#[test]
fn interrupted_pending_job_drops_the_pending_words() {
    let scratch = Scratch::new("ctrl-c-pending-words");
    let first = scratch.write("a.yaml", &gpu_job("a", 1, "touch a-up\nexec sleep 300"));
    let second = scratch.write("b.yaml", &gpu_job("b", 1, "true"));
    let a = scratch.spawn_run(&first, &["-q", "--gpus", "1"], "a");
    wait_for("job a to start", SOON, || scratch.read("a-up"));
    let b = scratch.spawn_run(&second, &["-q", "-o", "json", "--gpus", "1"], "b");
    wait_for("job b to wait for the GPU", SOON, || {
        b.stderr()
            .contains("Pending: waiting for 1 GPU, 0 free.")
            .then_some(())
    });
    signal(b.pid(), "INT");
    let b = b.finish(SOON);
    signal(a.pid(), "INT");
    assert_eq!(a.finish(SOON).code, Some(130));
    assert_eq!(
        conditions(&b.json()),
        expect_conditions(&[
            ("Created", "True", "TFJobCreated", "TFJob b is created."),
            (
                "Failed",
                "True",
                "Interrupted",
                "TFJob b was interrupted (SIGINT); its replicas were stopped."
            ),
        ])
    );
}

// 7. No orphans, even when trainctl itself is killed.

#[test]
fn killed_trainctl_leaves_no_replica_process() {
    let scratch = Scratch::new("sigkill");
    // A child in the group, one that left it with setsid (double fork: its parent exits), and
    // one that ignores SIGTERM.
    let script = "sleep 300 &
(setsid sleep 300 &)
(trap '' TERM; exec sleep 300) &
sleep 300";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob("orphans", &[], &[replicas("Worker", 1, "Never", script)]),
    );
    let running = scratch.spawn_run(&manifest, &["-q"], "run");
    let trainctl = running.pid();
    let sleeps = wait_for("four sleeps", SOON, || {
        let sleeps = scratch.processes_named("sleep");
        (sleeps.len() == 4).then_some(sleeps)
    });
    let mut groups: Vec<u32> = sleeps.iter().map(|sleep| sleep.group).collect();
    groups.sort_unstable();
    groups.dedup();
    assert_eq!(groups.len(), 2, "one sleep left the group: {sleeps:?}");
    signal(trainctl, "KILL");
    let run = running.finish(SOON);
    assert_eq!(run.code, None, "{run}");
    // SIGTERM, the grace period of 1 s, then SIGKILL: well within 5 s.
    wait_for(
        "every process of the job to end",
        Duration::from_secs(5),
        || scratch.processes().is_empty().then_some(()),
    );
}

#[test]
fn the_watchdog_runs_only_when_idle_and_the_replicas_at_trainctls_priority() {
    const SCHED_IDLE: u32 = 5;
    let scratch = Scratch::new("watchdog-nice");
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "calm",
            &[],
            &[replicas("Worker", 1, "Never", "exec sleep 300")],
        ),
    );
    let running = scratch.spawn_run(&manifest, &["-q"], "run");
    // The watchdog is this binary started as `/proc/self/exe` (its name: `exe`); the replica's
    // shell has exec'd `sleep`. The watchdog moves itself to `SCHED_IDLE` as it starts (its
    // nice value, 19 from the spawn until then, is not used under that policy).
    let (trainctl, watchdog, replica) = wait_for(
        "the watchdog under SCHED_IDLE and the replica",
        SOON,
        || {
            let processes = scratch.processes();
            let named = |comm: &str| {
                let process = processes.iter().find(|process| process.comm == comm)?;
                Some((process.nice, process.policy))
            };
            let watchdog = named("exe").filter(|&(_, policy)| policy == SCHED_IDLE)?;
            Some((named("trainctl")?, watchdog, named("sleep")?))
        },
    );
    assert_eq!(watchdog.1, SCHED_IDLE);
    assert_eq!(replica, trainctl);
    assert_ne!(trainctl.1, SCHED_IDLE);
    signal(running.pid(), "INT");
    assert_eq!(running.finish(SOON).code, Some(130));
}

#[test]
fn processes_a_replica_leaves_behind_end_with_it() {
    let scratch = Scratch::new("leftovers");
    // The main process exits at once, leaving a child in its group and a detached one.
    let script = "sleep 300 &\n(setsid sleep 300 &)\necho started";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob("leftovers", &[], &[replicas("Worker", 1, "Never", script)]),
    );
    let run = scratch.run(&manifest, &["-q"]);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(replica_log(&scratch, "leftovers", "worker-0"), "started\n");
    assert!(scratch.processes().is_empty(), "{:?}", scratch.processes());
}

// 8–10. Resources: GPUs, admission.

#[test]
fn gpus_are_assigned_disjoint_lowest_first_per_replica() {
    let scratch = Scratch::new("gpus");
    let show = r#"echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}"
echo "NVIDIA_VISIBLE_DEVICES=${NVIDIA_VISIBLE_DEVICES-unset}""#;
    let chief =
        format!("{show}\nuntil [ \"$(grep -c up workers 2>/dev/null)\" = 2 ]; do sleep 0.01; done");
    let worker = format!("{show}\necho up >> workers");
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "gpus",
            &[],
            &[
                replicas("Chief", 1, "Never", &chief),
                replicas("Worker", 2, "Never", &worker)
                    .with("resources: {limits: {nvidia.com/gpu: 2}}"),
            ],
        ),
    );
    let run = scratch.run(&manifest, &["-q", "--gpus", "4"]);
    assert_eq!(run.code, Some(0), "{run}");
    let devices = |replica: &str| replica_log(&scratch, "gpus", replica);
    assert_eq!(
        devices("worker-0"),
        "CUDA_VISIBLE_DEVICES=0,1\nNVIDIA_VISIBLE_DEVICES=0,1\n"
    );
    assert_eq!(
        devices("worker-1"),
        "CUDA_VISIBLE_DEVICES=2,3\nNVIDIA_VISIBLE_DEVICES=2,3\n"
    );
    assert_eq!(
        devices("chief-0"),
        "CUDA_VISIBLE_DEVICES=\nNVIDIA_VISIBLE_DEVICES=none\n"
    );
    let rows = summary(&run.stderr);
    let gpus: Vec<&str> = ["chief-0", "worker-0", "worker-1"]
        .iter()
        .map(|replica| rows[*replica].gpus.as_str())
        .collect();
    assert_eq!(gpus, ["-", "0,1", "2,3"]);
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

#[test]
fn job_larger_than_the_machine_fails_at_once() {
    let scratch = Scratch::new("never-fits");
    let manifest = scratch.write("job.yaml", &gpu_job("toolarge", 2, "touch started"));
    let run = scratch.run(&manifest, &["-o", "json", "--gpus", "1"]);
    assert_eq!(run.code, Some(1), "{run}");
    let message = "the job can never start here: its replicas together need 2 GPUs but this machine has 1 GPU; lower their resource requests or run the job on a larger machine";
    assert_eq!(
        conditions(&run.json()),
        expect_conditions(&[
            (
                "Created",
                "True",
                "TFJobCreated",
                "TFJob toolarge is created."
            ),
            ("Failed", "True", "TFJobFailed", message),
        ])
    );
    assert!(
        run.stderr
            .contains(&format!("trainctl: Failed: {message}\n")),
        "{run}"
    );
    assert!(!scratch.path("started").exists(), "a replica started");
}

#[test]
fn job_waits_for_gpus_held_by_another_run() {
    let scratch = Scratch::new("gpu-queue");
    let first = scratch.write(
        "a.yaml",
        &gpu_job(
            "a",
            2,
            "echo \"$CUDA_VISIBLE_DEVICES\"\necho a-start >> order\nuntil [ -e release ]; do sleep 0.01; done\necho a-end >> order",
        ),
    );
    let second = scratch.write(
        "b.yaml",
        &gpu_job(
            "b",
            2,
            "echo \"$CUDA_VISIBLE_DEVICES\"\necho b-start >> order",
        ),
    );
    let a = scratch.spawn_run(&first, &["-q", "--gpus", "2"], "a");
    wait_for("job a to start", SOON, || {
        scratch.read("order").filter(|o| o == "a-start\n")
    });
    let mut b = scratch.spawn_run(&second, &["-q", "-o", "json", "--gpus", "2"], "b");
    let waiting = "TFJob b is created. Pending: waiting for 2 GPUs, 0 free.";
    wait_for("job b to say it waits for GPUs", SOON, || {
        b.stderr()
            .contains(&format!("trainctl: Created: {waiting}\n"))
            .then_some(())
    });
    // The store hears of a change within the runner's write delay, after the terminal.
    let stored = wait_for("job b's condition in the store", SOON, || {
        stored_job(&scratch, "b").filter(|job| job.pointer("/status/conditions").is_some())
    });
    assert_eq!(
        conditions(&stored),
        expect_conditions(&[("Created", "True", "TFJobCreated", waiting)])
    );
    assert!(b.is_running());
    assert_eq!(scratch.read("order").as_deref(), Some("a-start\n"));

    std::fs::write(scratch.path("release"), "").expect("release job a");
    let a = a.finish(SOON);
    assert_eq!(a.code, Some(0), "{a}");
    let b = b.finish(SOON);
    assert_eq!(b.code, Some(0), "{b}");
    assert_eq!(
        scratch.read("order").as_deref(),
        Some("a-start\na-end\nb-start\n")
    );
    // The GPUs a held are b's now.
    assert_eq!(replica_log(&scratch, "a", "worker-0"), "0,1\n");
    assert_eq!(replica_log(&scratch, "b", "worker-0"), "0,1\n");
    assert_eq!(
        conditions(&b.json()),
        ran_then(
            "TFJob",
            "TFJob b is created.",
            "TFJob default/b is running.",
            ("Succeeded", "TFJob default/b successfully completed.")
        ),
    );
}

#[test]
fn killed_run_holds_no_gpus_and_its_job_shows_lost() {
    let scratch = Scratch::new("killed-hold");
    let first = scratch.write("a.yaml", &gpu_job("a", 2, "touch a-up\nexec sleep 300"));
    let second = scratch.write("b.yaml", &gpu_job("b", 2, "echo \"$CUDA_VISIBLE_DEVICES\""));
    let a = scratch.spawn_run(&first, &["-q", "--gpus", "2"], "a");
    wait_for("job a to start", SOON, || scratch.read("a-up"));
    signal(a.pid(), "KILL");
    assert_eq!(a.finish(SOON).code, None);
    wait_for("job a's processes to end", SOON, || {
        scratch.processes().is_empty().then_some(())
    });
    let get = scratch.trainctl(&["get", "tfjob", "a"]);
    assert_eq!(table(&get.stdout)[0]["STATE"], "Lost", "{get}");

    let b = scratch.run(&second, &["--gpus", "2"]);
    assert_eq!(b.code, Some(0), "{b}");
    assert!(!b.stderr.contains("Pending"), "{b}");
    assert_eq!(replica_log(&scratch, "b", "worker-0"), "0,1\n");
}

// 11. The env a replica sees (docs/semantics.md §4, loopback addresses: §4.1).

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

#[test]
fn tf_config_matches_render_with_loopback_ports() {
    let scratch = Scratch::new("tf-config");
    let others = "echo \"$TF_CONFIG\"\necho up >> ready";
    let chief = "echo \"$TF_CONFIG\"\nuntil [ \"$(grep -c up ready 2>/dev/null)\" = 4 ]; do sleep 0.01; done";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "tfc",
            &[],
            &[
                replicas("Chief", 1, "Never", chief),
                replicas("Evaluator", 1, "Never", others),
                replicas("PS", 1, "Never", others),
                replicas("Worker", 2, "Never", others),
            ],
        ),
    );
    let run = scratch.run(&manifest, &["-q"]);
    assert_eq!(run.code, Some(0), "{run}");
    let rows = summary(&run.stderr);
    let slots = [
        ("chief", 0),
        ("evaluator", 0),
        ("ps", 0),
        ("worker", 0),
        ("worker", 1),
    ];
    let ports: Vec<u16> = slots
        .iter()
        .map(|(t, i)| rows[&format!("{t}-{i}")].port.expect("a port"))
        .collect();
    let mut distinct = ports.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), ports.len(), "ports {ports:?}");
    for (replica_type, index) in &slots {
        let slot = format!("{replica_type}-{index}");
        let local = replica_log(&scratch, "tfc", &slot);
        // Byte for byte the operator's TF_CONFIG, with loopback addresses for the services.
        let mut expected =
            rendered_env(&scratch, &manifest, &format!("tfc-{slot}"))["TF_CONFIG"].clone();
        for ((t, i), port) in slots.iter().zip(&ports) {
            expected = expected.replace(
                &format!("\"tfc-{t}-{i}.default.svc:2222\""),
                &format!("\"127.0.0.1:{port}\""),
            );
        }
        assert_eq!(local, format!("{expected}\n"), "{slot}");
        let config: Value = serde_json::from_str(&local).expect("TF_CONFIG is JSON");
        assert_eq!(
            config["task"],
            serde_json::json!({"type": replica_type, "index": index}),
            "{slot}"
        );
        assert_eq!(config["environment"], "cloud");
        assert_eq!(
            config["cluster"]["worker"],
            serde_json::json!([
                format!("127.0.0.1:{}", ports[3]),
                format!("127.0.0.1:{}", ports[4])
            ]),
        );
        assert_eq!(
            config["cluster"]
                .as_object()
                .expect("cluster")
                .keys()
                .collect::<Vec<_>>(),
            ["chief", "evaluator", "ps", "worker"],
        );
    }
}

#[test]
fn pytorch_env_matches_render_with_loopback_ports() {
    let scratch = Scratch::new("pytorch-env");
    let manifest = scratch.write(
        "job.yaml",
        r#"apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: pt
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.3.0
            command:
            - sh
            - -c
            - |
              env
              until [ "$(grep -c up ready 2>/dev/null)" = 2 ]; do sleep 0.01; done
    Worker:
      replicas: 2
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.3.0
            command: [sh, -c, "env; echo up >> ready"]
"#,
    );
    let run = scratch.run(&manifest, &["-q"]);
    assert_eq!(run.code, Some(0), "{run}");
    let master_port = summary(&run.stderr)["master-0"].port.expect("a port");
    let injected = |name: &str| {
        name == "PYTHONUNBUFFERED"
            || name == "WORLD_SIZE"
            || name == "RANK"
            || name.starts_with("MASTER_")
            || name.starts_with("PET_")
    };
    for (slot, rank) in [("master-0", "0"), ("worker-0", "1"), ("worker-1", "2")] {
        let seen: BTreeMap<String, String> = env_lines(&replica_log(&scratch, "pt", slot))
            .into_iter()
            .filter(|(name, _)| injected(name))
            .collect();
        let mut expected = rendered_env(&scratch, &manifest, &format!("pt-{slot}"));
        for (name, value) in &mut expected {
            match name.as_str() {
                "MASTER_ADDR" | "PET_MASTER_ADDR" => *value = "127.0.0.1".to_owned(),
                "MASTER_PORT" | "PET_MASTER_PORT" => *value = master_port.to_string(),
                _ => {}
            }
        }
        assert_eq!(seen, expected, "{slot}");
        // The set of docs/semantics.md §4.3 (nprocPerNode defaults to `auto`, so
        // PET_NPROC_PER_NODE is set).
        assert_eq!(
            seen.keys().map(String::as_str).collect::<Vec<_>>(),
            [
                "MASTER_ADDR",
                "MASTER_PORT",
                "PET_MASTER_ADDR",
                "PET_MASTER_PORT",
                "PET_NNODES",
                "PET_NODE_RANK",
                "PET_NPROC_PER_NODE",
                "PYTHONUNBUFFERED",
                "RANK",
                "WORLD_SIZE",
            ],
            "{slot}"
        );
        let value = |name: &str| seen[name].as_str();
        assert_eq!(
            [
                value("WORLD_SIZE"),
                value("RANK"),
                value("PET_NODE_RANK"),
                value("PET_NNODES"),
                value("PYTHONUNBUFFERED"),
            ],
            ["3", rank, rank, "3", "1"],
            "{slot}"
        );
    }
}

#[test]
fn env_value_from_configmaps_and_expansion_resolve_locally() {
    let scratch = Scratch::new("value-from");
    let manifest = scratch.write(
        "job.yaml",
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: ml
data:
  greeting: hello
---
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: envjob
  namespace: ml
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.16.1
            command:
            - sh
            - -c
            - |
              printf '%s\n' "$@"
              echo "POD_NAME=$POD_NAME"
              echo "POD_NAMESPACE=$POD_NAMESPACE"
              echo "POD_IP=$POD_IP"
              echo "GREETING=$GREETING"
              echo "ADDRESS=$ADDRESS"
              echo "TF_CONFIG=${TF_CONFIG-unset}"
            - sh
            args: ["$(GREETING) from $(POD_NAME)", "$$(POD_NAME)", "$(NOT_DEFINED)"]
            env:
            - name: POD_NAME
              valueFrom: {fieldRef: {fieldPath: metadata.name}}
            - name: POD_NAMESPACE
              valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
            - name: POD_IP
              valueFrom: {fieldRef: {fieldPath: status.podIP}}
            - name: GREETING
              valueFrom: {configMapKeyRef: {name: settings, key: greeting}}
            - name: ADDRESS
              value: "$(POD_IP):$(NOT_DEFINED)"
"#,
    );
    let run = scratch.run(&manifest, &["-q"]);
    assert_eq!(run.code, Some(0), "{run}");
    let logs = scratch.trainctl(&["logs", "-n", "ml", "envjob", "--replica", "worker-0"]);
    assert_eq!(logs.code, Some(0), "{logs}");
    assert_eq!(
        logs.stdout,
        "hello from envjob-worker-0
$(POD_NAME)
$(NOT_DEFINED)
POD_NAME=envjob-worker-0
POD_NAMESPACE=ml
POD_IP=127.0.0.1
GREETING=hello
ADDRESS=127.0.0.1:$(NOT_DEFINED)
TF_CONFIG=unset
"
    );
}

#[test]
fn replica_runs_with_trainctls_env_and_path_under_the_pods_env_in_its_working_dir() {
    use std::os::unix::fs::PermissionsExt as _;
    let scratch = Scratch::new("inherited-env");
    // A program only on the PATH trainctl has, as with an activated virtualenv.
    std::fs::create_dir_all(scratch.path("venv/bin")).expect("venv dir");
    std::fs::create_dir_all(scratch.path("work")).expect("work dir");
    let tool = scratch.write(
        "venv/bin/train-tool",
        "#!/bin/sh\necho \"FROM_TRAINCTL=$FROM_TRAINCTL\"\necho \"OVERRIDDEN=$OVERRIDDEN\"\npwd\n",
    );
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let work = scratch.path("work").display().to_string();
    let manifest = scratch.write(
        "job.yaml",
        &format!(
            r"apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: inherit
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.16.1
            command: [train-tool]
            workingDir: {work}
            env:
            - name: OVERRIDDEN
              value: from-the-pod
"
        ),
    );
    let path = format!(
        "{}:{}",
        scratch.path("venv/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = scratch.run_with_env(
        &manifest,
        &["-q"],
        &[
            ("PATH", &path),
            ("FROM_TRAINCTL", "outer"),
            ("OVERRIDDEN", "outer"),
        ],
    );
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(
        replica_log(&scratch, "inherit", "worker-0"),
        format!("FROM_TRAINCTL=outer\nOVERRIDDEN=from-the-pod\n{work}\n")
    );
}

// 12. Bad input fails before anything runs.

#[test]
fn missing_command_fails_at_once_naming_the_replica() {
    let scratch = Scratch::new("no-command");
    let manifest = scratch.write(
        "job.yaml",
        r"apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: nocmd
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.16.1
            command: [no-such-program-xyz]
",
    );
    let run = scratch.run(&manifest, &["-o", "json"]);
    assert_eq!(run.code, Some(1), "{run}");
    let message = "cannot run on this machine: worker-0: command `no-such-program-xyz` not found on this machine (the container image's files of image `tensorflow/tensorflow:2.16.1` are not available locally; install it here or put it on PATH); worker-1: command `no-such-program-xyz` not found on this machine (the container image's files of image `tensorflow/tensorflow:2.16.1` are not available locally; install it here or put it on PATH)";
    assert_eq!(
        conditions(&run.json()),
        expect_conditions(&[
            ("Created", "True", "TFJobCreated", "TFJob nocmd is created."),
            ("Failed", "True", "TFJobFailed", message),
        ])
    );
    assert!(
        run.stderr
            .contains(&format!("trainctl: Failed: {message}\n")),
        "{run}"
    );
}

#[test]
fn invalid_manifest_exits_2_with_file_line_and_column() {
    let scratch = Scratch::new("invalid");
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "invalid",
            &[],
            &[replicas("Worker", 1, "Never", "touch started")],
        )
        .replace("replicas: 1", "replicas: one"),
    );
    let run = scratch.run(&manifest, &["-o", "json"]);
    assert_eq!(run.code, Some(2), "{run}");
    assert_eq!(run.stdout, "", "{run}");
    assert!(
        run.stderr.contains(&format!(
            "{manifest}:8:17: spec.tfReplicaSpecs[Worker].replicas: invalid type: string \"one\", expected i32\n"
        )),
        "{run}"
    );
    assert!(!scratch.path("started").exists());
}

#[test]
fn manifest_without_exactly_one_job_exits_2() {
    let configmap = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n";
    let job = tfjob(
        "one",
        &[],
        &[replicas("Worker", 1, "Never", "touch started")],
    );
    let cases = [
        (
            configmap.to_owned(),
            "no training job in the manifest (expected a TFJob, PyTorchJob, XGBoostJob, PaddleJob, JAXJob or MPIJob)",
        ),
        (
            format!("{job}---\n{}", job.replace("name: one", "name: two")),
            "2 training jobs in the manifest; `trainctl run` runs one (split the file, or use `trainctl submit` with the server)",
        ),
    ];
    for (text, words) in cases {
        let scratch = Scratch::new("not-one-job");
        let manifest = scratch.write("job.yaml", &text);
        let run = scratch.run(&manifest, &["-o", "json"]);
        assert_eq!(run.code, Some(2), "{run}");
        assert_eq!(run.stdout, "", "{run}");
        assert!(
            run.stderr.contains(&format!("{manifest}: {words}\n")),
            "{run}"
        );
        assert!(!scratch.path("started").exists());
    }
}

#[test]
fn missing_configmap_fails_at_once_naming_the_replica_and_the_configmap() {
    let scratch = Scratch::new("no-configmap");
    let manifest = scratch.write(
        "job.yaml",
        r"apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: nocm
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.16.1
            command: [touch, started]
            env:
            - name: GREETING
              valueFrom: {configMapKeyRef: {name: settings, key: greeting}}
",
    );
    let run = scratch.run(&manifest, &["-o", "json"]);
    assert_eq!(run.code, Some(1), "{run}");
    let message = "cannot run on this machine: worker-0: replica nocm-worker-0: env GREETING: ConfigMap `settings` was not submitted with the job; pass its manifest too, or mark the reference `optional: true`";
    assert_eq!(
        conditions(&run.json()),
        expect_conditions(&[
            ("Created", "True", "TFJobCreated", "TFJob nocm is created."),
            ("Failed", "True", "TFJobFailed", message),
        ])
    );
    assert!(!scratch.path("started").exists());
}

// 13–14. What run prints, and what get and logs show afterwards.

#[test]
fn json_output_is_the_final_job_alone_and_get_and_logs_show_it_afterwards() {
    let scratch = Scratch::new("json-get-logs");
    let script = r#"if [ "$INDEX" = 1 ]; then echo "one of worker-1"; echo "two of worker-1" >&2; fi
echo "from $INDEX""#;
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "shown",
            // Every worker decides, so both logs are complete when the job ends.
            &["successPolicy: AllWorkers"],
            &[replicas("Worker", 2, "Never", script).with(INDEX_ENV)],
        ),
    );
    let run = scratch.run(&manifest, &["-o", "json"]);
    assert_eq!(run.code, Some(0), "{run}");
    let values: Vec<Value> = serde_json::Deserializer::from_str(&run.stdout)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|error| panic!("stdout is not JSON ({error}): {run}"));
    assert_eq!(values.len(), 1, "{run}");
    let job = &values[0];
    assert_eq!(
        (&job["kind"], &job["metadata"]["name"]),
        (&Value::from("TFJob"), &Value::from("shown"))
    );
    assert_eq!(
        conditions(job),
        ran_then(
            "TFJob",
            "TFJob shown is created.",
            "TFJob default/shown is running.",
            ("Succeeded", "TFJob default/shown successfully completed.")
        ),
    );
    // The replicas' output went to stderr, prefixed.
    for printed in ["from 0", "from 1", "worker-1 |"] {
        assert!(!run.stdout.contains(printed), "{run}");
    }
    assert_eq!(lines_after(&run.stderr, "worker-0 | "), ["from 0"]);
    assert_eq!(
        lines_after(&run.stderr, "worker-1 | "),
        ["one of worker-1", "two of worker-1", "from 1"]
    );

    let get = scratch.trainctl(&["get", "tfjob", "shown", "-o", "json"]);
    assert_eq!(get.code, Some(0), "{get}");
    assert_eq!(get.json()["status"], job["status"]);
    let listed = scratch.trainctl(&["get"]);
    let rows = table(&listed.stdout);
    assert_eq!(rows.len(), 1, "{listed}");
    assert_eq!(
        (rows[0]["NAME"].as_str(), rows[0]["STATE"].as_str()),
        ("tfjob/shown", "Succeeded")
    );

    assert_eq!(
        replica_log(&scratch, "shown", "worker-1"),
        "one of worker-1\ntwo of worker-1\nfrom 1\n"
    );
    let all = scratch.trainctl(&["logs", "shown"]);
    assert_eq!(all.code, Some(0), "{all}");
    assert_eq!(
        all.stdout,
        "worker-0 | from 0\nworker-1 | one of worker-1\nworker-1 | two of worker-1\nworker-1 | from 1\n"
    );
}

#[test]
fn running_a_job_again_replaces_its_record_and_removes_the_old_logs() {
    let scratch = Scratch::new("again");
    let job = |words: &str| {
        tfjob(
            "again",
            &[],
            &[replicas("Worker", 1, "Never", &format!("echo {words}"))],
        )
    };
    let first = scratch.write("first.yaml", &job("first run"));
    let second = scratch.write("second.yaml", &job("second run"));
    let uid = |run: &Run| {
        run.json()["metadata"]["uid"]
            .as_str()
            .expect("a uid")
            .to_owned()
    };
    let run = scratch.run(&first, &["-q", "-o", "json"]);
    assert_eq!(run.code, Some(0), "{run}");
    let old_logs = scratch.state_dir().join("logs").join(uid(&run));
    assert!(old_logs.join("worker-0.log").exists());

    let run = scratch.run(&second, &["-q", "-o", "json"]);
    assert_eq!(run.code, Some(0), "{run}");
    // The watchdog removes the replaced run's logs when the CPU is idle.
    wait_for("the first run's logs to be removed", SOON, || {
        (!old_logs.exists()).then_some(())
    });
    let new_logs = scratch.state_dir().join("logs").join(uid(&run));
    assert!(new_logs.join("worker-0.log").exists());
    assert_eq!(replica_log(&scratch, "again", "worker-0"), "second run\n");
    let get = scratch.trainctl(&["get"]);
    assert_eq!(table(&get.stdout).len(), 1, "{get}");
}

#[test]
fn a_quiet_run_shows_no_replica_output_and_keeps_all_of_it_in_order() {
    let scratch = Scratch::new("quiet-logs");
    // What the replica's stdout is: its log file itself, not a pipe to trainctl.
    let script = "readlink /proc/self/fd/1
for i in `seq 1 300`; do echo \"out $i\"; echo \"err $i\" >&2; done
printf 'no newline at the end'";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob("hushed", &[], &[replicas("Worker", 1, "Never", script)]),
    );
    let run = scratch.run(&manifest, &["-q"]);
    assert_eq!(run.code, Some(0), "{run}");
    assert!(!run.stderr.contains("worker-0 |"), "{run}");
    assert!(!run.stderr.contains("out 1\n"), "{run}");
    let log = replica_log(&scratch, "hushed", "worker-0");
    let (stdout, rest) = log.split_once('\n').expect("the first line");
    assert!(stdout.ends_with("/worker-0.log"), "stdout is {stdout}");
    let mut expected = String::new();
    for i in 1..=300 {
        write!(expected, "out {i}\nerr {i}\n").expect("writing to a String cannot fail");
    }
    expected.push_str("no newline at the end");
    assert_eq!(rest, expected);
}

#[test]
fn logs_keep_one_replicas_order_and_a_final_line_without_newline() {
    let scratch = Scratch::new("log-order");
    let script = "for i in `seq 1 300`; do echo \"out $i\"; echo \"err $i\" >&2; done
printf 'no newline at the end'";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob("ordered", &[], &[replicas("Worker", 1, "Never", script)]),
    );
    let run = scratch.run(&manifest, &[]);
    assert_eq!(run.code, Some(0), "{run}");
    let mut expected = String::new();
    for i in 1..=300 {
        write!(expected, "out {i}\nerr {i}\n").expect("writing to a String cannot fail");
    }
    expected.push_str("no newline at the end");
    assert_eq!(replica_log(&scratch, "ordered", "worker-0"), expected);
    let streamed = lines_after(&run.stderr, "worker-0 | ").join("\n");
    assert_eq!(streamed, expected);
    let all = scratch.trainctl(&["logs", "ordered"]);
    assert!(
        all.stdout.ends_with(
            "worker-0 | out 300\nworker-0 | err 300\nworker-0 | no newline at the end\n"
        ),
        "{all}"
    );
}
