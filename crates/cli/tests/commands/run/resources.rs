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
    let message = "cannot run on this machine: the job can never start here: its replicas together need 2 GPUs but this machine has 1 GPU; lower their resource requests, run the job on a larger machine, or pretend this one is larger with --gpus 2";
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
fn every_reason_a_job_cannot_run_is_said_at_once() {
    let scratch = Scratch::new("all-reasons");
    let job = gpu_job("blocked", 2, "true").replace("- sh\n", "- no-such-program-xyz\n");
    assert!(job.contains("no-such-program-xyz"), "{job}");
    let manifest = scratch.write("job.yaml", &job);
    let run = scratch.run(&manifest, &["--gpus", "1"]);
    assert_eq!(run.code, Some(1), "{run}");
    let failed: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.starts_with("trainctl: Failed: "))
        .collect();
    assert_eq!(
        failed,
        [
            "trainctl: Failed: cannot run on this machine: the job can never start here: its \
          replicas together need 2 GPUs but this machine has 1 GPU; lower their resource \
          requests, run the job on a larger machine, or pretend this one is larger with --gpus \
          2; also, worker-0: command `no-such-program-xyz` not found on this machine (the \
          container image's files of image `tensorflow/tensorflow:2.16.1` are not available \
          locally; install it here or put it on PATH)"
        ],
        "{run}"
    );
    // `validate` says the same, each at its field, before anything runs.
    let validate = scratch.trainctl(&["validate", "-f", &manifest, "--gpus", "1"]);
    assert_eq!(validate.code, Some(1), "{validate}");
    assert_eq!(
        validate
            .stderr
            .lines()
            .map(|line| line
                .split_once(": cannot run on this machine: ")
                .map_or(line, |(_, m)| m))
            .collect::<Vec<_>>(),
        [
            "the job can never start here: its replicas together need 2 GPUs but this machine \
             has 1 GPU; lower their resource requests, run the job on a larger machine, or \
             pretend this one is larger with --gpus 2",
            "worker-0: command `no-such-program-xyz` not found on this machine (the container \
             image's files of image `tensorflow/tensorflow:2.16.1` are not available locally; \
             install it here or put it on PATH)",
            "1 job cannot run on this machine as written (for a cluster, check with `trainctl \
             --kube validate`)"
        ],
        "{validate}"
    );
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

/// Holds 300 MB at once (`tail` keeps what it has read): past a 64Mi limit.
const OVER_64MI: &str = "head -c 300000000 /dev/zero | tail -c 300000000 >/dev/null";

/// What `trainctl run` warns where this machine's cgroups cannot hold the replicas to limits.
const NOT_ENFORCED: &str = "limits are not enforced on this machine";

#[test]
fn a_replica_past_its_memory_limit_is_oom_killed_and_restarted_as_its_policy_says() {
    let scratch = Scratch::new("oom");
    // The first start goes past the limit; the second stays within it.
    let script = format!("[ -e oomed ] && exit 0\ntouch oomed\n{OVER_64MI}");
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "oom",
            &[],
            &[replicas("Worker", 1, "OnFailure", &script)
                .with("resources: {limits: {memory: 64Mi}}")],
        ),
    );
    let run = scratch.run(&manifest, &["-q"]);
    if run.stderr.contains(NOT_ENFORCED) {
        eprintln!("skipped: {run}");
        return;
    }
    assert_eq!(run.code, Some(0), "{run}");
    let said = "trainctl: the kernel killed a process of pod oom-worker-0 for using more than its \
                limit of 64Mi memory (OOMKilled); the replica exited with code 137: raise \
                `resources.limits.memory`, or use less\n";
    assert!(run.stderr.contains(said), "{run}");
    assert_eq!(
        outcomes(&run.stderr),
        expect_outcomes(&[("worker-0", "Succeeded", "0", 1)])
    );
    let events = scratch.trainctl(&["events", "oom"]);
    assert!(events.stdout.contains("Warning   OOMKilled"), "{events}");
}

#[test]
fn a_replica_that_ends_past_its_memory_limit_reads_oomkilled_with_exit_code_137() {
    let scratch = Scratch::new("oom-never");
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "oomnever",
            &[],
            &[replicas("Worker", 1, "Never", OVER_64MI)
                .with("resources: {limits: {memory: 64Mi}}")],
        ),
    );
    let run = scratch.run(&manifest, &["-q"]);
    if run.stderr.contains(NOT_ENFORCED) {
        eprintln!("skipped: {run}");
        return;
    }
    assert_eq!(run.code, Some(1), "{run}");
    let described = scratch.trainctl(&["describe", "tfjob", "oomnever"]);
    let row = described
        .stdout
        .lines()
        .find(|line| line.trim_start().starts_with("worker-0"))
        .unwrap_or_default()
        .split_whitespace()
        .take(4)
        .collect::<Vec<_>>();
    assert_eq!(
        row,
        ["worker-0", "Failed", "(OOMKilled)", "137"],
        "{described}"
    );
}

#[test]
fn a_replica_gets_no_more_cpu_time_than_its_limit() {
    let scratch = Scratch::new("cpu-limit");
    // Busy for 3 s of wall time, then the CPU time it and its children used (`times`).
    let script =
        "end=$$(( $$(date +%s) + 3 ))\nwhile [ $$(date +%s) -lt $$end ]; do :; done\ntimes";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "cpulimit",
            &[],
            &[replicas("Worker", 1, "Never", script).with("resources: {limits: {cpu: 200m}}")],
        ),
    );
    let run = scratch.run(&manifest, &["-q"]);
    if run.stderr.contains(NOT_ENFORCED) {
        eprintln!("skipped: {run}");
        return;
    }
    assert_eq!(run.code, Some(0), "{run}");
    let log = replica_log(&scratch, "cpulimit", "worker-0");
    // `0m0.040000s 0m0.010000s` for the shell, then for its children.
    let seconds: f64 = log
        .split_whitespace()
        .filter_map(|time| {
            let (minutes, seconds) = time.strip_suffix('s')?.split_once('m')?;
            Some(minutes.parse::<f64>().ok()? * 60.0 + seconds.parse::<f64>().ok()?)
        })
        .sum();
    // 200m of 3 s is 0.6 s; unlimited, the loop takes most of a core for the 3 s.
    assert!(seconds < 1.0, "{seconds} s of CPU in 3 s at 200m: {log}");
}

#[test]
fn a_user_who_cannot_write_cgroups_is_told_once_which_limits_are_not_enforced() {
    use std::os::unix::fs::PermissionsExt as _;
    let Some(setpriv) = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .find(|path| std::path::Path::new(path).exists())
    else {
        eprintln!("skipped: no setpriv to run trainctl as another user");
        return;
    };
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = status.lines().any(|line| {
        line.strip_prefix("Uid:")
            .is_some_and(|ids| ids.split_whitespace().nth(1) == Some("0"))
    });
    if !root {
        eprintln!("skipped: only root can run trainctl as another user");
        return;
    }
    let scratch = Scratch::new("limits-unenforced");
    let open = std::fs::Permissions::from_mode(0o777);
    std::fs::set_permissions(scratch.dir(), open).expect("open the scratch dir to nobody");
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "unlimited",
            &[],
            &[replicas("Worker", 2, "Never", "true")
                .with("resources: {limits: {memory: 64Mi, cpu: 200m}}")],
        ),
    );
    let mut command = std::process::Command::new(setpriv);
    command.args(["--reuid", "65534", "--regid", "65534", "--clear-groups"]);
    command.arg(trainctl_cli_harness::binary());
    let mut command = scratch.command_with(command, &["run", "-f", &manifest, "-q"]);
    command.env("HOME", scratch.dir());
    let run = trainctl_cli_harness::run_to_end(command);
    assert_eq!(run.code, Some(0), "{run}");
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.contains(NOT_ENFORCED))
        .collect();
    assert_eq!(warnings.len(), 1, "said once: {run}");
    assert!(
        warnings[0].starts_with(
            "trainctl: warning: the replicas' limits are not enforced on this machine (Worker \
             memory 64Mi, cpu 200m): a replica may use more than its limit, where a cluster \
             would throttle or kill it (OOMKilled); "
        ),
        "{run}"
    );
}

/// A cgroup v2 cgroup made at the hierarchy's root, with the memory and cpu controllers, as
/// `systemd-run --scope -p Delegate=yes` makes one; removed, with what is left in it, on drop.
struct DelegatedScope {
    dir: std::path::PathBuf,
}

impl DelegatedScope {
    /// `None` (said) where this system's cgroup v2 hierarchy has no memory controller to give,
    /// or cannot be written.
    fn make(name: &str) -> Option<DelegatedScope> {
        let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let root = table
            .lines()
            .find(|line| line.contains(" - cgroup2 "))
            .and_then(|line| line.split_whitespace().nth(4))
            .map(std::path::PathBuf::from);
        let Some(root) = root else {
            eprintln!("skipped: no cgroup v2 hierarchy here");
            return None;
        };
        let _ = std::fs::write(root.join("cgroup.subtree_control"), "+memory +cpu");
        let offered =
            std::fs::read_to_string(root.join("cgroup.subtree_control")).unwrap_or_default();
        if !offered.split_whitespace().any(|name| name == "memory") {
            eprintln!(
                "skipped: the memory controller is not in {}'s cgroup.subtree_control (a hybrid \
                 system's, or not root)",
                root.display()
            );
            return None;
        }
        let dir = root.join(format!("{name}.{}.scope", std::process::id()));
        std::fs::create_dir(&dir).expect("make the scope's cgroup");
        Some(DelegatedScope { dir })
    }
}

impl Drop for DelegatedScope {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("cgroup.kill"), "1");
        let children = std::fs::read_dir(&self.dir).into_iter().flatten().flatten();
        for child in children.filter(|entry| entry.path().is_dir()) {
            let _ = std::fs::remove_dir(child.path());
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[test]
fn a_trainctl_alone_in_a_delegated_cgroup_gives_its_replicas_their_limits() {
    // As `systemd-run --scope -p Delegate=yes trainctl run ...` starts it: alone in a cgroup
    // that has the controllers, which it can give only once it has moved out of it.
    let Some(scope) = DelegatedScope::make("delegated-test") else {
        return;
    };
    let scratch = Scratch::new("delegated");
    // The replica says its limits, then goes past the memory one.
    let script = format!(
        "c=/sys/fs/cgroup$$(cut -d: -f3 /proc/self/cgroup)\necho \"memory.max $$(cat $$c/memory.max)\"\necho \"cpu.max $$(cat $$c/cpu.max)\"\n{OVER_64MI}"
    );
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "delegated",
            &[],
            &[replicas("Worker", 1, "Never", &script)
                .with("resources: {limits: {memory: 64Mi, cpu: 200m}}")],
        ),
    );
    let mut command = std::process::Command::new("sh");
    command
        .args(["-c", "echo $$ > \"$0/cgroup.procs\" && exec \"$@\""])
        .arg(&scope.dir)
        .arg(trainctl_cli_harness::binary());
    let command = scratch.command_with(command, &["run", "-f", &manifest, "-q"]);
    let run = trainctl_cli_harness::run_to_end(command);
    assert!(!run.stderr.contains(NOT_ENFORCED), "{run}");
    assert_eq!(run.code, Some(1), "{run}");
    assert_eq!(
        replica_log(&scratch, "delegated", "worker-0"),
        "memory.max 67108864\ncpu.max 20000 100000\n"
    );
    let described = scratch.trainctl(&["describe", "tfjob", "delegated"]);
    assert!(described.stdout.contains("(OOMKilled)"), "{described}");
    // trainctl made room in the scope, and took its job's cgroups with it.
    let left: Vec<String> = std::fs::read_dir(&scope.dir)
        .expect("the scope")
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["trainctl.supervisor"]);
}
