//! 3–5. How a job ends: activeDeadlineSeconds, who decides success (docs/semantics.md §5.3),
//! and a PS failure.

use super::*;

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

#[test]
fn a_failed_job_says_which_replica_failed_and_how_in_its_row_and_description() {
    let scratch = Scratch::new("failed-reason");
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "broken",
            &[],
            &[
                replicas("Chief", 1, "Never", "sleep 30"),
                replicas("Worker", 1, "Never", "exit 3"),
            ],
        ),
    );
    let run = scratch.run(&manifest, &["-q"]);
    assert_eq!(run.code, Some(1), "{run}");
    assert_eq!(
        wide_column(&scratch, "REASON"),
        "worker-0 exited with code 3"
    );
    let described = scratch.trainctl(&["describe", "tfjob", "broken"]);
    assert!(
        described
            .stdout
            .lines()
            .any(|line| line == "Reason:       worker-0 exited with code 3"),
        "{described}"
    );
    // The chief, stopped when the job failed, is not the cause, and keeps no earlier code.
    let chief = described
        .stdout
        .lines()
        .find(|line| line.trim_start().starts_with("chief-0"))
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>();
    assert_eq!(chief, ["chief-0", "Stopped", "143"], "{described}");
}
