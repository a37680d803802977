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
