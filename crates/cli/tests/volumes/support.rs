//! What the volume tests share: who runs `trainctl` (this process's user, or a user other than
//! root), a scratch directory per test owned by that user, the job manifests, and what the
//! machine shows (processes, the mount table).
//!
//! Every process a test's `trainctl` starts inherits `TRAINCTL_TEST_MARK=<unique>` from it, which
//! is how a test finds the processes of its job in `/proc`, wherever they are (a replica with
//! volumes runs in namespaces of its own, the same process to the host's `/proc`).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a test waits for something that takes milliseconds when all is well.
pub const SOON: Duration = Duration::from_secs(10);
/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(10);
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
/// The user the tests make when the machine has none to run as.
const TEST_USER: &str = "trainctl-test";

/// Who runs `trainctl`: its uid and gid, and the binary that user can execute.
#[derive(Debug, Clone)]
pub struct User {
    /// The uid.
    pub uid: u32,
    /// The gid.
    pub gid: u32,
    /// Whether the test switches to this user (it is not the test's own).
    switch: bool,
    /// The `trainctl` binary, where this user can run it.
    binary: PathBuf,
    /// A program and its arguments that run the binary (`setpriv ...`), if any.
    wrapper: Vec<&'static str>,
}

impl User {
    /// This test process's user (root where the tests run as root).
    pub fn invoker() -> User {
        let (uid, gid) = own_ids();
        User {
            uid,
            gid,
            switch: false,
            binary: PathBuf::from(env!("CARGO_BIN_EXE_trainctl")),
            wrapper: Vec::new(),
        }
    }

    /// Root without the right to mount (`CAP_SYS_ADMIN`), as in a container: `trainctl` run
    /// through `setpriv`. `None`, with the reason printed, where the tests do not run as root,
    /// the machine has no `setpriv`, or it does not allow user namespaces.
    pub fn root_without_cap_sys_admin(test: &str) -> Option<User> {
        let skip = |why: &str| skipped(&format!("{test} as root without CAP_SYS_ADMIN: {why}"));
        if own_ids().0 != 0 {
            return skip("the tests do not run as root");
        }
        if let Some(setting) = user_namespaces_off() {
            return skip(&format!(
                "this machine does not allow user namespaces ({setting})"
            ));
        }
        let setpriv = Command::new("setpriv")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !setpriv.is_ok_and(|status| status.success()) {
            return skip("this machine has no setpriv (util-linux)");
        }
        Some(User {
            wrapper: vec![
                "setpriv",
                "--bounding-set=-sys_admin",
                "--inh-caps=-sys_admin",
                "--",
            ],
            ..User::invoker()
        })
    }

    /// A user other than root, made if the machine has none; `None`, with the reason printed,
    /// when this process is not root (it cannot switch users) or the machine does not let users
    /// other than root make user namespaces.
    pub fn unprivileged(test: &str) -> Option<User> {
        let skip = |why: &str| skipped(&format!("{test} as a user other than root: {why}"));
        if own_ids().0 != 0 {
            return skip(
                "the tests do not run as root, so they cannot switch to another user (the \
                 `as_invoker` variant runs as this user, which is not root)",
            );
        }
        if let Some(setting) = user_namespaces_off() {
            return skip(&format!(
                "this machine does not allow unprivileged user namespaces ({setting})"
            ));
        }
        let (uid, gid) = match unprivileged_ids() {
            Ok(ids) => ids,
            Err(why) => return skip(&why),
        };
        Some(User {
            uid,
            gid,
            switch: true,
            binary: binary_for_others(),
            wrapper: Vec::new(),
        })
    }
}

/// Says that a test is skipped and why, on the test process's standard error itself (not
/// captured with the test's output, which a passing test's hides), and gives no user.
fn skipped(what: &str) -> Option<User> {
    let _ = writeln!(std::io::stderr(), "SKIPPED {what}");
    None
}

/// This process's effective uid and gid, from `/proc/self/status`.
fn own_ids() -> (u32, u32) {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let effective = |field: &str| -> u32 {
        status
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|ids| ids.split_whitespace().nth(1))
            .and_then(|id| id.parse().ok())
            .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
    };
    (effective("Uid:"), effective("Gid:"))
}

/// The setting that keeps users other than root from making user namespaces, if one does.
fn user_namespaces_off() -> Option<String> {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|text| text.trim().to_owned())
    };
    [
        ("/proc/sys/kernel/unprivileged_userns_clone", "0"),
        ("/proc/sys/user/max_user_namespaces", "0"),
        (
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
            "1",
        ),
    ]
    .into_iter()
    .find(|(path, off)| read(path).as_deref() == Some(*off))
    .map(|(path, off)| format!("{path} is {off}"))
}

/// The uid and gid of a user other than root: the first of `/etc/passwd` with a uid of 1000 or
/// more (not `nobody`), else [`TEST_USER`], made once (`useradd --system`) for every test.
fn unprivileged_ids() -> Result<(u32, u32), String> {
    static IDS: OnceLock<Result<(u32, u32), String>> = OnceLock::new();
    IDS.get_or_init(|| {
        let users = passwd();
        if let Some((_, uid, gid)) = users.iter().find(|(_, uid, _)| (1000..65534).contains(uid)) {
            return Ok((*uid, *gid));
        }
        if let Some((_, uid, gid)) = users.iter().find(|(name, _, _)| name == TEST_USER) {
            return Ok((*uid, *gid));
        }
        let added = Command::new("useradd")
            .args(["--system", "--no-create-home", "--shell", "/bin/false"])
            .arg(TEST_USER)
            .output()
            .map_err(|error| format!("cannot run useradd to make a user: {error}"))?;
        // 9: the user exists (made by another run of the tests meanwhile).
        if !added.status.success() && added.status.code() != Some(9) {
            return Err(format!(
                "useradd {TEST_USER} failed: {}",
                String::from_utf8_lossy(&added.stderr).trim()
            ));
        }
        passwd()
            .into_iter()
            .find(|(name, _, _)| name == TEST_USER)
            .map(|(_, uid, gid)| (uid, gid))
            .ok_or_else(|| format!("useradd made no {TEST_USER} in /etc/passwd"))
    })
    .clone()
}

/// `/etc/passwd` as `(name, uid, gid)`.
fn passwd() -> Vec<(String, u32, u32)> {
    std::fs::read_to_string("/etc/passwd")
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            Some((
                (*fields.first()?).to_owned(),
                fields.get(2)?.parse().ok()?,
                fields.get(3)?.parse().ok()?,
            ))
        })
        .collect()
}

/// The binary where any user can execute it: where cargo built it when every directory above
/// it lets others through, else a copy (a hard link where it can) in a directory of its own.
fn binary_for_others() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            let built = PathBuf::from(env!("CARGO_BIN_EXE_trainctl"));
            let others_may = |path: &Path, bits: u32| {
                std::fs::metadata(path).is_ok_and(|meta| meta.permissions().mode() & bits == bits)
            };
            if others_may(&built, 0o005)
                && built.ancestors().skip(1).all(|dir| others_may(dir, 0o001))
            {
                return built;
            }
            let meta = std::fs::metadata(&built).expect("the built binary");
            let dir = std::env::temp_dir().join(format!(
                "trainctl-volumes-bin-{}-{}",
                meta.ino(),
                meta.mtime()
            ));
            std::fs::create_dir_all(&dir).expect("make the binary's directory");
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
                .expect("chmod the binary's directory");
            let copy = dir.join("trainctl");
            if !copy.exists() && std::fs::hard_link(&built, &copy).is_err() {
                let partial = dir.join(format!("trainctl.{}", std::process::id()));
                std::fs::copy(&built, &partial).expect("copy the binary");
                std::fs::rename(&partial, &copy).expect("put the binary in place");
            }
            std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755))
                .expect("chmod the binary");
            copy
        })
        .clone()
}

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
    /// The lines the replica `replica` (`chief-0`) printed, as `run` streams them on stderr.
    pub fn replica_lines(&self, replica: &str) -> Vec<&str> {
        let prefix = format!("{replica} | ");
        self.stderr
            .lines()
            .filter_map(|line| line.strip_prefix(&prefix))
            .collect()
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

/// The host's mount table: the lines of this process's `/proc/self/mountinfo` (the tests run in
/// the host's mount namespace).
pub fn mount_table() -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .expect("/proc/self/mountinfo")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A `trainctl run` started in the background; killed if the test ends before it does.
pub struct Running {
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Running {
    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `timeout` for it to exit; what it did.
    pub fn finish(mut self, timeout: Duration) -> Run {
        let status: ExitStatus = wait_for("trainctl run to exit", timeout, || {
            self.child.try_wait().expect("try_wait")
        });
        let run = Run {
            code: status.code(),
            stdout: std::fs::read_to_string(&self.stdout).unwrap_or_default(),
            stderr: std::fs::read_to_string(&self.stderr).unwrap_or_default(),
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

/// Sends `signal` (a name: `INT`, `KILL`) to one process; one that is gone already is no error.
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
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (head, rest) = stat.rsplit_once(')')?;
            if matches!(rest.split_whitespace().next(), None | Some("Z" | "X")) {
                return None;
            }
            let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
            Some(Process {
                pid,
                comm: head.split_once('(')?.1.to_owned(),
                environ: environ
                    .split(|&byte| byte == 0)
                    .map(|entry| String::from_utf8_lossy(entry).into_owned())
                    .collect(),
            })
        })
        .collect()
}

/// One replica type of a job built by [`tfjob`]: `count` replicas running `sh -c SCRIPT`, with
/// these volumes, mounts and env (each a YAML flow mapping).
#[derive(Clone, Copy)]
pub struct Replicas<'a> {
    /// `Chief`, `Worker`...
    pub replica_type: &'a str,
    /// How many.
    pub count: u32,
    /// What its `tensorflow` container runs, as `sh -c SCRIPT`.
    pub script: &'a str,
    /// Its pod's `volumes`.
    pub volumes: &'a [&'a str],
    /// Its container's `volumeMounts`.
    pub mounts: &'a [&'a str],
    /// Its container's `env`.
    pub env: &'a [&'a str],
    /// Its `restartPolicy`.
    pub policy: &'a str,
}

impl<'a> Replicas<'a> {
    /// One `Chief` running `script`, without volumes.
    pub fn chief(script: &'a str) -> Replicas<'a> {
        Replicas {
            replica_type: "Chief",
            count: 1,
            script,
            volumes: &[],
            mounts: &[],
            env: &[],
            policy: "Never",
        }
    }

    /// `count` workers running `script`, without volumes.
    pub fn workers(count: u32, script: &'a str) -> Replicas<'a> {
        Replicas {
            replica_type: "Worker",
            count,
            ..Replicas::chief(script)
        }
    }

    /// The same, with these volumes and mounts.
    pub fn with(self, volumes: &'a [&'a str], mounts: &'a [&'a str]) -> Replicas<'a> {
        Replicas {
            volumes,
            mounts,
            ..self
        }
    }

    /// The same, with this env.
    pub fn env(self, env: &'a [&'a str]) -> Replicas<'a> {
        Replicas { env, ..self }
    }

    /// The same, with this `restartPolicy`.
    pub fn policy(self, policy: &'a str) -> Replicas<'a> {
        Replicas { policy, ..self }
    }
}

/// Container env giving the replica its index as `$INDEX`.
pub const INDEX_ENV: &str = "{name: INDEX, valueFrom: {fieldRef: {fieldPath: \"metadata.labels['training.kubeflow.org/replica-index']\"}}}";

/// A TFJob named `name`, after `companions` (YAML documents: ConfigMaps, Secrets), whose
/// replicas have a grace period of 1 s.
pub fn tfjob(name: &str, companions: &str, replica_specs: &[Replicas<'_>]) -> String {
    let mut yaml = String::new();
    if !companions.is_empty() {
        yaml.push_str(companions.trim_end());
        yaml.push_str("\n---\n");
    }
    write!(
        yaml,
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: {name}\nspec:\n  tfReplicaSpecs:\n"
    )
    .expect("writing to a String cannot fail");
    let mut line = |indent: usize, text: &str| {
        writeln!(yaml, "{:indent$}{text}", "").expect("writing to a String cannot fail");
    };
    for replicas in replica_specs {
        line(4, &format!("{}:", replicas.replica_type));
        line(6, &format!("replicas: {}", replicas.count));
        line(6, &format!("restartPolicy: {}", replicas.policy));
        line(6, "template:");
        line(8, "spec:");
        line(10, "terminationGracePeriodSeconds: 1");
        if !replicas.volumes.is_empty() {
            line(10, "volumes:");
            for volume in replicas.volumes {
                line(10, &format!("- {volume}"));
            }
        }
        line(10, "containers:");
        line(10, "- name: tensorflow");
        line(12, "image: tensorflow/tensorflow:2.16.1");
        for (field, items) in [("volumeMounts", replicas.mounts), ("env", replicas.env)] {
            if !items.is_empty() {
                line(12, &format!("{field}:"));
                for item in items {
                    line(12, &format!("- {item}"));
                }
            }
        }
        for text in ["command:", "- sh", "- -c", "- |"] {
            line(12, text);
        }
        for text in replicas.script.lines() {
            line(14, text);
        }
    }
    yaml
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
