//! The shim that starts a server's replicas (`trainctl __shim`,
//! `trainctl_local::process::shim`), driven as a server drives it: through the reaper it is
//! connected to.
//!
//! A test binary of its own: the reaper makes this process a subreaper that waits for every
//! child, which would take the exit of the other tests' `trainctl` processes from them.

use std::path::Path;
use std::time::Duration;

use trainctl_local::process::logs::LogLimit;
use trainctl_local::process::shim;
use trainctl_local::process::{HelperCommand, Launch, Reaper, StartedProcess};

fn shim_helper() -> HelperCommand {
    HelperCommand {
        program: trainctl_cli_harness::binary().into(),
        args: vec!["__shim".into()],
    }
}

fn launch(dir: &Path, name: &str, script: &str) -> Launch {
    Launch {
        argv: vec!["sh".into(), "-c".into(), script.into()],
        env: vec![("REPLICA".into(), name.into())],
        working_dir: Some(dir.to_owned()),
        grace: Duration::from_secs(1),
        log_path: dir.join(format!("{name}.log")),
        log_limit: LogLimit::DEFAULT,
        prefix: name.into(),
        mounts: None,
        limits: trainctl_local::process::cgroup::Limits::default(),
    }
}

/// The replica's exit code, as the server receives it; a test that waits more than 10 s for it
/// fails.
fn exit_code(started: StartedProcess) -> i32 {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || sender.send(started.exit.blocking_recv()));
    receiver
        .recv_timeout(Duration::from_secs(10))
        .expect("the exit code arrives within 10 s")
        .expect("the exit code is delivered")
        .code
}

#[test]
fn every_replica_s_exit_code_reaches_the_server_and_its_exit_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let reaper = Reaper::start().expect("reaper");
    reaper
        .connect_shim(dir.path(), &shim_helper())
        .expect("the shim starts");
    // Replicas that exit at once: each exit may reach the shim before its start was answered.
    let started: Vec<(i32, StartedProcess)> = (0..100)
        .map(|code| {
            let replica = launch(
                dir.path(),
                &format!("worker-{code}"),
                &format!("exit {code}"),
            );
            let started = reaper
                .start_kept_replica(&replica, "job-uid")
                .expect("started");
            (code, started)
        })
        .collect();
    for (code, started) in started {
        assert_eq!(exit_code(started), code);
        let file = shim::exit_file(&dir.path().join(format!("worker-{code}.log")));
        assert_eq!(
            shim::recorded_exit(&file).map(|ended| ended.code),
            Some(code)
        );
    }
}

#[test]
fn a_replica_gets_its_env_working_dir_log_and_own_process_group() {
    let dir = tempfile::tempdir().expect("temp dir");
    let reaper = Reaper::start().expect("reaper");
    reaper
        .connect_shim(dir.path(), &shim_helper())
        .expect("the shim starts");
    let script = r#"echo "$REPLICA $TRAINCTL_JOB_UID $(pwd) $(ps -o pgid= $$ | tr -d ' ') $$"; echo oops >&2"#;
    let started = reaper
        .start_kept_replica(&launch(dir.path(), "chief-0", script), "uid-1")
        .expect("started");
    let pid = started.pid;
    assert_eq!(exit_code(started), 0);
    let log = std::fs::read_to_string(dir.path().join("chief-0.log")).expect("log");
    let cwd = dir.path().canonicalize().expect("canonical");
    assert_eq!(
        log,
        format!("chief-0 uid-1 {} {pid} {pid}\noops\n", cwd.display())
    );
}

#[test]
fn a_replica_killed_by_a_signal_exits_with_128_plus_its_number_and_its_group_ends() {
    let dir = tempfile::tempdir().expect("temp dir");
    let reaper = Reaper::start().expect("reaper");
    reaper
        .connect_shim(dir.path(), &shim_helper())
        .expect("the shim starts");
    // A child left in the group outlives its parent only until the shim reaps the parent.
    let script = "sleep 30 & echo $! > child; kill -TERM $$";
    let started = reaper
        .start_kept_replica(&launch(dir.path(), "ps-0", script), "uid-2")
        .expect("started");
    assert_eq!(exit_code(started), 143);
    let child = std::fs::read_to_string(dir.path().join("child")).expect("child pid");
    let child = Path::new("/proc").join(child.trim());
    // Killed, it comes back to this process (the subreaper), whose reaper reaps it.
    let gone = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(10));
        !child.exists()
    });
    assert!(gone, "the replica's group was not killed");
}

#[test]
fn a_command_that_cannot_start_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let reaper = Reaper::start().expect("reaper");
    reaper
        .connect_shim(dir.path(), &shim_helper())
        .expect("the shim starts");
    let mut replica = launch(dir.path(), "worker-0", "");
    replica.argv = vec!["/no/such/program".into()];
    let error = reaper
        .start_kept_replica(&replica, "uid-3")
        .expect_err("cannot start");
    assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
    // The shim goes on.
    let started = reaper
        .start_kept_replica(&launch(dir.path(), "worker-1", "exit 7"), "uid-3")
        .expect("started");
    assert_eq!(exit_code(started), 7);
}
