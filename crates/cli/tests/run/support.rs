//! What the `run` tests share: a scratch directory per test (state dir, manifests, the files
//! replicas write), the real binary run in it, the process table, and readers for what
//! `trainctl` prints (the final job, its conditions, the summary table). The volume tests
//! (`tests/volumes`) share it too, with a scratch directory of theirs built on [`Scratch`].
//!
//! Every process a test's `trainctl` starts inherits `TRAINCTL_TEST_MARK=<unique>` from it (a
//! replica inherits trainctl's environment), which is how a test finds "the processes of its
//! job" in `/proc`, grandchildren and processes that left the group included.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(10);
/// The variable that marks a test's processes.
const MARK: &str = "TRAINCTL_TEST_MARK";
/// Settings of the test runner's environment that would change what `trainctl` does.
const SCRUBBED_ENV: [&str; 8] = [
    "TRAINCTL_HOME",
    "TRAINCTL_CPUS",
    "TRAINCTL_MEMORY",
    "TRAINCTL_GPUS",
    "TRAINCTL_RESTART_BACKOFF",
    "TRAINCTL_RESTART_BACKOFF_MAX",
    "CUSTOM_CLUSTER_DOMAIN",
    "RUST_LOG",
];

/// What a finished `trainctl` invocation did.
#[derive(Debug)]
pub struct Run {
    /// Exit code (`None` if a signal ended it).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// The one JSON value on stdout (`run -o json`, `get -o json`).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|error| panic!("stdout is not one JSON value ({error}):\n{self}"))
    }

    /// The lines the replica `replica` (`chief-0`) printed, as `run` streams them on stderr.
    #[allow(
        dead_code,
        reason = "the volume tests read these; the run tests read the summary"
    )]
    pub fn replica_lines(&self, replica: &str) -> Vec<&str> {
        lines_after(&self.stderr, &format!("{replica} | "))
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// A test's own directory: the state dir, the manifests, and the working directory of its
/// `trainctl` (so replicas' relative paths land here). Removed, with any process of the test
/// still alive, when dropped.
pub struct Scratch {
    dir: PathBuf,
    mark: String,
}

impl Scratch {
    /// A fresh directory for the test `name`.
    pub fn new(name: &str) -> Scratch {
        Scratch::of_target("run", name)
    }

    /// A fresh directory, `trainctl-<target>-<mark>`, for the test `name` of the test target
    /// `target`.
    pub fn of_target(target: &str, name: &str) -> Scratch {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("the clock is after 1970")
            .subsec_nanos();
        let mark = format!(
            "{name}-{}-{nanos}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = std::env::temp_dir().join(format!("trainctl-{target}-{mark}"));
        std::fs::create_dir_all(&dir).expect("create the scratch dir");
        Scratch { dir, mark }
    }

    /// The scratch directory.
    #[allow(
        dead_code,
        reason = "the volume tests' scratch directory is built on this one; the run tests use \
                  its paths"
    )]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `name` inside the scratch directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The state directory every `trainctl` of this test uses.
    pub fn state_dir(&self) -> PathBuf {
        self.dir.join("state")
    }

    /// Writes a file (a manifest) and returns its path as text.
    pub fn write(&self, name: &str, text: &str) -> String {
        let path = self.path(name);
        std::fs::write(&path, text).expect("write into the scratch dir");
        path.display().to_string()
    }

    /// A file that a replica wrote, or `None` while it does not exist.
    pub fn read(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.path(name)).ok()
    }

    /// `trainctl --state-dir <ours> ARGS` in the scratch directory, to its end.
    pub fn trainctl(&self, args: &[&str]) -> Run {
        run_to_end(self.command(args))
    }

    /// `trainctl run -f MANIFEST --restart-backoff 100ms EXTRA...` to its end.
    pub fn run(&self, manifest: &str, extra: &[&str]) -> Run {
        self.trainctl(&run_args(manifest, extra))
    }

    /// [`Scratch::run`] with these variables added to trainctl's own environment.
    pub fn run_with_env(&self, manifest: &str, extra: &[&str], env: &[(&str, &str)]) -> Run {
        let mut command = self.command(&run_args(manifest, extra));
        command.envs(env.iter().copied());
        run_to_end(command)
    }

    /// Starts `trainctl run -f MANIFEST --restart-backoff 100ms EXTRA...` without waiting; its
    /// stdout and stderr go to the files `<log>.out` and `<log>.err` here.
    pub fn spawn_run(&self, manifest: &str, extra: &[&str], log: &str) -> Running {
        self.spawn(&run_args(manifest, extra), log)
    }

    /// Starts `trainctl --state-dir <ours> ARGS` without waiting; its stdout and stderr go to the
    /// files `<log>.out` and `<log>.err` here.
    pub fn spawn(&self, args: &[&str], log: &str) -> Running {
        Running::start(
            self.command(args),
            self.path(&format!("{log}.out")),
            self.path(&format!("{log}.err")),
        )
    }

    fn command(&self, args: &[&str]) -> Command {
        self.command_with(Command::new(env!("CARGO_BIN_EXE_trainctl")), args)
    }

    /// `command` (the `trainctl` binary, or a program that runs it) with `--state-dir <ours>
    /// ARGS`, run in the scratch directory with the test's mark and without the settings of the
    /// test runner's environment.
    pub fn command_with(&self, mut command: Command, args: &[&str]) -> Command {
        command
            .arg("--state-dir")
            .arg(self.state_dir())
            .args(args)
            .current_dir(&self.dir)
            .env(MARK, &self.mark)
            // Without `--gpus`, no test depends on the GPUs of the machine it runs on.
            .env("TRAINCTL_GPUS", "0")
            .env("NO_COLOR", "1");
        for name in SCRUBBED_ENV.iter().filter(|name| **name != "TRAINCTL_GPUS") {
            command.env_remove(name);
        }
        command
    }

    /// The live processes started for this test (trainctl, keepers, replicas and whatever they
    /// started), zombies excluded.
    pub fn processes(&self) -> Vec<Process> {
        let wanted = format!("{MARK}={}", self.mark);
        live_processes()
            .into_iter()
            .filter(|process| process.environ.contains(&wanted))
            .collect()
    }

    /// The test's live processes running `program` (by `/proc/<pid>/comm`).
    pub fn processes_named(&self, program: &str) -> Vec<Process> {
        self.processes()
            .into_iter()
            .filter(|process| process.comm == program)
            .collect()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // A failed test must not leave its `sleep 300`s behind.
        for process in self.processes() {
            signal(process.pid, "KILL");
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `command` (a `trainctl`) with nothing on its stdin, to its end; what it did (failing the
/// test if it panicked).
pub fn run_to_end(mut command: Command) -> Run {
    let output = command
        .stdin(Stdio::null())
        .output()
        .expect("the trainctl binary runs");
    into_run(&output)
}

/// What a finished `trainctl` did; fails the test if it panicked.
fn into_run(output: &std::process::Output) -> Run {
    let run = Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    assert!(
        !run.stderr.contains("panicked"),
        "trainctl panicked:\n{run}"
    );
    run
}

fn run_args<'a>(manifest: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["run", "-f", manifest, "--restart-backoff", "100ms"];
    args.extend_from_slice(extra);
    args
}

/// A `trainctl run` started in the background; killed if the test ends before it does.
pub struct Running {
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Running {
    /// Starts `command` with its stdout and stderr going to the files `stdout` and `stderr`.
    pub fn start(mut command: Command, stdout: PathBuf, stderr: PathBuf) -> Running {
        let child = command
            .stdin(Stdio::null())
            .stdout(File::create(&stdout).expect("create stdout file"))
            .stderr(File::create(&stderr).expect("create stderr file"))
            .spawn()
            .expect("the trainctl binary starts");
        Running {
            child,
            stdout,
            stderr,
        }
    }

    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What it printed on stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// What it printed on stdout so far.
    pub fn stdout(&self) -> String {
        std::fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    /// Whether it is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    /// Waits up to `timeout` for it to exit; what it did.
    pub fn finish(mut self, timeout: Duration) -> Run {
        let status: ExitStatus = wait_for("trainctl run to exit", timeout, || {
            self.child.try_wait().expect("try_wait")
        });
        let run = Run {
            code: status.code(),
            stdout: self.stdout(),
            stderr: self.stderr(),
        };
        assert!(
            !run.stderr.contains("panicked"),
            "trainctl panicked:\n{run}"
        );
        run
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Calls `probe` until it gives a value; panics after `timeout`, saying what it waited for.
pub fn wait_for<T>(what: &str, timeout: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(POLL);
    }
}

/// Sends `signal` (a name: `INT`, `TERM`, `KILL`) to one process; one that is gone already is
/// no error here.
pub fn signal(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status();
}

/// A process as `/proc` shows it.
#[derive(Debug, Clone)]
pub struct Process {
    /// Its pid.
    pub pid: u32,
    /// `/proc/<pid>/comm`: the program's name.
    pub comm: String,
    /// Its process group.
    pub group: u32,
    /// Its nice value.
    pub nice: i32,
    /// Its scheduling policy (`SCHED_OTHER` 0, `SCHED_IDLE` 5).
    pub policy: u32,
    /// Its environment, `NAME=value` entries.
    pub environ: Vec<String>,
}

/// Every live (not zombie) process whose environment this user may read.
fn live_processes() -> Vec<Process> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(read_process)
        .collect()
}

fn read_process(pid: u32) -> Option<Process> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_owned();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if fields
        .first()
        .is_none_or(|state| *state == "Z" || *state == "X")
    {
        return None;
    }
    let number = |i: usize| fields.get(i)?.parse::<u32>().ok();
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    Some(Process {
        pid,
        comm,
        group: number(2)?,
        // Field 19 of `/proc/<pid>/stat`; `fields` starts at field 3.
        nice: fields.get(19 - 3)?.parse().ok()?,
        policy: number(41 - 3)?,
        environ: environ
            .split(|&byte| byte == 0)
            .map(|entry| String::from_utf8_lossy(entry).into_owned())
            .collect(),
    })
}

/// A condition as `(type, status, reason, message)`.
pub type Condition = (String, String, String, String);

/// The job's `status.conditions`, oldest first, as `(type, status, reason, message)`.
pub fn conditions(job: &Value) -> Vec<Condition> {
    let text = |condition: &Value, field: &str| {
        condition[field]
            .as_str()
            .unwrap_or_else(|| panic!("condition without {field}: {condition}"))
            .to_owned()
    };
    job["status"]["conditions"]
        .as_array()
        .unwrap_or_else(|| panic!("no status.conditions in {job:#}"))
        .iter()
        .map(|c| {
            (
                text(c, "type"),
                text(c, "status"),
                text(c, "reason"),
                text(c, "message"),
            )
        })
        .collect()
}

/// Builds the expected conditions from `(type, status, reason, message)` literals.
pub fn expect_conditions(expected: &[(&str, &str, &str, &str)]) -> Vec<Condition> {
    expected
        .iter()
        .map(|&(t, s, r, m)| (t.to_owned(), s.to_owned(), r.to_owned(), m.to_owned()))
        .collect()
}

/// The conditions of a job that ended with `last` after it ran: Created, Running (now False),
/// then `last` (`Succeeded` or `Failed`) with its reason and message.
pub fn ran_then(kind: &str, created: &str, running: &str, last: (&str, &str)) -> Vec<Condition> {
    let (type_, message) = last;
    expect_conditions(&[
        ("Created", "True", &format!("{kind}Created"), created),
        ("Running", "False", &format!("{kind}Running"), running),
        (type_, "True", &format!("{kind}{type_}"), message),
    ])
}

/// `status.replicaStatuses` without the selectors: `{Type: {active, succeeded, failed}}`,
/// absent counts as 0.
pub fn replica_counts(job: &Value) -> BTreeMap<String, (u64, u64, u64)> {
    job["status"]["replicaStatuses"]
        .as_object()
        .unwrap_or_else(|| panic!("no status.replicaStatuses in {job:#}"))
        .iter()
        .map(|(replica_type, counts)| {
            let count = |field: &str| counts[field].as_u64().unwrap_or(0);
            (
                replica_type.clone(),
                (count("active"), count("succeeded"), count("failed")),
            )
        })
        .collect()
}

/// Builds the expected replica counts from `(type, active, succeeded, failed)` literals.
pub fn expect_counts(expected: &[(&str, u64, u64, u64)]) -> BTreeMap<String, (u64, u64, u64)> {
    expected
        .iter()
        .map(|&(t, a, s, f)| (t.to_owned(), (a, s, f)))
        .collect()
}

/// One row of the summary `trainctl run` prints at its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryRow {
    /// `Succeeded`, `Failed`, `Stopped`...
    pub state: String,
    /// The last exit code, `-` if none.
    pub exit: String,
    /// In-place restarts.
    pub restarts: u32,
    /// The replica's loopback port.
    pub port: Option<u16>,
    /// Its GPUs, `-` if none.
    pub gpus: String,
}

/// The summary table at the end of `run`'s stderr, by replica (`worker-0`).
pub fn summary(stderr: &str) -> BTreeMap<String, SummaryRow> {
    let mut lines = stderr.lines().skip_while(|line| {
        !(line.starts_with("  REPLICA") && line.split_whitespace().count() == 6)
    });
    assert!(lines.next().is_some(), "no summary table in:\n{stderr}");
    lines
        .take_while(|line| line.starts_with("  "))
        .map(|line| {
            let cells: Vec<&str> = line.split_whitespace().collect();
            let [replica, state, exit, restarts, port, gpus] = cells[..] else {
                panic!("summary row `{line}` has not 6 cells");
            };
            (
                replica.to_owned(),
                SummaryRow {
                    state: state.to_owned(),
                    exit: exit.to_owned(),
                    restarts: restarts.parse().expect("RESTARTS is a number"),
                    port: port.parse().ok(),
                    gpus: gpus.to_owned(),
                },
            )
        })
        .collect()
}

/// The rows of a `get` table as maps from column header to cell (cells are three or more
/// spaces apart; a cell may hold single spaces, as `Chief:1 Worker:2`).
pub fn table(stdout: &str) -> Vec<BTreeMap<String, String>> {
    let split = |line: &str| -> Vec<String> {
        line.split("   ")
            .map(str::trim)
            .filter(|cell| !cell.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let mut lines = stdout.lines();
    let headers = split(
        lines
            .next()
            .unwrap_or_else(|| panic!("no table in:\n{stdout}")),
    );
    lines
        .map(|line| headers.iter().cloned().zip(split(line)).collect())
        .collect()
}

/// The lines of `text` that start with `prefix`, without it.
pub fn lines_after<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.lines()
        .filter_map(|line| line.strip_prefix(prefix))
        .collect()
}

/// `NAME=value` lines (as `env` prints them) as a map; lines without `=` are skipped.
pub fn env_lines(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}
