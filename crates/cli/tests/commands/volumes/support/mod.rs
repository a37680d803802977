//! What the volume tests share: a scratch directory per test owned by the user who runs
//! `trainctl` (here, on the `run` tests' [`trainctl_cli_harness::Scratch`]), that user (`user`), the job
//! manifests (`common::manifest`), what `trainctl` did and what the machine shows: processes (the
//! `run` tests' support), the mount table (here).
//!
//! Every process a test's `trainctl` starts inherits `TRAINCTL_TEST_MARK=<unique>` from it, which
//! is how a test finds the processes of its job in `/proc`, wherever they are (a replica with
//! volumes runs in namespaces of its own, the same process to the host's `/proc`).

mod user;

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

pub use trainctl_cli_harness::manifest::{INDEX_ENV, Replicas, tfjob};
pub use trainctl_cli_harness::{Process, Run, Running, signal, wait_for};
pub use user::User;

use trainctl_cli_harness::run_to_end;

/// How long a test waits for something that takes milliseconds when all is well.
pub const SOON: Duration = Duration::from_secs(10);

/// A test's own directory, owned by the user who runs `trainctl`: the state dir, the manifests,
/// and the working directory of `trainctl`. Removed, with any process of the test still alive,
/// when dropped.
pub struct Scratch {
    base: trainctl_cli_harness::Scratch,
    user: User,
}

impl Scratch {
    /// A fresh directory for the test `name`, run by `user`.
    pub fn new(name: &str, user: &User) -> Scratch {
        let base =
            trainctl_cli_harness::Scratch::of_target("volumes", &format!("{name}-{}", user.uid));
        std::os::unix::fs::chown(base.dir(), Some(user.uid), Some(user.gid))
            .expect("chown scratch");
        Scratch {
            base,
            user: user.clone(),
        }
    }

    /// `name` inside the scratch directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.base.path(name)
    }

    /// The state directory every `trainctl` of this test uses.
    pub fn state_dir(&self) -> PathBuf {
        self.base.state_dir()
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
        self.base.write(name, text)
    }

    /// `trainctl --state-dir <ours> ARGS` in the scratch directory, to its end.
    pub fn trainctl(&self, args: &[&str]) -> Run {
        run_to_end(self.command(args))
    }

    /// `trainctl run -f MANIFEST EXTRA...` to its end.
    pub fn run(&self, manifest: &str, extra: &[&str]) -> Run {
        self.trainctl(&run_args(manifest, extra))
    }

    /// Starts `trainctl run -f MANIFEST EXTRA...` without waiting; its stdout and stderr go to
    /// files here.
    pub fn spawn_run(&self, manifest: &str, extra: &[&str]) -> Running {
        Running::start(
            self.command(&run_args(manifest, extra)),
            self.path("run.out"),
            self.path("run.err"),
        )
    }

    /// `trainctl --state-dir <ours> ARGS` as the user.
    fn command(&self, args: &[&str]) -> Command {
        let program = match self.user.wrapper.split_first() {
            None => Command::new(&self.user.binary),
            Some((program, arguments)) => {
                let mut command = Command::new(program);
                command.args(arguments).arg(&self.user.binary);
                command
            }
        };
        let mut command = self.base.command_with(program, args);
        if self.user.switch {
            // The standard library drops root's supplementary groups with the uid.
            command
                .uid(self.user.uid)
                .gid(self.user.gid)
                .env("HOME", self.base.dir())
                .env_remove("USER")
                .env_remove("LOGNAME");
        }
        command
    }

    /// The live processes started for this test (trainctl, its watchdog, replicas and what they
    /// started), zombies excluded.
    pub fn processes(&self) -> Vec<Process> {
        self.base.processes()
    }

    /// The test's live processes running `program` (by `/proc/<pid>/comm`).
    pub fn processes_named(&self, program: &str) -> Vec<Process> {
        self.base.processes_named(program)
    }

    /// The lines of the host's mount table that name this test's directory.
    pub fn our_mounts(&self) -> Vec<String> {
        let dir = self.base.dir().display().to_string();
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

/// `run -f MANIFEST EXTRA...`.
fn run_args<'a>(manifest: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["run", "-f", manifest];
    args.extend_from_slice(extra);
    args
}

/// The host's mount table: the lines of this process's `/proc/self/mountinfo` (the tests run in
/// the host's mount namespace).
pub fn mount_table() -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .expect("/proc/self/mountinfo")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The distinct lines of `lines`, sorted.
pub fn sorted<'a>(lines: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    lines
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// Declares a scenario's two tests, in a module of its name: `as_invoker` runs it as the user
/// who runs the tests (root, where they run as root), `as_user` as a user other than root
/// (skipped, saying why, where the tests cannot switch to one).
macro_rules! scenario {
    ($name:ident) => {
        mod $name {
            #[test]
            fn as_invoker() {
                super::$name(&$crate::volumes::support::User::invoker());
            }

            #[test]
            fn as_user() {
                if let Some(user) = $crate::volumes::support::User::unprivileged(concat!(
                    module_path!(),
                    "::as_user"
                )) {
                    super::$name(&user);
                }
            }
        }
    };
}
pub(crate) use scenario;
