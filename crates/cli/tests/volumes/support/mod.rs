//! What the volume tests share: a scratch directory per test owned by the user who runs
//! `trainctl` (here), that user (`user`: this process's, or one other than root), the job
//! manifests (`manifest`), what `trainctl` did (`runs`) and what the machine shows: processes,
//! the mount table (`processes`).
//!
//! Every process a test's `trainctl` starts inherits `TRAINCTL_TEST_MARK=<unique>` from it, which
//! is how a test finds the processes of its job in `/proc`, wherever they are (a replica with
//! volumes runs in namespaces of its own, the same process to the host's `/proc`).

mod manifest;
mod processes;
mod runs;
mod user;

use std::fs::File;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

pub use manifest::{INDEX_ENV, Replicas, tfjob};
pub use processes::{Process, SOON, mount_table, signal, wait_for};
pub use runs::{Run, Running, sorted};
pub use user::User;

use processes::live_processes;
use runs::into_run;

/// The variable that marks a test's processes.
const MARK: &str = "TRAINCTL_TEST_MARK";

/// Settings of the test runner's environment that would change what `trainctl` does.
const SCRUBBED_ENV: [&str; 7] = [
    "TRAINCTL_HOME",
    "TRAINCTL_CPUS",
    "TRAINCTL_MEMORY",
    "TRAINCTL_RESTART_BACKOFF",
    "TRAINCTL_RESTART_BACKOFF_MAX",
    "CUSTOM_CLUSTER_DOMAIN",
    "RUST_LOG",
];

/// A test's own directory, owned by the user who runs `trainctl`: the state dir, the manifests,
/// and the working directory of `trainctl`. Removed, with any process of the test still alive,
/// when dropped.
pub struct Scratch {
    dir: PathBuf,
    mark: String,
    user: User,
}

impl Scratch {
    /// A fresh directory for the test `name`, run by `user`.
    pub fn new(name: &str, user: &User) -> Scratch {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("the clock is after 1970")
            .subsec_nanos();
        let mark = format!(
            "{name}-{}-{}-{nanos}-{}",
            user.uid,
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = std::env::temp_dir().join(format!("trainctl-volumes-{mark}"));
        std::fs::create_dir_all(&dir).expect("create the scratch dir");
        std::os::unix::fs::chown(&dir, Some(user.uid), Some(user.gid)).expect("chown scratch");
        Scratch {
            dir,
            mark,
            user: user.clone(),
        }
    }

    /// `name` inside the scratch directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The state directory every `trainctl` of this test uses.
    pub fn state_dir(&self) -> PathBuf {
        self.dir.join("state")
    }

    /// The directory of the claim `claim` of `namespace` that is bound to none.
    pub fn claim(&self, namespace: &str, claim: &str) -> PathBuf {
        self.state_dir().join("volumes").join(namespace).join(claim)
    }

    /// A directory of the user's in the scratch directory (for a `hostPath`).
    pub fn user_dir(&self, name: &str) -> PathBuf {
        let dir = self.path(name);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::os::unix::fs::chown(&dir, Some(self.user.uid), Some(self.user.gid)).expect("chown");
        dir
    }

    /// Writes a file (a manifest) and returns its path as text.
    pub fn write(&self, name: &str, text: &str) -> String {
        let path = self.path(name);
        std::fs::write(&path, text).expect("write into the scratch dir");
        path.display().to_string()
    }

    /// `trainctl --state-dir <ours> ARGS` in the scratch directory, to its end.
    pub fn trainctl(&self, args: &[&str]) -> Run {
        let output = self
            .command(args)
            .stdin(Stdio::null())
            .output()
            .expect("the trainctl binary runs");
        into_run(&output)
    }

    /// `trainctl run -f MANIFEST EXTRA...` to its end.
    pub fn run(&self, manifest: &str, extra: &[&str]) -> Run {
        let mut args = vec!["run", "-f", manifest];
        args.extend_from_slice(extra);
        self.trainctl(&args)
    }

    /// Starts `trainctl run -f MANIFEST EXTRA...` without waiting; its stdout and stderr go to
    /// files here.
    pub fn spawn_run(&self, manifest: &str, extra: &[&str]) -> Running {
        let mut args = vec!["run", "-f", manifest];
        args.extend_from_slice(extra);
        let (stdout, stderr) = (self.path("run.out"), self.path("run.err"));
        let child = self
            .command(&args)
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

    fn command(&self, args: &[&str]) -> Command {
        let mut command = match self.user.wrapper.split_first() {
            None => Command::new(&self.user.binary),
            Some((program, arguments)) => {
                let mut command = Command::new(program);
                command.args(arguments).arg(&self.user.binary);
                command
            }
        };
        command
            .arg("--state-dir")
            .arg(self.state_dir())
            .args(args)
            .current_dir(&self.dir)
            .env(MARK, &self.mark)
            .env("TRAINCTL_GPUS", "0")
            .env("NO_COLOR", "1");
        for name in SCRUBBED_ENV {
            command.env_remove(name);
        }
        if self.user.switch {
            // The standard library drops root's supplementary groups with the uid.
            command
                .uid(self.user.uid)
                .gid(self.user.gid)
                .env("HOME", &self.dir)
                .env_remove("USER")
                .env_remove("LOGNAME");
        }
        command
    }

    /// The live processes started for this test (trainctl, its watchdog, replicas and what they
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

    /// The lines of the host's mount table that name this test's directory.
    pub fn our_mounts(&self) -> Vec<String> {
        let dir = self.dir.display().to_string();
        mount_table()
            .into_iter()
            .filter(|line| line.contains(&dir))
            .collect()
    }

    /// What is left under the state dir's `pods/` (each job's `pods/<uid>/<replica>/...`).
    pub fn pods_left(&self) -> Vec<PathBuf> {
        let mut left = Vec::new();
        let mut pending = vec![self.state_dir().join("pods")];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    pending.push(path.clone());
                }
                left.push(path);
            }
        }
        left.sort();
        left
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

/// Declares a scenario's two tests, in a module of its name: `as_invoker` runs it as the user
/// who runs the tests (root, where they run as root), `as_user` as a user other than root
/// (skipped, saying why, where the tests cannot switch to one).
macro_rules! scenario {
    ($name:ident) => {
        mod $name {
            #[test]
            fn as_invoker() {
                super::$name(&$crate::support::User::invoker());
            }

            #[test]
            fn as_user() {
                if let Some(user) =
                    $crate::support::User::unprivileged(concat!(module_path!(), "::as_user"))
                {
                    super::$name(&user);
                }
            }
        }
    };
}
pub(crate) use scenario;
