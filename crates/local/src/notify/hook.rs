//! The `--on-finish` command: `sh -c CMD` with the notification on its standard input, in a
//! process group of its own, killed (the whole group, `SIGKILL`) when it runs past the
//! notification's timeout.
//!
//! Its exit status does not come from waiting for it: the process that runs trainctl has one
//! reaper, which reaps every child (`crate::process::Reaper`), and nothing else in it may
//! wait for children. So the command runs under a small `sh` that writes the command's exit
//! status on its own standard output, a pipe that only it holds; the command's own output goes
//! to trainctl's standard error. The small `sh` waits for the command's; trainctl's reaper reaps
//! the small `sh` (at once while it waits for a child of its own, else within a second: see the
//! crate's reaper).

use std::io::{Read, Write};
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::text::duration_text;

/// The shell that runs the command (`$1`, its own `$0` being `trainctl-on-finish`) with its
/// output on standard error, then writes its exit status (`128 + n` for signal `n`) on
/// standard output.
const WRAPPER: &str = r#"sh -c "$1" >&2; echo "$?""#;

/// Why the `--on-finish` command did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookFailure {
    /// `sh` could not be started.
    #[error("cannot start sh: {0}")]
    Start(String),
    /// The command exited with a code other than 0.
    #[error("exited with code {0}")]
    Exited(i32),
    /// The command's shell ended without saying how the command ended (it was killed).
    #[error("ended without an exit status (killed by someone else?)")]
    Vanished,
    /// The command ran past the timeout; its process group was killed.
    #[error("still running after {0} (--notify-timeout): killed it")]
    TimedOut(String),
    /// trainctl stopped waiting for it (Ctrl-C); its process group was killed.
    #[error("abandoned: killed it")]
    Abandoned,
}

/// The process group of a running `--on-finish` command, for whoever abandons the delivery
/// (`trainctl run` interrupted while it waits): the group is killed then.
#[derive(Debug, Default)]
pub struct HookGroup {
    /// The group's id while the command runs; 0 otherwise.
    pgid: AtomicI32,
    /// Whether the delivery was abandoned.
    abandoned: AtomicBool,
}

impl HookGroup {
    /// Kills the command's group, if it runs, and any command started after this.
    pub fn abandon(&self) {
        self.abandoned.store(true, Ordering::SeqCst);
        kill_group(self.pgid.load(Ordering::SeqCst));
    }

    /// Records the group `pgid` as running; false when the delivery was abandoned already.
    fn started(&self, pgid: i32) -> bool {
        self.pgid.store(pgid, Ordering::SeqCst);
        !self.abandoned.load(Ordering::SeqCst)
    }

    /// The command ended: nothing is killed on abandonment any more.
    fn ended(&self) {
        self.pgid.store(0, Ordering::SeqCst);
    }

    fn is_abandoned(&self) -> bool {
        self.abandoned.load(Ordering::SeqCst)
    }
}

/// Runs `sh -c command` with `env` added to trainctl's environment and `payload` on its
/// standard input, until it exits or `timeout` has passed (then its process group is killed);
/// `group` learns of its process group while it runs.
pub fn run(
    command: &str,
    env: &[(&str, &str)],
    payload: Vec<u8>,
    timeout: Duration,
    group: &Arc<HookGroup>,
) -> Result<(), HookFailure> {
    let mut hook = Command::new("sh");
    hook.args(["-c", WRAPPER, "trainctl-on-finish", command])
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0);
    // Not in the cgroups of a replica being started meanwhile (a server's other job).
    let mut child = crate::process::cgroup::spawn_outside(|| hook.spawn())
        .map_err(|error| HookFailure::Start(error.to_string()))?;
    let pgid = child.id().cast_signed();
    if !group.started(pgid) {
        kill_group(pgid);
        return Err(HookFailure::Abandoned);
    }
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input must not hold the delivery: the write ends
        // with the command (EPIPE), in a thread of its own.
        let _ = thread::Builder::new()
            .name("on-finish-stdin".to_owned())
            .spawn(move || {
                let _ = stdin.write_all(&payload);
            });
    }
    let (status_sender, status) = mpsc::channel();
    if let Some(mut stdout) = child.stdout.take() {
        thread::Builder::new()
            .name("on-finish-status".to_owned())
            .spawn(move || {
                let mut text = String::new();
                let _ = stdout.read_to_string(&mut text);
                let _ = status_sender.send(text);
            })
            .map_err(|error| {
                kill_group(pgid);
                HookFailure::Start(error.to_string())
            })?;
    }
    // Not waited for: the reaper of this process reaps it (see the module's documentation).
    drop(child);
    let said = match status.recv_timeout(timeout) {
        Ok(text) => text,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            kill_group(pgid);
            group.ended();
            return Err(HookFailure::TimedOut(duration_text(timeout)));
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => String::new(),
    };
    group.ended();
    match said.trim().parse::<i32>() {
        Ok(0) => Ok(()),
        Ok(code) => Err(HookFailure::Exited(code)),
        Err(_) if group.is_abandoned() => Err(HookFailure::Abandoned),
        Err(_) => Err(HookFailure::Vanished),
    }
}

/// `SIGKILL` to the process group `pgid`; nothing for 0 or a group that is gone.
fn kill_group(pgid: i32) {
    if pgid > 0 {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    fn run_hook(command: &str, payload: &str, timeout: Duration) -> Result<(), HookFailure> {
        let group = Arc::new(HookGroup::default());
        run(
            command,
            &[("TRAINCTL_JOB_NAME", "mnist")],
            payload.as_bytes().to_vec(),
            timeout,
            &group,
        )
    }

    #[test]
    fn the_command_reads_the_payload_and_sees_the_env() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("out");
        let command = format!(
            "cat > '{}'; echo \" $TRAINCTL_JOB_NAME\" >> '{}'",
            out.display(),
            out.display()
        );
        assert_eq!(
            run_hook(&command, "{\"a\":1}", Duration::from_secs(10)),
            Ok(())
        );
        assert_eq!(
            std::fs::read_to_string(&out).expect("written"),
            "{\"a\":1} mnist\n"
        );
    }

    #[test]
    fn a_failing_command_says_its_exit_code() {
        assert_eq!(
            run_hook("exit 3", "", Duration::from_secs(10)),
            Err(HookFailure::Exited(3))
        );
        assert_eq!(
            run_hook("kill -TERM $$", "", Duration::from_secs(10)),
            Err(HookFailure::Exited(143))
        );
    }

    #[test]
    fn a_command_that_ignores_a_large_payload_is_not_held_by_it() {
        let payload = "x".repeat(1 << 20);
        assert_eq!(run_hook("true", &payload, Duration::from_secs(10)), Ok(()));
    }

    #[test]
    fn a_command_past_the_timeout_is_killed_with_its_group() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pid_file = dir.path().join("pid");
        let command = format!("sleep 1000 & echo $! > '{}'; wait", pid_file.display());
        let started = Instant::now();
        let failed = run_hook(&command, "", Duration::from_millis(500));
        assert_eq!(failed, Err(HookFailure::TimedOut("500ms".to_owned())));
        assert!(started.elapsed() < Duration::from_secs(5));
        let pid = std::fs::read_to_string(&pid_file).expect("the pid");
        let stat = format!("/proc/{}/stat", pid.trim());
        let deadline = Instant::now() + Duration::from_secs(5);
        // Killed: gone, or a zombie (this test process reaps nothing).
        while std::fs::read_to_string(&stat).is_ok_and(|stat| {
            !matches!(
                stat.rsplit_once(')')
                    .map(|(_, rest)| rest.trim_start().as_bytes()[0]),
                Some(b'Z' | b'X')
            )
        }) {
            assert!(Instant::now() < deadline, "sleep {} still runs", pid.trim());
            thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn an_abandoned_command_is_killed() {
        let group = Arc::new(HookGroup::default());
        let abandoner = Arc::clone(&group);
        let killer = thread::spawn(move || {
            thread::sleep(Duration::from_millis(300));
            abandoner.abandon();
        });
        let started = Instant::now();
        let failed = run(
            "sleep 1000",
            &[],
            Vec::new(),
            Duration::from_secs(30),
            &group,
        );
        killer.join().expect("joins");
        assert_eq!(failed, Err(HookFailure::Abandoned));
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(
            run("true", &[], Vec::new(), Duration::from_secs(30), &group),
            Err(HookFailure::Abandoned),
            "nothing starts once abandoned"
        );
    }
}
