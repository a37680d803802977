//! The keeper: what a server's replica runs under, so that the replica outlives a server that
//! dies and its exit code is known all the same.
//!
//! `trainctl server` starts each replica as `/bin/sh -c` [`SCRIPT`] in a process group of its
//! own, with its output going straight to the replica's log file (a pipe would break with the
//! server). The shell runs the command and waits for it, then writes the command's exit code
//! (`128 + n` for signal `n`) to the exit file and kills its group: what the command left behind
//! ends with it, as a container's processes end with its main process, and the keeper with them.
//!
//! A shell, not this binary: a replica's start costs one more exec either way, and the shell's
//! costs a tenth of `trainctl`'s (about 0.15 ms of CPU against 1.3 ms, BENCHMARKS.md issue 5),
//! which is most of what a server spends per replica of a short job.
//!
//! The signals a stop sends to the group (`SIGTERM`, and `SIGINT` or `SIGHUP` from a terminal)
//! reach the command with their default actions (a trapped signal is reset in the commands a
//! shell starts) while the keeper, which traps them, waits on; `SIGKILL` ends the keeper without
//! an exit code, which [`exit_code`] reads as `137`. The code is one short line written at once:
//! a reader that finds the file without its line ending finds a keeper killed while writing it.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::process::KILLED;

/// The keeper, in POSIX shell: `$1` is the exit file, the rest the command and its arguments.
pub const SCRIPT: &str = r#"trap : HUP INT TERM
exit_file=$1
shift
"$@"
printf '%s\n' "$?" >"$exit_file"
kill -KILL 0
"#;

/// The keeper of `argv`, recording its exit code in `exit_file`: a command that leads a process
/// group of its own (the group its last act kills), for the caller to give its environment, its
/// working directory and its output.
#[must_use]
pub fn command(exit_file: &Path, argv: &[impl AsRef<OsStr>]) -> Command {
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(SCRIPT)
        .arg("trainctl-keeper")
        .arg(exit_file)
        .args(argv)
        .process_group(0);
    command
}

/// The exit-code file of the replica whose output goes to `log_path`.
#[must_use]
pub fn exit_file(log_path: &Path) -> PathBuf {
    log_path.with_extension("exit")
}

/// The exit code a keeper recorded in `exit_file`, or `None` when it recorded none (yet, or ever:
/// it was killed with its command).
#[must_use]
pub fn recorded_exit_code(exit_file: &Path) -> Option<i32> {
    let text = fs::read_to_string(exit_file).ok()?;
    text.strip_suffix('\n')?.parse().ok()
}

/// The exit code a keeper recorded in `exit_file`, or `137` when it recorded none: it was killed
/// with its command.
#[must_use]
pub fn exit_code(exit_file: &Path) -> i32 {
    recorded_exit_code(exit_file).unwrap_or(KILLED)
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt as _;
    use std::process::{Child, ExitStatus};
    use std::thread;
    use std::time::Duration;

    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;

    use super::*;

    /// Runs `argv` under the keeper to its end; the exit code it recorded, and how the keeper
    /// itself ended.
    fn keep(file: &Path, argv: &[&str]) -> (i32, ExitStatus) {
        let status = command(file, argv).status().expect("the keeper starts");
        (exit_code(file), status)
    }

    #[test]
    fn records_the_exit_code_of_its_command_then_kills_its_group() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = exit_file(&dir.path().join("worker-0.log"));
        let (code, keeper) = keep(&file, &["sh", "-c", "exit 3"]);
        assert_eq!((code, keeper.signal()), (3, Some(9)));
        assert_eq!(file, dir.path().join("worker-0.exit"));
        assert_eq!(fs::read_to_string(&file).expect("recorded"), "3\n");
    }

    #[test]
    fn passes_its_arguments_through_untouched() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("chief-0.exit");
        let args = [
            "sh",
            "-c",
            r#"[ "$1" = 'a b' ] && [ "$2" = '$(x) "*"' ] && [ $# = 2 ]"#,
            "-",
        ];
        let (code, _) = keep(&file, &[&args[..], &["a b", r#"$(x) "*""#]].concat());
        assert_eq!(code, 0);
    }

    #[test]
    fn a_command_killed_by_a_signal_exits_with_128_plus_its_number() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("ps-0.exit");
        let (code, _) = keep(&file, &["sh", "-c", "kill -TERM $$"]);
        assert_eq!(code, 143);
    }

    #[test]
    fn a_missing_command_exits_127() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("chief-0.exit");
        let (code, _) = keep(&file, &["/no/such/command"]);
        assert_eq!(code, 127);
    }

    /// Starts `script` under the keeper and waits until it has written `ready` in `dir`.
    fn started(dir: &Path, script: &str) -> Child {
        let child = command(&dir.join("worker-0.exit"), &["sh", "-c", script])
            .current_dir(dir)
            .spawn()
            .expect("the keeper starts");
        while !dir.join("ready").exists() {
            thread::sleep(Duration::from_millis(5));
        }
        child
    }

    #[test]
    fn a_signal_to_the_keeper_alone_leaves_its_command_running() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut keeper = started(dir.path(), "touch ready; sleep 0.3; exit 4");
        let pid = Pid::from_raw(keeper.id().cast_signed());
        kill(pid, Signal::SIGTERM).expect("signalled");
        keeper.wait().expect("the keeper ends");
        assert_eq!(exit_code(&dir.path().join("worker-0.exit")), 4);
    }

    #[test]
    fn a_stop_of_the_group_ends_the_command_with_its_signal() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut keeper = started(dir.path(), "touch ready; exec sleep 30");
        let group = Pid::from_raw(keeper.id().cast_signed());
        nix::sys::signal::killpg(group, Signal::SIGTERM).expect("signalled");
        keeper.wait().expect("the keeper ends");
        assert_eq!(exit_code(&dir.path().join("worker-0.exit")), 143);
    }

    #[test]
    fn a_code_without_its_line_ending_reads_as_killed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("worker-1.exit");
        assert_eq!(exit_code(&file), 137);
        fs::write(&file, "").expect("written");
        assert_eq!(recorded_exit_code(&file), None);
        fs::write(&file, "1").expect("written");
        assert_eq!((recorded_exit_code(&file), exit_code(&file)), (None, 137));
        fs::write(&file, "1\n").expect("written");
        assert_eq!(recorded_exit_code(&file), Some(1));
    }
}
