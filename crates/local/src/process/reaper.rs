//! The reaper: starts replica processes in their own process groups, reaps them (and whatever
//! they leave behind), and starts the helpers, the [`watchdog`](super::watchdog) and the
//! [`shim`](super::shim).
//!
//! `trainctl run` pipes a replica's output through a log pump (to the log file, its index and,
//! unless `-q`, the terminal); the replica ends with `trainctl`. A server has the shim start it
//! instead, its output pumped by the shim, so that it outlives a server that dies and the next
//! server takes it over ([`adopted_exit`](super::shim::adopted_exit)).
//!
//! `trainctl` is the child subreaper of everything its replicas start: a process whose parent
//! exits comes back to `trainctl` rather than to init, so nothing a replica starts can slip away
//! while the job runs. One reaper thread waits for every child. When a replica's main process
//! exits, its group is killed before the process is reaped (a container's processes end with its
//! main process, and the exited process still holds the group's id, so the signal cannot reach a
//! recycled one); anything else that comes back is reaped as it ends, and killed when the job
//! ends.

use std::io::{self, BufWriter};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread;
use std::time::{Duration, SystemTime};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, fcntl};
use nix::sys::prctl;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, waitid, waitpid};
use nix::unistd::Pid;
use rustix::process::{Pid as RustixPid, setpriority_process};
use tokio::sync::oneshot;

use super::cgroup;
use super::child::{
    HelperCommand, KILLED, Launch, StartedProcess, Termination, Waiters, Waiting, status_code,
};
use super::logs::{Console, LogWriter, open_log_file, pump};
use super::marker::{MARKER_ENV, kill_marked};
use super::mounts;
use super::shim::{LostReplicas, Shim, cgroup_file};
use super::watchdog::Watchdog;

/// The watchdog's nice value: the lowest priority.
const WATCHDOG_NICE: i32 = 19;

/// How often a reaper without children looks for one again.
const IDLE_LOOK: Duration = Duration::from_secs(1);

/// The capacity asked for each replica's output pipe (Linux's default unprivileged maximum).
const PIPE_SIZE: i32 = 1 << 20;

/// Starts processes and reaps every child of this process.
#[derive(Debug)]
pub struct Reaper {
    waiting: Waiting,
    /// Wakes the reaper thread when a child is started while it has none.
    wake: mpsc::Sender<()>,
    /// The shim that starts a server's replicas, once connected (a new one when it died).
    shim: Mutex<Option<Arc<Shim>>>,
    /// Where the shim is found and how it is started, once connected.
    shim_origin: OnceLock<(PathBuf, HelperCommand)>,
    /// The replicas stopped because their shim died.
    lost_replicas: LostReplicas,
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
            shim: Mutex::new(None),
            shim_origin: OnceLock::new(),
            lost_replicas: LostReplicas::default(),
        })
    }

    /// Starts `command`; how it ended goes to `exit`, if given. A replica started into its own
    /// `cgroup` (see [`cgroup::spawn_inside`]) has it killed when it exits, and where it is
    /// written to `record` (for `delete` to find it should this process die).
    fn spawn(
        &self,
        command: &mut Command,
        exit: Option<oneshot::Sender<Termination>>,
        cgroup: Option<cgroup::ReplicaCgroup>,
        record: Option<&Path>,
    ) -> io::Result<std::process::Child> {
        // Held across the spawn: a process that exits at once is looked up only after this; and
        // no other child is forked while this process is inside a replica's cgroup.
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let (spawned, cgroup) = match cgroup {
            Some(cgroup) => cgroup::spawn_inside(cgroup, || command.spawn()),
            None => (cgroup::spawn_outside(|| command.spawn()), None),
        };
        let child = spawned?;
        if let Some(cgroup) = cgroup {
            if let Some(file) = record {
                let _ = cgroup::record(file, &cgroup);
            }
            cgroup::started(child.id().cast_signed(), cgroup);
        }
        waiting.insert(child.id() as i32, exit);
        drop(waiting);
        let _ = self.wake.send(());
        Ok(child)
    }

    /// Connects to the shim of `state_dir` (starting it with `helper` if none runs, reaped
    /// quietly), through which [`Reaper::start_kept_replica`] starts replicas.
    pub fn connect_shim(&self, state_dir: &Path, helper: &HelperCommand) -> io::Result<()> {
        self.shim_origin
            .set((state_dir.to_owned(), helper.clone()))
            .map_err(|_| io::Error::other("the reaper is connected to a shim already"))?;
        let shim = self.new_shim(state_dir, helper)?;
        *self.shim.lock().unwrap_or_else(PoisonError::into_inner) = Some(shim);
        Ok(())
    }

    /// A connection to the shim of `state_dir`, started with `helper` if none answers.
    fn new_shim(&self, state_dir: &Path, helper: &HelperCommand) -> io::Result<Arc<Shim>> {
        let waiters = Waiters(Arc::clone(&self.waiting));
        let spawn =
            |command: &mut Command| Ok(self.spawn(command, None, None, None)?.id().cast_signed());
        let lost = self.lost_replicas.clone();
        Ok(Arc::new(Shim::connect_or_start(
            state_dir, helper, waiters, lost, spawn,
        )?))
    }

    /// The shim to start a replica through: the one connected, or a new one where it died.
    fn live_shim(&self) -> io::Result<Arc<Shim>> {
        let mut current = self.shim.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(shim) = current.as_ref().filter(|shim| !shim.is_lost()) {
            return Ok(Arc::clone(shim));
        }
        let (state_dir, helper) = self.shim_origin.get().ok_or_else(|| {
            io::Error::other("no shim to start the replica: connect to one first")
        })?;
        let shim = self.new_shim(state_dir, helper)?;
        tracing::warn!("started a new shim for the replicas: the one before died");
        *current = Some(Arc::clone(&shim));
        Ok(shim)
    }

    /// Whether the replica `pid` was stopped because the shim that ran it died (said once).
    #[must_use]
    pub fn lost_with_its_shim(&self, pid: i32) -> bool {
        self.lost_replicas.take(pid)
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
        cgroup::kill_job(job_uid);
        let foreign_shim = self
            .shim
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_some_and(|shim| !shim.started_here());
        if foreign_shim {
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

    /// Starts a replica: `launch`'s command in a new process group (and a cgroup of its own where
    /// [`cgroup`] is active), with its output pumped to its log file (a run of its log, with its
    /// start, its chunks' times and its exit code in the log's index) and, when it shows
    /// replicas' output, `console`, marked as the job `job_uid`'s. Must be called within a Tokio
    /// runtime.
    pub fn start_replica(
        &self,
        launch: &Launch,
        job_uid: &str,
        console: &Console,
    ) -> io::Result<StartedProcess> {
        let (mut command, pending) = mounts::command(&launch.argv, launch.mounts.as_ref())?;
        let file = open_log_file(&launch.log_path)?;
        command
            .envs(launch.env.iter().map(|(name, value)| (name, value)))
            .env(MARKER_ENV, job_uid)
            .process_group(0);
        // Through the helper, the directory is entered once the volumes are mounted.
        if let (Some(dir), None) = (&launch.working_dir, &launch.mounts) {
            command.current_dir(dir);
        }
        // Always through a pump: it times the output (the kubelet's timestamps) and keeps the
        // log within its limit.
        let (reader, writer) = io::pipe()?;
        // A larger pipe lets a chatty replica write on while the pump is not scheduled; the
        // default size is kept where the system refuses.
        let _ = fcntl(&reader, FcntlArg::F_SETPIPE_SZ(PIPE_SIZE));
        command.stdout(writer.try_clone()?).stderr(writer);
        // The exit code goes to the runner and, after the replica's last lines, to the log.
        let (reaped, reaped_code) = oneshot::channel();
        let (sender, exit) = oneshot::channel();
        let (to_log, log_exit) = oneshot::channel();
        let cgroup = cgroup::make(
            job_uid,
            &cgroup::replica_name(&launch.log_path),
            &launch.limits,
        );
        let started = SystemTime::now();
        let record = cgroup_file(&launch.log_path);
        let child = self.spawn(&mut command, Some(reaped), cgroup, Some(&record))?;
        // The command holds the pipe's write ends; the pump must see only the replica's.
        drop(command);
        // A helper that could not start the command exits: reaped, its code unheard.
        pending.confirm()?;
        tokio::spawn(async move {
            if let Ok(ended) = reaped_code.await {
                let _ = to_log.send(ended.code);
                let _ = sender.send(ended);
            }
        });
        let log = LogWriter::starting(file, launch.log_limit, started);
        let pump = pump(
            reader,
            log,
            console.clone(),
            launch.prefix.clone(),
            log_exit,
        )?;
        Ok(StartedProcess {
            pid: child.id() as i32,
            exit,
            pump: Some(pump),
        })
    }

    /// Starts a replica that can outlive this process, through the [`shim`](super::shim)
    /// (see [`Reaper::connect_shim`]): `launch`'s command in a new process group, with its
    /// output pumped into its log file by the shim, marked as the job `job_uid`'s.
    pub fn start_kept_replica(&self, launch: &Launch, job_uid: &str) -> io::Result<StartedProcess> {
        match self.live_shim()?.start(launch, job_uid) {
            // The shim died before its connection's end was read: once more, through a new one.
            Err(error) if error.kind() == io::ErrorKind::BrokenPipe => {
                self.live_shim()?.start(launch, job_uid)
            }
            started => started,
        }
    }

    /// Starts a watchdog (see [`super::watchdog`]), before the job it will guard is known: it
    /// guards the job [`Watchdog::guard`] names.
    pub fn start_watchdog(&self, helper: &HelperCommand) -> io::Result<Watchdog> {
        let mut command = Command::new(&helper.program);
        command
            .args(&helper.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .process_group(0);
        // Its exit is awaited at the end of the run (`Watchdog::dismiss`). Like a replica's
        // group, its own is killed as it exits: it starts no process, so that kills nothing.
        let (sender, exit) = oneshot::channel();
        let mut child = self.spawn(&mut command, Some(sender), None, None)?;
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
        Ok(Watchdog::new(
            child.id() as i32,
            BufWriter::new(input),
            exit,
            Waiters(Arc::clone(&self.waiting)),
            helper.clone(),
        ))
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
                let mut oom_killed = false;
                if matches!(sender, Some(Some(_))) {
                    let _ = killpg(pid, Signal::SIGKILL);
                    oom_killed = cgroup::release(pid.as_raw());
                }
                let code = waitpid(pid, None).map_or(KILLED, status_code);
                if let Some(Some(sender)) = sender {
                    let _ = sender.send(Termination { code, oom_killed });
                }
            }
            Err(Errno::EINTR) => {}
            // No child: sleep until one is started (or the reaper is gone); a child started
            // without the reaper's knowledge (a notification's command) is reaped within
            // `IDLE_LOOK` all the same.
            Err(_) => {
                match woken.recv_timeout(IDLE_LOOK) {
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    Ok(()) | Err(mpsc::RecvTimeoutError::Timeout) => {}
                }
                while woken.try_recv().is_ok() {}
            }
        }
    }
}

/// Sends `signal` to a replica's process group; a group that is gone already is no error.
pub fn signal_group(pgid: i32, signal: Signal) {
    let _ = killpg(Pid::from_raw(pgid), signal);
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
