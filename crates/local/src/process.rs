//! One start of a replica: its keeper process (see [`crate::keeper`]) in a new process group,
//! its output piped to a log pump, and the signals that stop it.

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::Stdio;
use std::thread::JoinHandle;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::logs::{Console, open_log_file, pump};

/// How to start a keeper: a program (this binary) and the arguments that select its keeper mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeeperCommand {
    /// The program, e.g. `/proc/self/exe`.
    pub program: PathBuf,
    /// The arguments before the keeper's own, e.g. `["__replica"]`.
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

/// A started replica: its keeper's pid, which is also its process group.
#[derive(Debug)]
pub struct StartedProcess {
    /// The keeper process; wait on it for the replica's exit code.
    pub child: tokio::process::Child,
    /// The keeper's pid and the group's id.
    pub pid: i32,
    /// The log pump, which ends once the replica and everything it started have exited.
    pub pump: JoinHandle<()>,
}

/// Starts `launch` under a keeper.
pub fn start(
    keeper: &KeeperCommand,
    launch: &Launch,
    console: &Console,
) -> io::Result<StartedProcess> {
    let (program, args) = launch
        .argv
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the command is empty"))?;
    let file = open_log_file(&launch.log_path)?;
    let (reader, writer) = io::pipe()?;
    let mut command = tokio::process::Command::new(&keeper.program);
    command
        .args(&keeper.args)
        .arg("--parent")
        .arg(std::process::id().to_string())
        .arg("--grace-seconds")
        .arg(launch.grace.as_secs_f64().to_string())
        .arg("--")
        .arg(program)
        .args(args)
        .envs(launch.env.iter().map(|(name, value)| (name, value)))
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .process_group(0)
        .kill_on_drop(false);
    if let Some(dir) = &launch.working_dir {
        command.current_dir(dir);
    }
    let child = command.spawn()?;
    // The command holds the pipe's write ends until it is dropped; the pump must see only the
    // replica's.
    drop(command);
    let pid = child
        .id()
        .and_then(|pid| i32::try_from(pid).ok())
        .ok_or_else(|| io::Error::other("the replica exited before its pid was known"))?;
    let pump = pump(reader, file, console.clone(), launch.prefix.clone())?;
    Ok(StartedProcess { child, pid, pump })
}

/// Sends `signal` to a replica's process group; a group that is gone already is no error.
pub fn signal_group(pid: i32, signal: Signal) {
    let _ = killpg(Pid::from_raw(pid), signal);
}

/// The exit code the kubelet reports for a process's exit status: its code, or `128 + n` when
/// signal `n` ended it.
#[must_use]
pub fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt as _;
    status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(128)
}
