//! A server's side of the shim: its connection ([`Shim`]), which asks the shim to start each
//! replica and hears how each one ended.
//!
//! The shim can die (a `kill -9`, the OOM killer). The connection then ends, and the server
//! notices at once: the replicas the shim ran have lost the reader of their output (their next
//! write would fail, or kill them with `SIGPIPE`) and no one would hear their exits. So they are
//! stopped, with their cgroups, and their exits handed to the runner as `SIGKILL`'s, each
//! recorded as lost with its shim ([`LostReplicas`]) so that the runner can say why; the next
//! replica is started through a new shim, as containerd starts a new shim for a container.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{self, BufRead as _, BufReader};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::sync::oneshot;

use super::protocol::{Reply, Request, StartRequest, older_shim, send};
use super::stderr::ShimStderr;
use super::{exit_file, socket_path};
use crate::process::cgroup;
use crate::process::child::{HelperCommand, KILLED, Launch, StartedProcess, Termination, Waiters};
use crate::process::marker::MARKER_ENV;

/// The replicas stopped because the shim that ran them died, by pid, until the runner asks.
#[derive(Debug, Clone, Default)]
pub struct LostReplicas(Arc<Mutex<HashSet<i32>>>);

impl LostReplicas {
    /// Whether the replica `pid` was stopped because its shim died (said once).
    #[must_use]
    pub fn take(&self, pid: i32) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&pid)
    }

    fn add(&self, pids: impl IntoIterator<Item = i32>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(pids);
    }
}

/// A server's connection to the shim.
#[derive(Debug)]
pub struct Shim {
    /// The requests, and the answers to `Start`s, in order.
    requests: Mutex<(UnixStream, mpsc::Receiver<Result<i32, io::Error>>)>,
    /// Where the exit code of each `Start` sent and not yet answered goes, in order.
    exits: Arc<Mutex<VecDeque<oneshot::Sender<Termination>>>>,
    /// Whether this process started the shim (so that it is the subreaper of what the shim's
    /// replicas leave behind).
    started_here: bool,
    /// The replicas the shim runs, each with its job's uid.
    running: Running,
    /// Whether the connection has ended: the shim is gone.
    lost: Arc<AtomicBool>,
}

/// The replicas a shim runs: pid → the job's uid.
type Running = Arc<Mutex<HashMap<i32, String>>>;

impl Shim {
    /// Connects to the shim of `state_dir`, starting one with `helper` through `spawn` (which
    /// returns its pid) when none answers. The replicas it starts are expected by `waiters` too
    /// (the reaper's): should the shim die, they come back to this process.
    pub fn connect_or_start(
        state_dir: &Path,
        helper: &HelperCommand,
        waiters: Waiters,
        lost_replicas: LostReplicas,
        spawn: impl FnOnce(&mut Command) -> io::Result<i32>,
    ) -> io::Result<Shim> {
        let socket = socket_path(state_dir);
        let (mut stream, started_here) = match UnixStream::connect(&socket) {
            Ok(stream) => (stream, false),
            Err(_) => (start_shim(&socket, helper, spawn)?, true),
        };
        let (answers, replies) = mpsc::channel();
        let exits: Arc<Mutex<VecDeque<oneshot::Sender<Termination>>>> = Arc::default();
        let running = Running::default();
        let lost = Arc::new(AtomicBool::new(false));
        let replies_reader = Replies {
            answers,
            exits: Arc::clone(&exits),
            waiters,
            running: Arc::clone(&running),
            lost: Arc::clone(&lost),
            lost_replicas,
        };
        let lines = BufReader::new(stream.try_clone()?);
        thread::Builder::new()
            .name("shim-client".to_owned())
            .spawn(move || replies_reader.read(lines))?;
        send(
            &mut stream,
            &Request::Hello {
                env: std::env::vars_os().collect(),
            },
        )?;
        Ok(Shim {
            requests: Mutex::new((stream, replies)),
            exits,
            started_here,
            running,
            lost,
        })
    }

    /// Whether the shim is gone: no replica can be started through it any more.
    #[must_use]
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    /// Whether what the shim's replicas leave behind comes back to this process.
    #[must_use]
    pub fn started_here(&self) -> bool {
        self.started_here
    }

    /// Starts a replica through the shim: `launch`'s command in a new process group, with its
    /// output pumped into its log file by the shim, marked as the job `job_uid`'s.
    pub fn start(&self, launch: &Launch, job_uid: &str) -> io::Result<StartedProcess> {
        let mut env = launch.env.clone();
        env.push((MARKER_ENV.to_owned(), job_uid.to_owned()));
        let start = StartRequest {
            argv: launch.argv.clone(),
            env,
            working_dir: launch.working_dir.clone(),
            log_path: launch.log_path.clone(),
            log_limit: launch.log_limit,
            exit_file: exit_file(&launch.log_path),
            mounts: launch.mounts.clone(),
            limits: launch.limits,
        };
        let request = if start.mounts.is_some() {
            Request::StartMounted(start)
        } else {
            Request::Start(start)
        };
        let (sender, exit) = oneshot::channel();
        let mut requests = self.requests.lock().unwrap_or_else(PoisonError::into_inner);
        let (stream, replies) = &mut *requests;
        self.exits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(sender);
        if let Err(error) = send(stream, &request) {
            if error.kind() == io::ErrorKind::BrokenPipe {
                self.lost.store(true, Ordering::Release);
            }
            return Err(error);
        }
        let pid = replies.recv().unwrap_or_else(|_| {
            Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the shim that starts the replicas is gone",
            ))
        })?;
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(pid, job_uid.to_owned());
        Ok(StartedProcess {
            pid,
            exit,
            pump: None,
        })
    }
}

/// The shim's replies, as a server reads them.
struct Replies {
    /// Where the answers to `Start`s go.
    answers: mpsc::Sender<Result<i32, io::Error>>,
    /// The exit code's destination of each `Start` not answered yet.
    exits: Arc<Mutex<VecDeque<oneshot::Sender<Termination>>>>,
    /// The server's reaper's waiters.
    waiters: Waiters,
    /// The replicas the shim runs.
    running: Running,
    /// Set when the connection ends.
    lost: Arc<AtomicBool>,
    /// Where the replicas stopped with a lost shim are told.
    lost_replicas: LostReplicas,
}

impl Replies {
    /// Hands each answer to the waiting `Start` (a started replica's exit is expected before the
    /// next reply is read, which may be its exit) and each exit to its waiter.
    fn read(self, lines: BufReader<UnixStream>) {
        for line in lines.lines() {
            let Ok(line) = line else { break };
            let next_exit = || {
                self.exits
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .pop_front()
            };
            let answer = match serde_json::from_str::<Reply>(&line) {
                Ok(Reply::Exited {
                    pid,
                    code,
                    oom_killed,
                }) => {
                    self.running
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .remove(&pid);
                    self.waiters.deliver(pid, Termination { code, oom_killed });
                    continue;
                }
                Ok(Reply::Started { pid }) => {
                    if let Some(exit) = next_exit() {
                        self.waiters.expect(pid, exit);
                    }
                    Ok(pid)
                }
                Ok(Reply::Failed { error, not_found }) => {
                    next_exit();
                    let kind = if not_found {
                        io::ErrorKind::NotFound
                    } else {
                        io::ErrorKind::Other
                    };
                    Err(io::Error::new(kind, older_shim(error)))
                }
                Err(error) => {
                    tracing::warn!(%error, "the shim sent what is not a reply");
                    continue;
                }
            };
            if self.answers.send(answer).is_err() {
                return;
            }
        }
        self.shim_lost();
    }

    /// The connection has ended: the shim is gone. Its replicas, whose output has no reader any
    /// more, are stopped with their jobs' cgroups, and their exits handed on as `SIGKILL`'s.
    fn shim_lost(self) {
        self.lost.store(true, Ordering::Release);
        let running =
            std::mem::take(&mut *self.running.lock().unwrap_or_else(PoisonError::into_inner));
        tracing::error!(
            replicas = running.len(),
            "the shim that ran this server's replicas died: its replicas lost the reader of \
             their output and are stopped; the next ones start through a new shim"
        );
        // Known as lost before they are killed: the reaper may hand on their exits at once.
        self.lost_replicas.add(running.keys().copied());
        for pid in running.keys() {
            let _ = killpg(Pid::from_raw(*pid), Signal::SIGKILL);
        }
        let jobs: HashSet<&String> = running.values().collect();
        for job in jobs {
            cgroup::kill_job(job);
        }
        for pid in running.keys() {
            self.waiters.deliver(*pid, Termination::exited(KILLED));
        }
    }
}

/// Starts a shim listening on `socket` through `spawn`, and connects to it. A shim that exits
/// before it listens (it cannot bind, say) is reported at once, with what it said on its stderr
/// ([`ShimStderr`]), rather than when waiting for it gives up.
fn start_shim(
    socket: &Path,
    helper: &HelperCommand,
    spawn: impl FnOnce(&mut Command) -> io::Result<i32>,
) -> io::Result<UnixStream> {
    let (reader, writer) = io::pipe()?;
    let mut command = Command::new(&helper.program);
    command
        .args(&helper.args)
        .arg("--socket")
        .arg(socket)
        .stdin(Stdio::null())
        .stderr(writer)
        .process_group(0);
    let pid = spawn(&mut command)?;
    // The pipe closes when the shim ends only if the shim alone holds its write end.
    drop(command);
    let stderr = ShimStderr::read(reader)?;
    // The shim binds its socket as it starts.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let error = match UnixStream::connect(socket) {
            Ok(stream) => {
                stderr.pass_on();
                return Ok(stream);
            }
            Err(error) => error,
        };
        if let Some(said) = stderr.ended() {
            let said = if said.is_empty() {
                "it said nothing".to_owned()
            } else {
                format!("it said: {said}")
            };
            return Err(io::Error::other(format!(
                "the shim (pid {pid}) exited before it listened on {}; {said}",
                socket.display()
            )));
        }
        if std::time::Instant::now() > deadline {
            return Err(io::Error::new(
                error.kind(),
                format!(
                    "the shim (pid {pid}) does not answer on {}: {error}",
                    socket.display()
                ),
            ));
        }
        thread::sleep(std::time::Duration::from_millis(2));
    }
}
