//! The replica keeper: a small process between `trainctl` and each replica's command, so that no
//! replica process outlives `trainctl`, whatever happens to it.
//!
//! `trainctl` starts `trainctl __replica --parent PID --grace-seconds N -- COMMAND ARGS...` as the
//! leader of a new process group; the keeper starts the command in that same group and:
//!
//! - asks the kernel for `SIGHUP` when `trainctl` dies (`PR_SET_PDEATHSIG`), even by `SIGKILL`,
//!   and then stops the group as `trainctl` would have: `SIGTERM`, the grace period, `SIGKILL`;
//! - becomes the child subreaper of what it starts (`PR_SET_CHILD_SUBREAPER`), so processes that
//!   detach from their parent, or leave the group with `setsid`, still come back to it (and a
//!   keeper without children knows that nothing it started is left);
//! - when the command exits, kills whatever it left behind (a container's processes end with its
//!   main process), reaps it all and exits with the command's exit code, or `128 + n` when a
//!   signal `n` ended it, as the kubelet reports it;
//! - on `SIGTERM` (`trainctl` stopping the replica, sent to the whole group) lets the command
//!   handle it and sends `SIGKILL` to the group once the grace period is over.
//!
//! All of this is safe Rust: the keeper is an ordinary process, so nothing has to run between
//! `fork` and `exec`.

use std::ffi::OsString;
use std::io;
use std::process::Command;
use std::thread;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::prctl;
use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, getpgrp, getpid, getppid};
use signal_hook::consts::{SIGHUP, SIGTERM};
use signal_hook::iterator::Signals;

/// The exit code of a keeper whose command could not be started because it was not found.
pub const EXIT_NOT_FOUND: i32 = 127;
/// The exit code of a keeper whose command was found but could not be started.
pub const EXIT_CANNOT_RUN: i32 = 126;

/// What the keeper runs, from its command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeeperArgs {
    /// The pid of the `trainctl` process that started the keeper.
    pub parent: i32,
    /// How long the command may take to stop after `SIGTERM` before it is killed.
    pub grace: Duration,
    /// The program to run, looked up in `PATH` when it has no `/`.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
}

/// Runs the keeper: starts the command and returns the exit code the keeper must exit with.
#[must_use]
pub fn run(keeper: &KeeperArgs) -> i32 {
    // The parent may have died between `fork` and `prctl`: then no signal would ever come.
    if prctl::set_pdeathsig(Signal::SIGHUP).is_err() || getppid().as_raw() != keeper.parent {
        return 128 + Signal::SIGHUP as i32;
    }
    // Without it, processes that leave the group would escape; with it they stay reapable.
    let _ = prctl::set_child_subreaper(true);
    let signals = match Signals::new([SIGTERM, SIGHUP]) {
        Ok(signals) => signals,
        Err(error) => {
            eprintln!("trainctl: cannot watch signals for the replica: {error}");
            return EXIT_CANNOT_RUN;
        }
    };
    let child = match Command::new(&keeper.program).args(&keeper.args).spawn() {
        Ok(child) => child,
        Err(error) => return report_start_failure(&keeper.program, &error),
    };
    let main = Pid::from_raw(child.id() as i32);
    let grace = keeper.grace;
    thread::spawn(move || stop_on_signal(signals, grace));
    let code = wait_for(main);
    kill_leftovers();
    code
}

/// Says why the command did not start, in the replica's log, and picks the shell's exit code.
fn report_start_failure(program: &OsString, error: &io::Error) -> i32 {
    let program = program.to_string_lossy();
    if error.kind() == io::ErrorKind::NotFound {
        eprintln!(
            "trainctl: command `{program}` not found on this machine (the container image's files are not available locally)"
        );
        EXIT_NOT_FOUND
    } else {
        eprintln!("trainctl: cannot run `{program}`: {error}");
        EXIT_CANNOT_RUN
    }
}

/// Handles the first `SIGTERM` (a stop) or `SIGHUP` (`trainctl` died): the group gets `SIGTERM`,
/// then `SIGKILL` after the grace period. The keeper survives its own `SIGTERM` so that it can
/// still report the command's exit.
fn stop_on_signal(mut signals: Signals, grace: Duration) {
    let Some(signal) = signals.forever().next() else {
        return;
    };
    if signal == SIGHUP {
        let _ = killpg(getpgrp(), Signal::SIGTERM);
    }
    thread::sleep(grace);
    kill_group_but_self(Signal::SIGKILL);
}

/// Reaps children until `main` ends; returns its exit code, `128 + n` for a signal `n`.
fn wait_for(main: Pid) -> i32 {
    loop {
        match waitpid(None, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == main => return code,
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == main => return 128 + signal as i32,
            Ok(_) | Err(Errno::EINTR) => {}
            // No child at all: the command is gone without a status we saw.
            Err(_) => return 128 + Signal::SIGKILL as i32,
        }
    }
}

/// Kills and reaps every process the command left in the group or handed to the keeper.
///
/// As the subreaper, the keeper is an ancestor of every descendant still alive: when it has no
/// child left, nothing is left, and the process table need not be read.
fn kill_leftovers() {
    for _ in 0..1_000 {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => {
                kill_group_but_self(Signal::SIGKILL);
                thread::sleep(Duration::from_millis(2));
            }
            // Reaped one (or interrupted): look again.
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return,
        }
    }
}

/// Sends `signal` to every other process in the keeper's group and to its own children (which
/// may have left the group).
fn kill_group_but_self(signal: Signal) {
    let me = getpid();
    let group = getpgrp();
    let targets = processes().filter(|p| p.pid != me && (p.group == group || p.parent == me));
    for process in targets {
        let _ = kill(process.pid, signal);
    }
}

/// A process as `/proc/<pid>/stat` describes it.
struct ProcessLink {
    pid: Pid,
    parent: Pid,
    group: Pid,
}

/// The processes on this machine, with their parent and group.
fn processes() -> impl Iterator<Item = ProcessLink> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            parse_stat(pid, &stat)
        })
}

/// Parent and group from a `stat` line; the command name may hold spaces and `)`, so the fields
/// are read after its last `)`.
fn parse_stat(pid: i32, stat: &str) -> Option<ProcessLink> {
    let (_, after_name) = stat.rsplit_once(')')?;
    let mut fields = after_name.split_whitespace();
    let state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    let group = fields.next()?.parse().ok()?;
    // A zombie is dead already; its parent reaps it.
    (state != "Z").then(|| ProcessLink {
        pid: Pid::from_raw(pid),
        parent: Pid::from_raw(parent),
        group: Pid::from_raw(group),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_read_after_the_last_parenthesis() {
        let link = parse_stat(42, "42 (we ird) name) S 7 42 42 0 -1").expect("parses");
        assert_eq!(
            (link.pid, link.parent, link.group),
            (Pid::from_raw(42), Pid::from_raw(7), Pid::from_raw(42))
        );
    }

    #[test]
    fn zombies_are_not_processes_to_kill() {
        assert!(parse_stat(42, "42 (sh) Z 7 42 42 0 -1").is_none());
    }

    #[test]
    fn a_keeper_whose_parent_is_not_the_given_one_starts_nothing() {
        let keeper = KeeperArgs {
            parent: i32::MAX,
            grace: Duration::ZERO,
            program: "true".into(),
            args: Vec::new(),
        };
        assert_eq!(run(&keeper), 129);
    }
}
