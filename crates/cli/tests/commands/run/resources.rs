//! 8–10. Resources: GPUs, admission.

use super::*;

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

#[test]
fn job_larger_than_the_machine_fails_at_once() {
    let scratch = Scratch::new("never-fits");
    let manifest = scratch.write("job.yaml", &gpu_job("toolarge", 2, "touch started"));
    let run = scratch.run(&manifest, &["-o", "json", "--gpus", "1"]);
    assert_eq!(run.code, Some(1), "{run}");
    let message = "the job can never start here: its replicas together need 2 GPUs but this machine has 1 GPU; lower their resource requests, run the job on a larger machine, or pretend this one is larger with --gpus 2";
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
    assert_eq!(
        stored.pointer("/status/startTime"),
        None,
        "b has not started"
    );
    let follow = assert_pending_is_visible(&scratch);
    // b waits 1.5 s more, so that a duration with the wait in it cannot pass for one without.
    std::thread::sleep(Duration::from_millis(1_500));
    std::fs::write(scratch.path("release"), "").expect("release job a");
    let a = a.finish(SOON);
    assert_eq!(a.code, Some(0), "{a}");
    let b = b.finish(SOON);
    assert_eq!(b.code, Some(0), "{b}");
    let follow = follow.finish(SOON);
    assert_eq!(
        (follow.code, follow.stdout.as_str()),
        (Some(0), "worker-0 | 0,1\n"),
        "{follow}"
    );
    assert_eq!(
        scratch.read("order").as_deref(),
        Some("a-start\na-end\nb-start\n")
    );
    assert_counted_from_admission(&b);
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

/// Job b waits for GPUs: `get -o wide` says `Pending` and why, and `logs -f` (which it starts,
/// and returns) says why it has no logs yet.
fn assert_pending_is_visible(scratch: &Scratch) -> trainctl_cli_harness::Running {
    let get = scratch.trainctl(&["get", "tfjob", "b", "-o", "wide"]);
    let rows = table(&get.stdout);
    assert_eq!(
        (rows[0]["STATE"].as_str(), rows[0]["DURATION"].as_str()),
        ("Pending", "-"),
        "{get}"
    );
    assert_eq!(rows[0]["REASON"], "waiting for 2 GPUs, 0 free", "{get}");
    let follow = scratch.spawn(&["logs", "b", "-f"], "follow");
    wait_for("logs -f to say why b waits", SOON, || {
        (follow.stderr()
            == "tfjob/b is Pending: waiting for 2 GPUs, 0 free; its logs follow once it is admitted\n")
            .then_some(())
    });
    follow
}

/// Job b, which waited, said when it was admitted and with what, and its duration counts from
/// then: in its `startTime`, and in the summary, as stored (whole seconds there).
fn assert_counted_from_admission(b: &Run) {
    // When it was admitted and what it got; its duration counts from then, as stored.
    let admitted: Vec<&str> = b
        .stderr
        .lines()
        .filter(|line| line.starts_with("trainctl: admitted after "))
        .collect();
    assert_eq!(admitted.len(), 1, "{b}");
    assert!(admitted[0].ends_with(": GPUs 0,1"), "{b}");
    let job = b.json();
    let time = |pointer: &str| -> jiff::Timestamp {
        job.pointer(pointer)
            .and_then(Value::as_str)
            .and_then(|text| text.parse().ok())
            .expect("a time")
    };
    let created = time("/status/conditions/0/lastTransitionTime");
    let started = time("/status/startTime");
    assert!(
        started > created,
        "b started at {started}, created at {created}"
    );
    // The summary's duration is the job's own, not the wait with it. The store keeps whole
    // seconds and the summary tenths, so the two may differ by a second and the rounding.
    let ran = time("/status/completionTime").duration_since(started);
    let said: f64 = b
        .stderr
        .lines()
        .find_map(|line| line.strip_prefix("trainctl: tfjob/b Succeeded after "))
        .and_then(|rest| rest.strip_suffix('s'))
        .and_then(|seconds| seconds.parse().ok())
        .expect("the summary's duration");
    assert!(
        (said - ran.as_secs_f64()).abs() <= 1.05,
        "{said} s against {ran}"
    );
    assert!(said < 1.5, "the wait counted: {said} s");
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
