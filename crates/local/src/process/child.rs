//! A child process as the reaper and the shim both see it: how it is started ([`Launch`],
//! [`HelperCommand`]), what its start gives ([`StartedProcess`]), its exit code, and the
//! [`Waiters`] of the children whose exits someone awaits.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::WaitStatus;
use nix::unistd::Pid;
use tokio::sync::oneshot;

use super::cgroup::Limits;
use super::logs::LogLimit;
use super::mounts::Mounts;

/// How to start a helper process of this binary (the watchdog, the shim): the program and the
/// arguments that select the helper.
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
    /// How large its log may grow (rotated beyond).
    pub log_limit: LogLimit,
    /// The prefix of the replica's lines on the terminal.
    pub prefix: String,
    /// Its volumes, mounted in a mount namespace of its own; `None` without volumes.
    pub mounts: Option<Mounts>,
    /// Its main container's limits, enforced in its cgroup where the system lets trainctl.
    pub limits: Limits,
}

/// A started replica process.
#[derive(Debug)]
pub struct StartedProcess {
    /// Its pid, also its process group's id.
    pub pid: i32,
    /// How it ended, once it has.
    pub exit: oneshot::Receiver<Termination>,
    /// The log pump, which ends once the replica and everything it started have closed the pipe;
    /// `None` when the replica was started through the shim (whose own pump writes its log).
    pub pump: Option<tokio::task::JoinHandle<()>>,
}

impl StartedProcess {
    /// Waits for the replica to exit (and, for a piped one, for its last lines to reach the
    /// terminal); returns how its command ended.
    pub async fn exited(self) -> Termination {
        let ended = self.exit.await.unwrap_or(Termination::exited(KILLED));
        if let Some(pump) = self.pump {
            let _ = tokio::time::timeout(Duration::from_secs(2), pump).await;
        }
        ended
    }
}

/// How a replica's main process ended, as the kubelet reports a container's termination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Termination {
    /// Its exit code: the code, or `128 + n` for signal `n`.
    pub code: i32,
    /// The kernel killed a process of the replica for its memory limit (`OOMKilled`).
    pub oom_killed: bool,
}

impl Termination {
    /// An exit with `code`, no out-of-memory kill seen.
    #[must_use]
    pub fn exited(code: i32) -> Termination {
        Termination {
            code,
            oom_killed: false,
        }
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

/// The children being waited for: pid → where how it ended goes (`None`: reap it quietly).
pub(super) type Waiting = Arc<Mutex<HashMap<i32, Option<oneshot::Sender<Termination>>>>>;

/// The processes a [`Reaper`](super::Reaper) waits for, shared with whoever else may see them
/// end (the [`shim`](super::shim) that is their parent).
#[derive(Debug, Clone)]
pub struct Waiters(pub(super) Waiting);

impl Waiters {
    /// Expects the process `pid`, whose exit code goes to `exit`: the shim's replica, which comes
    /// back to this process (its subreaper) should the shim die.
    pub fn expect(&self, pid: i32, exit: oneshot::Sender<Termination>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(pid, Some(exit));
    }

    /// Sends `SIGKILL` to the child `pid` unless the reaper has taken it from its table: until
    /// then it has not been reaped, so that its pid cannot be another process's.
    pub fn kill(&self, pid: i32) {
        let waiting = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if waiting.contains_key(&pid) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }

    /// Hands how the expected process `pid` ended to its waiter, if it has one.
    pub fn deliver(&self, pid: i32, ended: Termination) {
        let exit = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&pid);
        if let Some(Some(exit)) = exit {
            let _ = exit.send(ended);
        }
    }
}
