//! 6–7. Ctrl-C and SIGTERM stop every replica, and no replica outlives trainctl, even when
//! trainctl itself is killed.

use super::*;

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
    // A second later, the run says what it waits for, and until when.
    let waiting = "trainctl: waiting for worker-0 to stop: SIGKILL in ";
    let said = wait_for(
        "trainctl to say it waits for the grace period",
        SOON,
        || {
            let stderr = running.stderr();
            let rest = stderr.split(waiting).nth(1)?.to_owned();
            rest.contains('\n').then_some(rest)
        },
    );
    let (seconds, why) = said.split_once("s (").expect("seconds, then why");
    let seconds: u64 = seconds.parse().expect("whole seconds");
    assert!((27..=30).contains(&seconds), "{said}");
    assert!(
        why.starts_with(
            "the grace period, terminationGracePeriodSeconds; Ctrl-C again to kill now)\n"
        ),
        "{said}"
    );
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
