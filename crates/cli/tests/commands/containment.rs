//! No process outlives trainctl, whatever it does to escape: a replica that starts
//! `(env -i setsid sleep N &)` leaves its process group and session (`setsid`), its parent (the
//! subshell exits at once) and its environment, the job's marker with it (`env -i`). Each replica
//! runs in a cgroup of its own, so that `sleep` is still found and stopped: after Ctrl-C, after a
//! `SIGKILL` of `trainctl run` (by its watchdog), after the server's `SIGTERM`, and when the job
//! has just finished, under `run` and under the server.
//!
//! These need a cgroup v2 hierarchy that trainctl may write to, as root has (CI runs as root);
//! elsewhere they say so and pass, since trainctl falls back to process groups and markers.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use trainctl_cli_harness::server::{Server, state};

/// How long a test waits for what takes milliseconds when all is well.
const SOON: Duration = Duration::from_secs(10);

/// No process.
const NONE: Vec<u32> = Vec::new();

/// A replica's wait until its escapee runs.
const UNTIL_ESCAPED: &str = "while [ ! -e escaped ]; do sleep 0.01; done";

/// The `sleep` a replica lets escape, known by its unique duration.
struct Escapee {
    seconds: String,
}

impl Escapee {
    fn new() -> Escapee {
        static COUNT: AtomicU32 = AtomicU32::new(0);
        Escapee {
            seconds: format!(
                "9{}{}",
                std::process::id(),
                COUNT.fetch_add(1, Ordering::Relaxed)
            ),
        }
    }

    /// A replica's script: lets the `sleep` escape (which touches `escaped` in the replica's
    /// working directory first), then does `then`.
    fn script(&self, then: &str) -> String {
        format!(
            "(env -i setsid sh -c \"touch escaped; exec sleep {}\" &); {then}",
            self.seconds
        )
    }

    /// The escaped `sleep`s that live (zombies excluded).
    fn alive(&self) -> Vec<u32> {
        let wanted = format!("sleep\0{}\0", self.seconds);
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|line| line == wanted.as_bytes())
                    && std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                        stat.rsplit_once(") ")
                            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
                    })
            })
            .collect()
    }

    fn wait_until_started(&self) {
        wait_until("the escaped sleep starts", || !self.alive().is_empty());
    }
}

impl Drop for Escapee {
    fn drop(&mut self) {
        // A failed test must not leave its sleep behind.
        for pid in self.alive() {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < SOON, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether trainctl can give replicas cgroups here; says why not when it cannot.
fn cgroups_offered() -> bool {
    let mounted = std::fs::read_to_string("/proc/self/mountinfo")
        .is_ok_and(|table| table.lines().any(|line| line.contains(" - cgroup2 ")));
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .any(|line| line.split_whitespace().take(3).eq(["Uid:", "0", "0"]))
    });
    if !(mounted && root) {
        eprintln!("skipped: needs a cgroup v2 hierarchy trainctl may write to (root here)");
    }
    mounted && root
}

/// A TFJob of one worker running `script` in `dir`, stopped within a second.
fn job(name: &str, dir: &Path, script: &str) -> String {
    format!(
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: {name}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          terminationGracePeriodSeconds: 1
          containers:
            - name: tensorflow
              image: busybox
              workingDir: {dir}
              command: [sh, -c, '{script}']
",
        dir = dir.display()
    )
}

/// `trainctl run -q -f MANIFEST` on a state directory of `scratch`, in the background.
fn spawn_run(scratch: &Path, manifest: &str) -> Child {
    let file = scratch.join("job.yaml");
    std::fs::write(&file, manifest).expect("write the manifest");
    Command::new(trainctl_cli_harness::binary())
        .arg("--state-dir")
        .arg(scratch.join("state"))
        .args(["run", "-q", "-f"])
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .env("TRAINCTL_GPUS", "0")
        .spawn()
        .expect("trainctl starts")
}

fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -{signal} {pid}");
}

/// A test's scratch directory and escapee, where trainctl can give replicas cgroups.
fn setup() -> Option<(tempfile::TempDir, Escapee)> {
    cgroups_offered().then(|| (tempfile::tempdir().expect("scratch"), Escapee::new()))
}

/// `trainctl run` of a job `name` whose replica lets its escapee go, then runs `then`.
fn run_escaping(scratch: &Path, escapee: &Escapee, name: &str, then: &str) -> Child {
    spawn_run(scratch, &job(name, scratch, &escapee.script(then)))
}

/// A server running a job `name` whose replica lets its escapee go, then runs `then`.
fn serve_escaping(scratch: &Path, escapee: &Escapee, name: &str, then: &str) -> Server {
    let server = Server::start(&[]);
    let manifest = job(name, scratch, &escapee.script(then));
    let (status, body) = server.request("POST", "/api/v1/jobs", Some(&manifest));
    assert_eq!(status, 201, "{body}");
    server
}

#[test]
fn ctrl_c_of_run_stops_what_a_replica_let_escape() {
    let Some((scratch, escapee)) = setup() else {
        return;
    };
    let mut run = run_escaping(scratch.path(), &escapee, "ctrlc", "sleep 300");
    escapee.wait_until_started();
    signal(run.id(), "INT");
    let status = run.wait().expect("trainctl exits");
    assert_eq!(status.code(), Some(130));
    assert_eq!(escapee.alive(), NONE, "alive after trainctl exited");
}

#[test]
fn the_watchdog_of_a_killed_run_stops_what_a_replica_let_escape() {
    let Some((scratch, escapee)) = setup() else {
        return;
    };
    let mut run = run_escaping(scratch.path(), &escapee, "killed", "sleep 300");
    escapee.wait_until_started();
    signal(run.id(), "KILL");
    run.wait().expect("trainctl is reaped");
    wait_until("the watchdog stops the escaped sleep", || {
        escapee.alive().is_empty()
    });
}

#[test]
fn what_a_replica_let_escape_ends_with_the_replica_under_run() {
    let Some((scratch, escapee)) = setup() else {
        return;
    };
    // The replica waits for its escapee, then succeeds: the job has just finished.
    let mut run = run_escaping(scratch.path(), &escapee, "finished", UNTIL_ESCAPED);
    let status = run.wait().expect("trainctl exits");
    assert_eq!(status.code(), Some(0));
    assert_eq!(escapee.alive(), NONE, "alive after the job succeeded");
}

#[test]
fn what_a_replica_let_escape_ends_with_the_replica_under_the_server() {
    let Some((scratch, escapee)) = setup() else {
        return;
    };
    let server = serve_escaping(scratch.path(), &escapee, "finished", UNTIL_ESCAPED);
    server.wait_for("finished", "Succeeded", |view| state(view) == "Succeeded");
    assert_eq!(escapee.alive(), NONE, "alive after the job succeeded");
}

#[test]
fn the_servers_sigterm_stops_what_a_replica_let_escape() {
    let Some((scratch, escapee)) = setup() else {
        return;
    };
    let server = serve_escaping(scratch.path(), &escapee, "stopped", "sleep 300");
    escapee.wait_until_started();
    server.terminate();
    assert_eq!(escapee.alive(), NONE, "alive after the server stopped");
}

/// Where the cgroup v2 hierarchy is mounted here.
fn hierarchy() -> String {
    let table = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    table
        .lines()
        .find(|line| line.contains(" - cgroup2 "))
        .and_then(|line| line.split_whitespace().nth(4))
        .expect("a cgroup2 mount")
        .to_owned()
}

#[test]
fn without_a_cgroup_a_replica_that_keeps_its_environment_is_still_found() {
    let Some((scratch, escapee)) = setup() else {
        return;
    };
    // `setsid` alone: the escapee keeps the job's marker in its environment.
    let script = format!(
        "(setsid sh -c \"touch escaped; exec sleep {}\" &); {UNTIL_ESCAPED}",
        escapee.seconds
    );
    let file = scratch.path().join("job.yaml");
    std::fs::write(&file, job("marked", scratch.path(), &script)).expect("write");
    // The hierarchy read-only, in a mount namespace of trainctl's own: no cgroup can be made.
    let status = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg("mount -o remount,bind,ro \"$0\" && exec \"$@\"")
        .arg(hierarchy())
        .arg(trainctl_cli_harness::binary())
        .arg("--state-dir")
        .arg(scratch.path().join("state"))
        .args(["run", "-q", "-f"])
        .arg(&file)
        .env("TRAINCTL_GPUS", "0")
        .stdin(Stdio::null())
        .status()
        .expect("unshare runs");
    assert_eq!(status.code(), Some(0));
    assert_eq!(escapee.alive(), NONE, "alive after the job succeeded");
}

/// The pid of the child of `parent` whose command line holds `word`.
fn child_running(parent: u32, word: &str) -> Option<u32> {
    let children =
        std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children")).ok()?;
    children
        .split_whitespace()
        .filter_map(|pid| pid.parse::<u32>().ok())
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|line| String::from_utf8_lossy(&line).contains(word))
        })
}

#[test]
fn an_offline_delete_stops_what_a_replica_let_escape_through_its_cgroup() {
    let Some((scratch, escapee)) = setup() else {
        return;
    };
    let mut run = run_escaping(scratch.path(), &escapee, "orphaned", "sleep 300");
    escapee.wait_until_started();
    // Nothing is left to stop the job: its watchdog, then trainctl, are killed.
    let watchdog = child_running(run.id(), "__watchdog").expect("the watchdog");
    signal(watchdog, "KILL");
    signal(run.id(), "KILL");
    run.wait().expect("trainctl is reaped");
    assert!(
        !escapee.alive().is_empty(),
        "the escaped sleep outlives them"
    );
    let state = scratch.path().join("state");
    let recorded: Vec<std::path::PathBuf> = std::fs::read_dir(state.join("logs"))
        .expect("the logs")
        .flatten()
        .filter_map(|job| std::fs::read_to_string(job.path().join("worker-0.cgroup")).ok())
        .map(std::path::PathBuf::from)
        .collect();
    assert_eq!(
        recorded.len(),
        1,
        "the replica's cgroup is recorded beside its log"
    );
    let deleted = Command::new(trainctl_cli_harness::binary())
        .arg("--state-dir")
        .arg(&state)
        .args(["delete", "tfjob/orphaned"])
        .output()
        .expect("trainctl delete runs");
    assert!(deleted.status.success(), "{deleted:?}");
    wait_until("delete stops the escaped sleep", || {
        escapee.alive().is_empty()
    });
    let replica_cgroup = &recorded[0];
    assert!(!replica_cgroup.exists(), "{}", replica_cgroup.display());
    let job_cgroup = replica_cgroup.parent().expect("the job's cgroup");
    assert!(
        !job_cgroup.exists(),
        "{} is left empty",
        job_cgroup.display()
    );
}

#[test]
fn a_killed_watchdog_is_replaced_and_the_new_one_stops_what_a_replica_let_escape() {
    let Some((scratch, escapee)) = setup() else {
        return;
    };
    let mut run = run_escaping(scratch.path(), &escapee, "rewatched", "sleep 300");
    escapee.wait_until_started();
    let first = child_running(run.id(), "__watchdog").expect("the watchdog");
    signal(first, "KILL");
    let mut second = None;
    wait_until("a new watchdog starts", || {
        second = child_running(run.id(), "__watchdog").filter(|pid| *pid != first);
        second.is_some()
    });
    let second = second.expect("the new watchdog");
    let said = format!(
        "WatchdogLost   the watchdog (pid {first}) that stops the replicas should trainctl die \
         was ended by SIGKILL (exit code 137): a new one (pid {second}) guards them"
    );
    // Recorded with the run's next write.
    wait_until("the job's events say so", || {
        let described = Command::new(trainctl_cli_harness::binary())
            .arg("--state-dir")
            .arg(scratch.path().join("state"))
            .args(["describe", "rewatched"])
            .output()
            .expect("describe runs");
        String::from_utf8_lossy(&described.stdout).contains(&said)
    });
    // The new watchdog does the old one's work.
    signal(run.id(), "KILL");
    run.wait().expect("trainctl is reaped");
    wait_until("the new watchdog stops the escaped sleep", || {
        escapee.alive().is_empty()
    });
}
