//! 1–2. Restart policies and exit-code classes (docs/semantics.md §6.1), and backoffLimit.

use super::*;

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
    // The log file is appended to across restarts; `logs` marks where the replica restarted.
    let log = replica_log(&scratch, "onfailure", "worker-0");
    assert_eq!(runs_of(&log), ["first\n", "second\n"]);
    assert!(
        log.contains(" (the previous run exited with code 1) ---\n"),
        "{log}"
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
    // No TensorBoard event file: no progress to show (the examples' tests read real ones).
    assert_eq!(wide_column(&scratch, "PROGRESS"), "-");
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
    let runs = runs_of(&replica_log(&scratch, "always", "worker-0"));
    assert!(runs.len() >= 2, "{runs:?}");
    assert!(runs.iter().all(|run| run == "run\n"), "{runs:?}");
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
            runs_of(&replica_log(&scratch, "backoff", "worker-0")),
            ["attempt\n", "attempt\n", "attempt\n"],
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
