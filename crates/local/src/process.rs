//! Replica processes: starting them in their own process groups, reaping them (and whatever they
//! leave behind), signalling them, and keeping the [`watchdog`](crate::watchdog) informed.
//!
//! `trainctl run` pipes a replica's output through a log pump (to the terminal and the log file)
//! when it shows it, else the replica writes to its log file itself; the replica ends with
//! `trainctl`. A server has the [`shim`](crate::shim) start it instead,
//! writing to its log file itself, so that it outlives a server that dies and the next server
//! takes it over ([`adopted_exit`]).
//!
//! `trainctl` is the child subreaper of everything its replicas start: a process whose parent
//! exits comes back to `trainctl` rather than to init, so nothing a replica starts can slip away
//! while the job runs. One reaper thread waits for every child. When a replica's main process
//! exits, its group is killed before the process is reaped (a container's processes end with its
//! main process, and the exited process still holds the group's id, so the signal cannot reach a
//! recycled one); anything else that comes back is reaped as it ends, and killed when the job
//! ends.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{self, BufWriter, Write as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, fcntl};
use nix::sys::prctl;
use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid, waitpid};
use nix::unistd::Pid;
use rustix::process::{Pid as RustixPid, setpriority_process};
use tokio::sync::oneshot;

use crate::logs::{Console, open_log_file, pump};
use crate::process_identity::{self, ProcessIdentity};
use crate::shim::Shim;
use crate::watchdog::MARKER_ENV;

/// How to start a helper process of this binary (the watchdog): the program and the arguments
/// that select the helper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperCommand {
    /// The program, e.g. `/proc/self/exe`.
    pub program: PathBuf,
    /// Its arguments, e.g. `["__watchdog"]`.
    pub args: Vec<OsString>,
}

/// Everything needed to start one replica's command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The command and its arguments, `$(VAR)`-expanded.
    pub argv: Vec<String>,
    /// The pod's env, put on top of the env `trainctl` itself has.
    pub env: Vec<(String, String)>,
    /// The container's `workingDir`; `trainctl`'s own when `None`.
    pub working_dir: Option<PathBuf>,
    /// `terminationGracePeriodSeconds`.
    pub grace: Duration,
    /// Where the replica's output is kept.
    pub log_path: PathBuf,
    /// The prefix of the replica's lines on the terminal.
    pub prefix: String,
}

/// A started replica process.
#[derive(Debug)]
pub struct StartedProcess {
    /// Its pid, also its process group's id.
    pub pid: i32,
    /// Its exit code once it has exited: the code, or `128 + n` for signal `n`.
    pub exit: oneshot::Receiver<i32>,
    /// The log pump, which ends once the replica and everything it started have closed the pipe;
    /// `None` when the replica writes to its log file itself.
    pub pump: Option<tokio::task::JoinHandle<()>>,
}

impl StartedProcess {
    /// Waits for the replica to exit (and, for a piped one, for its last lines to reach the
    /// terminal); returns its command's exit code.
    pub async fn exited(self) -> i32 {
        let code = self.exit.await.unwrap_or(KILLED);
        if let Some(pump) = self.pump {
            let _ = tokio::time::timeout(Duration::from_secs(2), pump).await;
        }
        code
    }
}

/// The exit code of a process that ended with `status`: its code, or `128 + n` for signal `n`.
pub(crate) fn status_code(status: WaitStatus) -> i32 {
    match status {
        WaitStatus::Exited(_, code) => code,
        WaitStatus::Signaled(_, signal, _) => 128 + signal as i32,
        _ => KILLED,
    }
}

/// The exit code of a process killed by `SIGKILL`.
pub const KILLED: i32 = 128 + Signal::SIGKILL as i32;

/// The watchdog's nice value: the lowest priority.
const WATCHDOG_NICE: i32 = 19;

/// How often a replica taken over from a server that died (not a child of this process) is
/// looked at.
const ADOPTED_POLL: Duration = Duration::from_millis(100);

/// The capacity asked for each replica's output pipe (Linux's default unprivileged maximum).
const PIPE_SIZE: i32 = 1 << 20;

/// The children being waited for: pid → where its exit code goes (`None`: reap it quietly).
type Waiting = Arc<Mutex<HashMap<i32, Option<oneshot::Sender<i32>>>>>;

/// The processes a [`Reaper`] waits for, shared with whoever else may see them end (the
/// [`shim`](crate::shim) that is their parent).
#[derive(Debug, Clone)]
pub struct Waiters(Waiting);

impl Waiters {
    /// Expects the process `pid`, whose exit code goes to `exit`: the shim's replica, which comes
    /// back to this process (its subreaper) should the shim die.
    pub fn expect(&self, pid: i32, exit: oneshot::Sender<i32>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(pid, Some(exit));
    }

    /// Hands the exit code of the expected process `pid` to its waiter, if it has one.
    pub fn deliver(&self, pid: i32, code: i32) {
        let exit = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&pid);
        if let Some(Some(exit)) = exit {
            let _ = exit.send(code);
        }
    }
}

/// Starts processes and reaps every child of this process.
#[derive(Debug)]
pub struct Reaper {
    waiting: Waiting,
    /// Wakes the reaper thread when a child is started while it has none.
    wake: mpsc::Sender<()>,
    /// The shim that starts a server's replicas, once connected.
    shim: OnceLock<Shim>,
}

impl Reaper {
    /// Makes this process the subreaper of its descendants and starts the reaper thread. Only one
    /// reaper may run in a process, and nothing else in it may wait for children.
    pub fn start() -> io::Result<Reaper> {
        prctl::set_child_subreaper(true).map_err(io::Error::from)?;
        let waiting: Waiting = Arc::default();
        let (wake, woken) = mpsc::channel();
        let shared = Arc::clone(&waiting);
        thread::Builder::new()
            .name("reaper".to_owned())
            .spawn(move || reap(&shared, &woken))?;
        Ok(Reaper {
            waiting,
            wake,
            shim: OnceLock::new(),
        })
    }

    /// Starts `command`; its exit code goes to `exit`, if given.
    fn spawn(
        &self,
        command: &mut Command,
        exit: Option<oneshot::Sender<i32>>,
    ) -> io::Result<std::process::Child> {
        // Held across the spawn: a process that exits at once is looked up only after this.
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let child = command.spawn()?;
        waiting.insert(child.id() as i32, exit);
        drop(waiting);
        let _ = self.wake.send(());
        Ok(child)
    }

    /// Starts a helper process (the shim), reaped quietly; returns its pid.
    pub fn spawn_helper(&self, command: &mut Command) -> io::Result<i32> {
        Ok(self.spawn(command, None)?.id().cast_signed())
    }

    /// The processes this reaper waits for.
    #[must_use]
    pub fn waiters(&self) -> Waiters {
        Waiters(Arc::clone(&self.waiting))
    }

    /// Connects to the shim of `state_dir` (starting it with `helper` if none runs), through
    /// which [`Reaper::start_kept_replica`] starts replicas.
    pub fn connect_shim(&self, state_dir: &Path, helper: &HelperCommand) -> io::Result<()> {
        let shim = Shim::connect_or_start(state_dir, helper, self)?;
        self.shim
            .set(shim)
            .map_err(|_| io::Error::other("the reaper is connected to a shim already"))
    }

    /// Kills what the job `job_uid` left behind outside its replicas' groups (processes that
    /// called `setsid`): every process marked with the job's uid.
    ///
    /// Once every replica's main process is gone, anything a replica started is a descendant of
    /// one of this process's children (it is their subreaper). When every child is a process this
    /// reaper started (some job's replica or watchdog), nothing was left behind, and the process
    /// table is not scanned: a server ends jobs while others run, and a scan reads every
    /// process's environment.
    ///
    /// What the replicas of a shim that another process started leave behind does not come back
    /// here: the table is always scanned then.
    pub fn kill_strays(&self, job_uid: &str) {
        if self.shim.get().is_some_and(|shim| !shim.started_here()) {
            kill_marked(job_uid);
            return;
        }
        let waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let left_behind =
            children().is_none_or(|children| children.iter().any(|pid| !waiting.contains_key(pid)));
        drop(waiting);
        if left_behind {
            kill_marked(job_uid);
        }
    }

    /// Starts a replica: `launch`'s command in a new process group, with its output going to its
    /// log file and, when it shows replicas' output, `console`, marked as the job `job_uid`'s.
    pub fn start_replica(
        &self,
        launch: &Launch,
        job_uid: &str,
        console: &Console,
    ) -> io::Result<StartedProcess> {
        let (program, args) = launch
            .argv
            .split_first()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the command is empty"))?;
        let file = open_log_file(&launch.log_path)?;
        let mut command = Command::new(program);
        command
            .args(args)
            .envs(launch.env.iter().map(|(name, value)| (name, value)))
            .env(MARKER_ENV, job_uid)
            .stdin(Stdio::null())
            .process_group(0);
        if let Some(dir) = &launch.working_dir {
            command.current_dir(dir);
        }
        let piped = if console.shows_logs() {
            let (reader, writer) = io::pipe()?;
            // A larger pipe lets a chatty replica write on while the pump is not scheduled; the
            // default size is kept where the system refuses.
            let _ = fcntl(&reader, FcntlArg::F_SETPIPE_SZ(PIPE_SIZE));
            command.stdout(writer.try_clone()?).stderr(writer);
            Some((reader, file))
        } else {
            // Nothing to show: no pipe, no copy.
            command.stdout(file.try_clone()?).stderr(file);
            None
        };
        let (sender, exit) = oneshot::channel();
        let child = self.spawn(&mut command, Some(sender))?;
        // The command holds the pipe's write ends; the pump must see only the replica's.
        drop(command);
        let pump = piped
            .map(|(reader, file)| pump(reader, file, console.clone(), launch.prefix.clone()))
            .transpose()?;
        Ok(StartedProcess {
            pid: child.id() as i32,
            exit,
            pump,
        })
    }

    /// Starts a replica that can outlive this process, through the [`shim`](crate::shim)
    /// (see [`Reaper::connect_shim`]): `launch`'s command in a new process group, with its
    /// output appended straight to its log file, marked as the job `job_uid`'s.
    pub fn start_kept_replica(&self, launch: &Launch, job_uid: &str) -> io::Result<StartedProcess> {
        self.shim
            .get()
            .ok_or_else(|| io::Error::other("no shim to start the replica: connect to one first"))?
            .start(launch, job_uid)
    }

    /// Starts a watchdog (see [`crate::watchdog`]), before the job it will guard is known: it
    /// guards the job [`Watchdog::guard`] names.
    pub fn start_watchdog(&self, helper: &HelperCommand) -> io::Result<Watchdog> {
        let mut command = Command::new(&helper.program);
        command
            .args(&helper.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .process_group(0);
        let mut child = self.spawn(&mut command, None)?;
        // The lowest nice value: its start (a whole start of this binary) then takes CPU no
        // one else wants, not the replicas' or trainctl's, until it moves itself to
        // `SCHED_IDLE`; should trainctl die, its work is a few signals. Where the system
        // refuses, it runs at trainctl's priority.
        if let Some(pid) = RustixPid::from_raw(child.id().cast_signed()) {
            let _ = setpriority_process(Some(pid), WATCHDOG_NICE);
        }
        let input = child
            .stdin
            .take()
            .ok_or_else(|| io::Error::other("the watchdog has no stdin"))?;
        Ok(Watchdog {
            pid: child.id() as i32,
            input: Some(BufWriter::new(input)),
        })
    }
}

/// The reaper thread: waits for any child; for a replica, kills what is left of its group before
/// reaping it and reports its exit code.
fn reap(waiting: &Waiting, woken: &mpsc::Receiver<()>) {
    loop {
        match waitid(Id::All, WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
            Ok(status) => {
                let Some(pid) = status.pid() else { continue };
                let sender = waiting
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&pid.as_raw());
                if matches!(sender, Some(Some(_))) {
                    let _ = killpg(pid, Signal::SIGKILL);
                }
                let code = waitpid(pid, None).map_or(KILLED, status_code);
                if let Some(Some(sender)) = sender {
                    let _ = sender.send(code);
                }
            }
            Err(Errno::EINTR) => {}
            // No child: sleep until one is started (or the reaper is gone).
            Err(_) => {
                if woken.recv().is_err() {
                    return;
                }
                while woken.try_recv().is_ok() {}
            }
        }
    }
}

/// The pipe to the job's watchdog. Lines are buffered until [`Watchdog::flush`], so a pass that
/// starts many replicas wakes the watchdog once; a replica it has not heard of yet is still
/// stopped if trainctl dies, found by its marker.
#[derive(Debug)]
pub struct Watchdog {
    pid: i32,
    input: Option<BufWriter<ChildStdin>>,
}

impl Watchdog {
    /// The watchdog's pid.
    #[must_use]
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Tells the watchdog which job it guards, at once: should trainctl die from here on, the
    /// watchdog finds the job's processes by their marker, even those it has not heard of.
    pub fn guard(&mut self, job_uid: &str) {
        self.say(&format!("job {job_uid}"));
        self.flush();
    }

    /// Tells the watchdog about a replica's process group and its grace period.
    pub fn watch(&mut self, pgid: i32, grace: Duration) {
        self.say(&format!("group {pgid} {}", grace.as_secs_f64()));
    }

    /// Tells the watchdog that a replica's process group is gone.
    pub fn forget(&mut self, pgid: i32) {
        self.say(&format!("ended {pgid}"));
    }

    /// Hands the watchdog a directory to remove (a replaced run's logs), at once: it removes it
    /// on CPU that nothing else wants, even if trainctl dies meanwhile. `false` when it cannot
    /// take it (the watchdog is gone, or the path is not one line of UTF-8): the caller removes
    /// the directory itself.
    pub fn remove_dir(&mut self, dir: &Path) -> bool {
        let Some(dir) = dir.to_str().filter(|dir| !dir.contains('\n')) else {
            return false;
        };
        self.say(&format!("remove {dir}"));
        self.flush();
        self.input.is_some()
    }

    /// Tells the watchdog that every replica was stopped; it exits.
    pub fn done(&mut self) {
        self.say("done");
        self.flush();
        self.input = None;
    }

    /// Sends the buffered lines.
    pub fn flush(&mut self) {
        if let Some(input) = &mut self.input
            && input.flush().is_err()
        {
            self.input = None;
        }
    }

    fn say(&mut self, line: &str) {
        // A watchdog that died cannot be helped; the job goes on without one.
        if let Some(input) = &mut self.input
            && writeln!(input, "{line}").is_err()
        {
            self.input = None;
        }
    }
}

/// Waits for a replica that this process took over from a server that died (so it is not this
/// process's child, but the shim's) until the shim has reaped it, having written its exit code
/// first; returns that code. A replica whose shim was killed has none, and its group may live on:
/// it is killed then.
pub async fn adopted_exit(replica: ProcessIdentity, exit_file: PathBuf, job_uid: String) -> i32 {
    while replica.exists() {
        tokio::time::sleep(ADOPTED_POLL).await;
    }
    if crate::shim::recorded_exit_code(&exit_file).is_none() {
        // Only the job's own processes: the group's id may be another's by now.
        kill_marked_where(&job_uid, |group| group == Some(replica.pid));
    }
    crate::shim::exit_code(&exit_file)
}

/// Sends `signal` to a replica's process group; a group that is gone already is no error.
pub fn signal_group(pgid: i32, signal: Signal) {
    let _ = killpg(Pid::from_raw(pgid), signal);
}

/// How long killing a job's marked processes waits for them to be gone: a process that does not
/// end by then is in the kernel's hands (an uninterruptible wait), and no signal can do more.
const MARKED_GONE_WITHIN: Duration = Duration::from_secs(1);

/// How often killing a job's marked processes looks whether they are gone.
const MARKED_POLL: Duration = Duration::from_millis(1);

/// Kills every process marked with the job's uid, and waits until they are gone.
pub fn kill_marked(job_uid: &str) {
    kill_marked_where(job_uid, |_| true);
}

/// Kills the processes marked with the job's uid whose process group `doomed` picks (`None`:
/// the group could not be read), and waits until they are gone, for up to [`MARKED_GONE_WITHIN`].
///
/// One look at the process table is not enough: a process may start another between the look
/// and its `SIGKILL`, and a killed process stays in the table until the scheduler runs it, so
/// that a `ps` right after `trainctl` exits could still show it. The table is read again until
/// nothing doomed is left.
pub fn kill_marked_where(job_uid: &str, doomed: impl Fn(Option<i32>) -> bool) {
    let deadline = Instant::now() + MARKED_GONE_WITHIN;
    loop {
        let left: Vec<Pid> = crate::watchdog::marked_processes(job_uid)
            .into_iter()
            .filter(|pid| doomed(process_identity::process_group(pid.as_raw())))
            .collect();
        if left.is_empty() {
            return;
        }
        for pid in left {
            let _ = kill(pid, Signal::SIGKILL);
        }
        if Instant::now() >= deadline {
            return;
        }
        thread::sleep(MARKED_POLL);
    }
}

/// This process's children, from `/proc/self/task/*/children`; `None` when they cannot be read.
fn children() -> Option<Vec<i32>> {
    let mut children = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let text = std::fs::read_to_string(task.ok()?.path().join("children")).ok()?;
        children.extend(
            text.split_whitespace()
                .filter_map(|pid| pid.parse::<i32>().ok()),
        );
    }
    Some(children)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watchdog::{MARKER_ENV, marked_processes};

    #[test]
    fn killing_a_jobs_processes_leaves_none_even_while_they_start_more() {
        let uid = uuid::Uuid::new_v4().to_string();
        // A marked process that starts a marked `sleep` in a session of its own every
        // millisecond: what one look at the process table finds is never all of them.
        let mut starter = Command::new("sh")
            .args(["-c", "while :; do setsid sleep 30 & sleep 0.001; done"])
            .env(MARKER_ENV, &uid)
            .stdin(Stdio::null())
            .spawn()
            .expect("sh starts");
        let deadline = Instant::now() + Duration::from_secs(5);
        while marked_processes(&uid).len() < 5 {
            assert!(Instant::now() < deadline, "the sleeps never started");
            thread::sleep(Duration::from_millis(1));
        }
        kill_marked(&uid);
        assert_eq!(marked_processes(&uid), []);
        starter.wait().expect("reaped");
    }
}
