//! A test's own directory, its `trainctl` runs, and its processes.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::processes::{Process, live_processes};
use crate::{Run, run_to_end};

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
        self.command_with(Command::new(crate::binary()), args)
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
