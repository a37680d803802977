//! The shim: the parent of a server's replicas, so that they outlive a server that dies and their
//! exit codes are known all the same (containerd's shim, one for the whole server).
//!
//! A server starts `trainctl __shim` once, in a process group of its own, listening on a Unix
//! socket in the state directory; it asks the shim to start each replica ([`Shim::start`]), in a
//! process group of its own, marked as its job's, with its output going through a pipe to a pump
//! thread of the shim's that writes its log file (and the log's index), as containerd's shim
//! copies a container's output.
//! The shim waits for its replicas; when one exits, it writes the exit code (`128 + n` for signal
//! `n`) to the replica's exit file, kills the replica's group (a container's processes end with
//! its main process), reaps it, and tells the server. It ends once it has no replica left and no
//! server connected.
//!
//! A shim rather than a keeper process per replica: a replica's start then costs one exec, as a
//! container's does, instead of two (BENCHMARKS.md, `trainctl server`).
//!
//! When the server dies, the shim goes on: the next server connects to it, adopts the replicas
//! that still run (they are not its children, so it watches them in `/proc` until they are gone,
//! see [`adopted_exit`]) and reads the exit codes of those that
//! ended from their exit files. Should the shim die instead, the server's connection ends and
//! the server stops the replicas it ran and starts the next ones through a new shim
//! ([`Shim`]); those replicas come back to the server that started the shim (their
//! subreaper), which reaps them: every replica started through the shim is also expected by the
//! server's [`Reaper`](super::Reaper) (its waiters).
//!
//! The protocol is one JSON object per line: the server says `Hello` with its environment (the
//! replicas inherit the environment of the server that starts them, not of the one that started
//! the shim) and then `Start`s; the shim answers each `Start` in order, and says `Exited` when a
//! replica it started for any server ends.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs;
use std::io::{self, BufRead as _, BufReader};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, waitid, waitpid};

use super::cgroup;
use super::child::{Termination, status_code};
use super::identity::ProcessIdentity;
use super::logs::open_log_file;
use super::marker::{MARKER_ENV, kill_marked_where};
use super::mounts;
use crate::state_dir::write_private;

mod client;
mod output;
mod protocol;
mod stderr;
pub use client::{LostReplicas, Shim};
use output::{Pump, output_of};
use protocol::{Reply, Request, StartRequest, send};

/// How often a replica taken over from a server that died (not a child of this process) is
/// looked at.
const ADOPTED_POLL: Duration = Duration::from_millis(100);

/// The shim's socket in a state directory.
#[must_use]
pub fn socket_path(state_dir: &Path) -> PathBuf {
    state_dir.join("shim.sock")
}

/// What the shim keeps: the connected server and the replicas that run.
#[derive(Default)]
struct ShimState {
    server: Option<UnixStream>,
    env: Vec<(OsString, OsString)>,
    /// The replicas that run, by pid.
    replicas: HashMap<i32, Kept>,
}

/// A replica the shim keeps.
struct Kept {
    /// Where its exit code goes.
    exit_file: PathBuf,
    /// The pump of its output, when it could start: it ends once the replica and all it started
    /// are gone, having written their last lines and the exit code it is handed.
    pump: Option<Pump>,
}

type Shared = Arc<Mutex<ShimState>>;

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, ShimState> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs the shim on `socket` until it has no replica left and no server connected. Only this
/// user's processes are heard: the socket is 0600, and a peer of another user is hung up on.
pub fn serve(socket: &Path) -> io::Result<()> {
    // A socket left by a shim that died is in the way; a live shim's is not touched (a server
    // starts a shim only when it cannot connect to one).
    let _ = fs::remove_file(socket);
    let listener = UnixListener::bind(socket)?;
    // A connection starts commands as this user: the socket is no one else's whatever the umask
    // (in its owner's 0700 state directory besides), and each peer's user is checked.
    {
        use std::os::unix::fs::PermissionsExt as _;
        let private = fs::Permissions::from_mode(crate::state_dir::FILE_MODE);
        fs::set_permissions(socket, private)?;
    }
    let shared: Shared = Arc::default();
    let (wake, woken) = mpsc::channel();
    let reaper_state = Arc::clone(&shared);
    thread::Builder::new()
        .name("shim-reaper".to_owned())
        .spawn(move || reap(&reaper_state, &woken))?;
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        if !same_user(&stream) {
            // Closed unheard: another user starts nothing here.
            continue;
        }
        lock(&shared).server = Some(stream.try_clone()?);
        serve_server(&shared, stream, &wake);
        let mut state = lock(&shared);
        state.server = None;
        if state.replicas.is_empty() {
            return Ok(());
        }
    }
    Ok(())
}

/// Whether the process at the other end of `stream` runs as this process's user
/// (`SO_PEERCRED`).
fn same_user(stream: &UnixStream) -> bool {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    getsockopt(stream, PeerCredentials)
        .is_ok_and(|peer| peer.uid() == nix::unistd::geteuid().as_raw())
}

/// Answers one server's requests until it disconnects.
fn serve_server(shared: &Shared, stream: UnixStream, wake: &mpsc::Sender<()>) {
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { return };
        let answered = match serde_json::from_str(&line) {
            Ok(Request::Hello { env }) => {
                lock(shared).env = env;
                Ok(())
            }
            Ok(Request::Start(request) | Request::StartMounted(request)) => {
                start(shared, &request, wake)
            }
            Err(error) => answer(
                &mut lock(shared),
                &Reply::Failed {
                    error: format!("not a shim request: {error}"),
                    not_found: false,
                },
            ),
        };
        if answered.is_err() {
            return;
        }
    }
}

/// Sends `reply` to the connected server.
fn answer(state: &mut ShimState, reply: &Reply) -> io::Result<()> {
    match &mut state.server {
        Some(server) => send(server, reply),
        None => Err(io::ErrorKind::NotConnected.into()),
    }
}

/// Starts one replica and answers the server.
fn start(shared: &Shared, request: &StartRequest, wake: &mpsc::Sender<()>) -> io::Result<()> {
    let failed = |error: io::Error| Reply::Failed {
        not_found: error.kind() == io::ErrorKind::NotFound,
        error: error.to_string(),
    };
    let (mut command, pending) = match mounts::command(&request.argv, request.mounts.as_ref()) {
        Ok(built) => built,
        Err(error) => return answer(&mut lock(shared), &failed(error)),
    };
    let output = open_log_file(&request.log_path).and_then(|log| output_of(log, request.log_limit));
    let cleared = match fs::remove_file(&request.exit_file) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    };
    // Held from the spawn to the answer: the reaper says a replica exited only once it is
    // recorded and the server has heard that it started.
    let mut state = lock(shared);
    let (stdout, stderr, unstarted_pump) = match cleared.and(output) {
        Ok(output) => output,
        Err(error) => return answer(&mut state, &failed(error)),
    };
    let job_uid = request
        .env
        .iter()
        .find(|(name, _)| name == MARKER_ENV)
        .map_or("", |(_, uid)| uid.as_str());
    let cgroup = cgroup::make(
        job_uid,
        &cgroup::replica_name(&request.log_path),
        &request.limits,
    );
    command
        .env_clear()
        .envs(state.env.iter().map(|(name, value)| (name, value)))
        .envs(request.env.iter().map(|(name, value)| (name, value)))
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0);
    // Through the helper, the directory is entered once the volumes are mounted.
    if let (Some(dir), None) = (&request.working_dir, &request.mounts) {
        command.current_dir(dir);
    }
    // No other replica is forked while this process is inside a replica's cgroup: the state
    // is locked.
    let (spawned, cgroup) = match cgroup {
        Some(cgroup) => cgroup::spawn_inside(cgroup, || command.spawn()),
        None => (cgroup::spawn_outside(|| command.spawn()), None),
    };
    // The command holds the pipe's write ends; the pump must see only the replica's.
    drop(command);
    // A helper that could not start the command exits: reaped below, its exit unrecorded.
    let spawned = spawned.and_then(|child| pending.confirm().map(|()| child));
    let reply = match spawned {
        Ok(child) => {
            let pid = child.id().cast_signed();
            // A pump that cannot start leaves the replica writing into a pipe no one reads:
            // it blocks once the pipe is full, as a container does whose shim died.
            let pump = unstarted_pump.start().ok();
            if let Some(cgroup) = cgroup {
                // For a server that takes the replica over should this shim die.
                let _ = cgroup::record(&cgroup_file(&request.log_path), &cgroup);
                cgroup::started(pid, cgroup);
            }
            let kept = Kept {
                exit_file: request.exit_file.clone(),
                pump,
            };
            state.replicas.insert(pid, kept);
            let _ = wake.send(());
            Reply::Started { pid }
        }
        Err(error) => failed(error),
    };
    answer(&mut state, &reply)
}

/// The shim's reaper: records each replica's exit code, kills its group, reaps it, and tells the
/// server; ends the shim when the last replica is gone and no server is connected.
fn reap(shared: &Shared, woken: &mpsc::Receiver<()>) {
    loop {
        match waitid(Id::All, WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
            Ok(status) => {
                let Some(pid) = status.pid() else { continue };
                let code = status_code(status);
                let kept = lock(shared)
                    .replicas
                    .get_mut(&pid.as_raw())
                    .map(|kept| (kept.exit_file.clone(), kept.pump.take()));
                let mut oom_killed = false;
                if let Some((exit_file, pump)) = kept {
                    let _ = killpg(pid, Signal::SIGKILL);
                    oom_killed = cgroup::release(pid.as_raw());
                    // Its last lines, and how it ended, are in its log before anyone hears that
                    // it exited.
                    if let Some(pump) = pump {
                        pump.finish(code);
                    }
                    // Written while the replica is still a zombie: whoever sees it gone finds
                    // how it ended.
                    let ended = Termination { code, oom_killed };
                    let _ = write_private(&exit_file, exit_record(ended).as_bytes());
                }
                let _ = waitpid(pid, None);
                let mut state = lock(shared);
                state.replicas.remove(&pid.as_raw());
                if let Some(server) = &mut state.server {
                    let _ = send(
                        server,
                        &Reply::Exited {
                            pid: pid.as_raw(),
                            code,
                            oom_killed,
                        },
                    );
                }
                if state.replicas.is_empty() && state.server.is_none() {
                    std::process::exit(0);
                }
            }
            Err(Errno::EINTR) => {}
            Err(_) => {
                if woken.recv().is_err() {
                    return;
                }
                while woken.try_recv().is_ok() {}
            }
        }
    }
}

/// The exit-code file of the replica whose output goes to `log_path`.
#[must_use]
pub fn exit_file(log_path: &Path) -> PathBuf {
    log_path.with_extension("exit")
}

/// Where the shim records the cgroup of the replica whose output goes to `log_path`.
#[must_use]
pub fn cgroup_file(log_path: &Path) -> PathBuf {
    log_path.with_extension("cgroup")
}

/// What the shim writes to a replica's exit file: its exit code on a line, then `OOMKilled` on
/// one when the kernel killed it for its memory limit.
fn exit_record(ended: Termination) -> String {
    let mut record = format!("{}\n", ended.code);
    if ended.oom_killed {
        record.push_str(OOM_KILLED_LINE);
    }
    record
}

/// The line of an exit file that says the replica was killed for its memory limit.
const OOM_KILLED_LINE: &str = "OOMKilled\n";

/// How the replica ended, as the shim recorded it in `exit_file`, or `None` when it recorded
/// nothing (yet, or ever: the shim was killed).
#[must_use]
pub fn recorded_exit(exit_file: &Path) -> Option<Termination> {
    let text = fs::read_to_string(exit_file).ok()?;
    let (code, rest) = text.split_once('\n')?;
    Some(Termination {
        code: code.parse().ok()?,
        oom_killed: rest == OOM_KILLED_LINE,
    })
}

/// Waits for a replica that this process took over from a server that died (so it is not this
/// process's child, but the shim's) until the shim has reaped it, having written its exit code
/// first; returns how it ended. A replica whose shim was killed too has none, and `None` says so:
/// its exit was seen by no one, and no code is made up for it. Whatever it left running is
/// killed then (its cgroup, and its group's processes marked as the job's).
pub async fn adopted_exit(
    replica: ProcessIdentity,
    exit_file: PathBuf,
    job_uid: String,
) -> Option<Termination> {
    let contained = cgroup::recorded(&exit_file.with_extension("cgroup"), &job_uid);
    while replica.exists() {
        tokio::time::sleep(ADOPTED_POLL).await;
    }
    let ended = recorded_exit(&exit_file);
    if ended.is_none() {
        if let Some(contained) = &contained {
            contained.kill_and_remove();
        }
        // Only the job's own processes: the group's id may be another's by now.
        kill_marked_where(&job_uid, |group| group == Some(replica.pid));
    }
    ended
}
