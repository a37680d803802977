//! The state directory is its owner's alone: another user reads nothing in it (logs with a
//! Secret, the database and its write-ahead log, the token), starts nothing through the shim's
//! socket, and a state directory of another user is refused; under umask 000 as under any other,
//! the directory is 0700 and trainctl's files 0600. A server whose shim cannot start says why at
//! once.
//!
//! The tests that act as another user create one (`useradd`) and need root: run as another user,
//! they say they are skipped.

use std::fs;
use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use trainctl_cli_harness::trainctl;

/// The variable that makes [`probe_client_as_another_user`] the probe, with the shim's socket.
const PROBE_SOCKET: &str = "TRAINCTL_TEST_PROBE_SOCKET";
/// The file the probe's `Start` would create.
const PROBE_MARKER: &str = "TRAINCTL_TEST_PROBE_MARKER";

/// A user created for a test, removed when dropped.
struct OtherUser {
    name: String,
    uid: u32,
    gid: u32,
}

impl OtherUser {
    /// A new system user with no home; `None` (the test is skipped) when not run as root.
    fn create() -> Option<OtherUser> {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        if fs::metadata("/proc/self").expect("stat /proc/self").uid() != 0 {
            eprintln!("skipped: creating another user needs root");
            return None;
        }
        let name = format!(
            "tcprobe{}x{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        );
        retry_locked(|| {
            Command::new("useradd")
                .args(["--system", "--user-group", "--no-create-home"])
                .args(["--shell", "/usr/sbin/nologin", &name])
                .output()
                .expect("useradd runs (the tests that act as another user need it)")
        });
        let id = |flag: &str| -> u32 {
            let output = Command::new("id").args([flag, &name]).output().expect("id");
            String::from_utf8_lossy(&output.stdout)
                .trim()
                .parse()
                .expect("a numeric id")
        };
        Some(OtherUser {
            uid: id("-u"),
            gid: id("-g"),
            name,
        })
    }

    /// `command` as this user.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command.uid(self.uid).gid(self.gid).env_clear();
        command
    }

    /// Asserts that this user cannot read `path`: `cat` says `Permission denied`.
    fn cannot_read(&self, path: &Path) {
        let output = self.command("/bin/cat").arg(path).output().expect("cat");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !output.status.success() && stderr.contains("Permission denied"),
            "{} read {}: {:?} {stderr}",
            self.name,
            path.display(),
            String::from_utf8_lossy(&output.stdout)
        );
    }
}

impl Drop for OtherUser {
    fn drop(&mut self) {
        retry_locked(|| {
            Command::new("userdel")
                .arg(&self.name)
                .output()
                .expect("userdel runs")
        });
    }
}

/// Runs `command` (useradd, userdel) until it is not refused for another one holding the user
/// database's lock (exit 1 or 10, as when tests run in parallel), for at most 20 s.
fn retry_locked(command: impl Fn() -> Output) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let output = command();
        let code = output.status.code();
        if output.status.success() {
            return;
        }
        assert!(
            matches!(code, Some(1 | 10)) && Instant::now() < deadline,
            "{:?}: {}",
            code,
            String::from_utf8_lossy(&output.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path)
        .unwrap_or_else(|error| panic!("stat {}: {error}", path.display()))
        .mode()
        & 0o7777
}

fn set_mode(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A scratch directory others may enter, as the probes' were.
fn open_scratch() -> tempfile::TempDir {
    let scratch = tempfile::tempdir().expect("tempdir");
    set_mode(scratch.path(), 0o755);
    scratch
}

/// Every file under `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).expect("list") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

const SECRET_JOB: &str = "apiVersion: v1
kind: Secret
metadata: {name: credentials}
stringData: {password: hunter2-do-not-share}
---
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: leaky
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: busybox
              command: [sh, -c, 'echo \"password: $PASSWORD\"']
              env:
                - name: PASSWORD
                  valueFrom: {secretKeyRef: {name: credentials, key: password}}
";

#[test]
fn another_user_reads_nothing_of_a_state_dir_that_was_open() {
    let Some(other) = OtherUser::create() else {
        return;
    };
    let scratch = open_scratch();
    let state = scratch.path().join("state");
    fs::create_dir(&state).expect("mkdir");
    set_mode(&state, 0o755);
    let manifest = scratch.path().join("job.yaml");
    fs::write(&manifest, SECRET_JOB).expect("write");
    let state_arg = state.to_str().expect("UTF-8");
    let run = trainctl(&[
        "--state-dir",
        state_arg,
        "run",
        "-q",
        "-f",
        manifest.to_str().expect("UTF-8"),
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let warning = format!(
        "warning: the state directory {} was open to other users (mode 755): restricted it to \
         you (mode 700)\n",
        state.display()
    );
    assert_eq!(run.stderr.matches(&warning).count(), 1, "{}", run.stderr);
    assert_eq!(mode(&state), 0o700);

    let files = files_under(&state);
    let log = files
        .iter()
        .find(|file| file.extension().is_some_and(|ext| ext == "log"))
        .expect("the replica's log");
    assert_eq!(
        fs::read_to_string(log).expect("read"),
        "password: hunter2-do-not-share\n"
    );
    let wal = state.join("trainctl.db-wal");
    assert!(wal.exists(), "{files:?}");
    for file in [log, &state.join("trainctl.db"), &wal] {
        other.cannot_read(file);
    }
    for name in ["trainctl.db", "trainctl.db-wal", "trainctl.db-shm"] {
        assert_eq!(mode(&state.join(name)), 0o600, "{name}");
    }
    let listed = other.command("/bin/ls").arg(&state).output().expect("ls");
    assert!(
        !listed.status.success(),
        "{} listed {}",
        other.name,
        state.display()
    );
}

#[test]
fn a_state_dir_of_another_user_is_refused_by_every_command() {
    let Some(other) = OtherUser::create() else {
        return;
    };
    let scratch = open_scratch();
    let theirs = scratch.path().join("theirs");
    fs::create_dir(&theirs).expect("mkdir");
    set_mode(&theirs, 0o755);
    std::os::unix::fs::chown(&theirs, Some(other.uid), Some(other.gid)).expect("chown");
    let manifest = scratch.path().join("job.yaml");
    fs::write(&manifest, SECRET_JOB).expect("write");
    let expected = format!(
        "error: the state directory {dir} is owned by {name} (uid {uid}), not by you (root (uid \
         0)): refusing to use it, since its owner could read and change what trainctl keeps \
         there (Secrets in the database and logs, the server's token, the socket that starts \
         replicas as you); use a directory of your own (--state-dir or TRAINCTL_HOME), or have \
         {name} (uid {uid}) give it to you (chown)\n",
        dir = theirs.display(),
        name = other.name,
        uid = other.uid,
    );
    let dir = theirs.to_str().expect("UTF-8");
    let file = manifest.to_str().expect("UTF-8");
    for args in [
        vec!["--state-dir", dir, "run", "-f", file],
        vec!["--state-dir", dir, "server"],
        vec!["--state-dir", dir, "get"],
        vec!["--state-dir", dir, "submit", "-f", file],
    ] {
        let refused = trainctl(&args);
        assert_eq!(refused.code, Some(1), "{args:?}: {}", refused.stderr);
        assert_eq!(refused.stderr, expected, "{args:?}");
    }
    assert_eq!(files_under(&theirs), Vec::<PathBuf>::new());
    assert_eq!(
        mode(&theirs),
        0o755,
        "another user's directory is left alone"
    );
}

#[test]
fn a_state_dir_that_is_another_users_symbolic_link_is_not_followed() {
    let Some(other) = OtherUser::create() else {
        return;
    };
    let scratch = open_scratch();
    let ours = scratch.path().join("ours");
    fs::create_dir(&ours).expect("mkdir");
    set_mode(&ours, 0o700);
    let link = scratch.path().join("link");
    std::os::unix::fs::symlink(&ours, &link).expect("a link");
    std::os::unix::fs::lchown(&link, Some(other.uid), Some(other.gid)).expect("lchown");
    let dir = link.to_str().expect("UTF-8");
    let expected = format!(
        "error: the state directory {dir} is a symbolic link owned by {name} (uid {uid}), not by \
         you (root (uid 0)): refusing to follow it, since its owner could point it at another \
         directory at any time; use a directory of your own (--state-dir or TRAINCTL_HOME), or \
         the link's target itself\n",
        name = other.name,
        uid = other.uid,
    );
    for args in [
        vec!["--state-dir", dir, "server"],
        vec!["--state-dir", dir, "get"],
    ] {
        let refused = trainctl(&args);
        assert_eq!(refused.code, Some(1), "{args:?}: {}", refused.stderr);
        assert_eq!(refused.stderr, expected, "{args:?}");
    }
    assert_eq!(files_under(&ours), Vec::<PathBuf>::new());
    // The same link, ours: followed.
    std::os::unix::fs::lchown(&link, Some(0), Some(0)).expect("lchown");
    let followed = trainctl(&["--state-dir", dir, "get"]);
    assert_eq!(followed.code, Some(0), "{}", followed.stderr);
}

/// A `trainctl __shim` on `socket`, killed when dropped if it has not ended.
struct ShimProcess(Child);

impl Drop for ShimProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A `Start` of `sh -c 'touch MARKER'`, with its log and exit files in `dir`.
fn start_request(dir: &Path, marker: &Path) -> String {
    let hello = serde_json::json!({"Hello": {"env": []}});
    let start = serde_json::json!({"Start": {
        "argv": ["sh", "-c", format!("touch '{}'", marker.display())],
        "env": [],
        "working_dir": null,
        "log_path": dir.join("probe.log"),
        "exit_file": dir.join("probe.exit"),
    }});
    format!("{hello}\n{start}\n")
}

/// Sends `requests` on `socket` and says what came back: `hung up`, or `answered: LINE`.
fn ask(socket: &Path, requests: &str) -> String {
    let Ok(mut stream) = UnixStream::connect(socket) else {
        return "cannot connect".to_owned();
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    if stream.write_all(requests.as_bytes()).is_err() {
        return "hung up".to_owned();
    }
    let mut line = String::new();
    match BufReader::new(&stream).read_line(&mut line) {
        Ok(0) => "hung up".to_owned(),
        Ok(_) => format!("answered: {}", line.trim_end()),
        Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => "hung up".to_owned(),
        Err(error) => format!("no answer: {error}"),
    }
}

/// Not a test of its own: the client that [`the_shim_hangs_up_on_another_user`] runs as another
/// user (this test binary again, with [`PROBE_SOCKET`] set); does nothing otherwise.
#[test]
fn probe_client_as_another_user() {
    let (Some(socket), Some(marker)) = (
        std::env::var_os(PROBE_SOCKET),
        std::env::var_os(PROBE_MARKER),
    ) else {
        return;
    };
    let socket = PathBuf::from(socket);
    let dir = socket.parent().expect("the state dir");
    let outcome = ask(&socket, &start_request(dir, Path::new(&marker)));
    println!("probe: {outcome}");
}

#[test]
fn the_shim_hangs_up_on_another_user_even_through_an_open_socket() {
    let Some(other) = OtherUser::create() else {
        return;
    };
    let scratch = open_scratch();
    let state = scratch.path().join("state");
    fs::create_dir(&state).expect("mkdir");
    let socket = state.join("shim.sock");
    let _shim = ShimProcess(
        Command::new(trainctl_cli_harness::binary())
            .args(["__shim", "--socket"])
            .arg(&socket)
            .stdin(Stdio::null())
            .spawn()
            .expect("start the shim"),
    );
    let started = Instant::now();
    while !socket.exists() {
        assert!(started.elapsed() < Duration::from_secs(10), "no socket");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(mode(&socket), 0o600);
    // Loosened as a umask of 000 would have it: only the peer check is left.
    set_mode(&state, 0o777);
    set_mode(&socket, 0o777);

    let marker = state.join("started-for-another-user");
    // A copy the other user can reach: the build's own folder may be closed to others (a CI
    // clone in a `mktemp -d` folder is 0700).
    let probe_binary = scratch.path().join("probe");
    fs::copy(
        std::env::current_exe().expect("this test binary"),
        &probe_binary,
    )
    .expect("copy the test binary");
    set_mode(&probe_binary, 0o755);
    let probe = Command::new(&probe_binary)
        .args([
            "--exact",
            "permissions::probe_client_as_another_user",
            "--nocapture",
        ])
        .env_clear()
        .env(PROBE_SOCKET, &socket)
        .env(PROBE_MARKER, &marker)
        .uid(other.uid)
        .gid(other.gid)
        .output()
        .expect("run the probe as another user");
    let said = String::from_utf8_lossy(&probe.stdout);
    assert!(probe.status.success(), "{said}");
    assert!(said.contains("probe: hung up\n"), "{said}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!marker.exists(), "the shim ran a command for another user");

    // The shim still serves its own user.
    let mine = state.join("started-for-me");
    let answer = ask(&socket, &start_request(&state, &mine));
    assert!(answer.starts_with("answered: {\"Started\":"), "{answer}");
    let started = Instant::now();
    while !mine.exists() {
        assert!(started.elapsed() < Duration::from_secs(10), "not started");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn under_umask_000_the_state_dir_is_0700_and_the_server_s_files_0600() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let parent = scratch.path().join("made");
    let state = parent.join("state");
    let mut server = Command::new("sh")
        .args(["-c", "umask 000 && exec \"$@\"", "sh"])
        .arg(trainctl_cli_harness::binary())
        .arg("--state-dir")
        .arg(&state)
        .arg("server")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the server");
    let started = Instant::now();
    while !state.join("server.json").exists() {
        if started.elapsed() > Duration::from_secs(20) || server.try_wait().ok().flatten().is_some()
        {
            let _ = server.kill();
            let output = server.wait_with_output().expect("wait");
            panic!(
                "no server.json: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let modes: Vec<(String, u32)> = [
        ".",
        "trainctl.db",
        "trainctl.db-wal",
        "trainctl.db-shm",
        "server.token",
        "server.json",
        "shim.sock",
    ]
    .into_iter()
    .map(|name| (name.to_owned(), mode(&state.join(name))))
    .collect();
    let parent_mode = mode(&parent);
    let _ = Command::new("kill").arg(server.id().to_string()).status();
    let _ = server.wait();
    assert_eq!(parent_mode, 0o700);
    let expected: Vec<(String, u32)> = modes
        .iter()
        .map(|(name, _)| (name.clone(), if name == "." { 0o700 } else { 0o600 }))
        .collect();
    assert_eq!(modes, expected);
}

#[test]
fn a_server_whose_shim_cannot_start_gives_up_at_once_with_the_shim_s_error() {
    let scratch = tempfile::tempdir().expect("tempdir");
    // Too long a path for a Unix socket: the shim cannot bind it.
    let state = scratch.path().join("s".repeat(110));
    let socket = state.join("shim.sock");
    let started = Instant::now();
    let server = trainctl(&["--state-dir", state.to_str().expect("UTF-8"), "server"]);
    let took = started.elapsed();
    assert_eq!(server.code, Some(1), "{}", server.stderr);
    let prefix = "error: cannot become the reaper of the replicas: the shim (pid ";
    assert!(server.stderr.starts_with(prefix), "{}", server.stderr);
    let said = format!(
        ") exited before it listened on {socket}; it said: error: the shim cannot serve on \
         {socket}: ",
        socket = socket.display()
    );
    assert!(server.stderr.contains(&said), "{}", server.stderr);
    assert_eq!(server.stderr.lines().count(), 1, "{}", server.stderr);
    assert!(took < Duration::from_secs(5), "gave up after {took:?}");
}
