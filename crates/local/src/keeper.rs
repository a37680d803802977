//! The keeper: what a server's replica runs under, so that the replica outlives a server that
//! dies and its exit code is known all the same.
//!
//! `trainctl server` starts each replica as `trainctl __keeper --exit-file FILE -- COMMAND...` in
//! a process group of its own, with its output going straight to the replica's log file (a pipe
//! would break with the server). The keeper starts the command in its group and waits for it,
//! then writes the command's exit code (`128 + n` for signal `n`) to `FILE`, atomically (a
//! temporary file renamed), and kills its group: what the command left behind ends with it, as a
//! container's processes end with its main process, and the keeper with them.
//!
//! The signals a stop sends to the group (`SIGTERM`, and `SIGINT` or `SIGHUP` from a terminal)
//! reach the command with their default actions (handlers do not survive `exec`) while the keeper
//! waits on; `SIGKILL` ends the keeper without an exit file, which [`exit_code`] reads as `137`.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::{getpgrp, getpid};

use crate::process::KILLED;

/// Runs `command` to its end, records its exit code in `exit_file`, and, when the keeper leads its
/// process group (as it does under a server) and `end_group` says so, kills the group, itself
/// included; returns the exit code otherwise.
pub fn run(exit_file: &Path, command: &[OsString], end_group: bool) -> io::Result<i32> {
    let caught = Arc::new(AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(signal, Arc::clone(&caught))?;
    }
    let (program, args) = command
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no command to keep"))?;
    let code = match Command::new(program).args(args).spawn() {
        // `wait` goes on through the signals the keeper catches.
        Ok(mut child) => {
            let status = child.wait()?;
            status
                .code()
                .or_else(|| status.signal().map(|signal| 128 + signal))
                .unwrap_or(KILLED)
        }
        Err(error) => {
            eprintln!(
                "trainctl: cannot start `{}`: {error}",
                program.to_string_lossy()
            );
            if error.kind() == io::ErrorKind::NotFound {
                127
            } else {
                126
            }
        }
    };
    record(exit_file, code)?;
    if end_group && getpgrp() == getpid() {
        let _ = killpg(getpgrp(), Signal::SIGKILL);
    }
    Ok(code)
}

/// The exit-code file of the replica whose output goes to `log_path`.
#[must_use]
pub fn exit_file(log_path: &Path) -> PathBuf {
    log_path.with_extension("exit")
}

/// The exit code a keeper recorded in `exit_file`, or `137` when it recorded none: it was killed
/// with its command.
#[must_use]
pub fn exit_code(exit_file: &Path) -> i32 {
    fs::read_to_string(exit_file)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(KILLED)
}

/// Writes `code` to `exit_file` all at once: a reader sees no file or the whole code.
fn record(exit_file: &Path, code: i32) -> io::Result<()> {
    let mut partial = exit_file.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    fs::write(&partial, format!("{code}\n"))?;
    fs::rename(&partial, exit_file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn records_the_exit_code_of_its_command() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = exit_file(&dir.path().join("worker-0.log"));
        let code = run(&file, &argv(&["sh", "-c", "exit 3"]), false).expect("runs");
        assert_eq!((code, exit_code(&file)), (3, 3));
        assert_eq!(file, dir.path().join("worker-0.exit"));
    }

    #[test]
    fn a_command_killed_by_a_signal_exits_with_128_plus_its_number() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("ps-0.exit");
        let code = run(&file, &argv(&["sh", "-c", "kill -TERM $$"]), false).expect("runs");
        assert_eq!((code, exit_code(&file)), (143, 143));
    }

    #[test]
    fn a_missing_command_exits_127() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("chief-0.exit");
        let code = run(&file, &argv(&["/no/such/command"]), false).expect("runs");
        assert_eq!((code, exit_code(&file)), (127, 127));
    }

    #[test]
    fn no_exit_file_reads_as_killed() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert_eq!(exit_code(&dir.path().join("worker-1.exit")), 137);
    }
}
