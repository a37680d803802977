//! The watchdog: a small process that outlives `trainctl` only to stop a job's replicas when
//! `trainctl` dies without stopping them itself (killed by `SIGKILL`, crashed).
//!
//! `trainctl run` starts `trainctl __watchdog` first thing, in its own process group (so that a
//! Ctrl-C or a hang-up of the terminal does not reach it), at the lowest priority (nice 19 from
//! the spawn, then `SCHED_IDLE`, see [`run_only_when_idle`]), with a pipe on its stdin: its start
//! then takes CPU that neither `trainctl` nor the replicas want. Only `trainctl` holds the pipe's
//! write end, so the pipe closes exactly when `trainctl` exits, however it exits. On the pipe
//! `trainctl` writes one line per event:
//!
//! - `job UID`: the job it guards, before any replica starts;
//! - `group PGID GRACE`: a replica's process group started, with its grace period in seconds;
//! - `ended PGID`: that group is gone;
//! - `remove DIR`: a directory to remove (the logs of the run this job replaced), the rest of
//!   the line: work that can wait for idle CPU, done even if `trainctl` dies;
//! - `abandoned DIR`: a directory to remove only if `trainctl` dies, once the replicas are
//!   stopped (the job's ConfigMap, Secret and emptyDir volumes, which `trainctl` removes itself
//!   when the run ends);
//! - `done`: `trainctl` stopped everything itself; the watchdog exits. `trainctl` then kills it
//!   (it may not have read that far) and waits until it is gone ([`Watchdog::dismiss`]): no
//!   process of the run outlives `trainctl`, the watchdog included, however little CPU
//!   `SCHED_IDLE` leaves it.
//!
//! When the pipe closes without `done`, the watchdog does what `trainctl` would have done: it sends
//! `SIGTERM` to every group it knows and to every process whose environment carries the job's
//! [`MARKER_ENV`](super::marker::MARKER_ENV) (processes that left their group with `setsid` keep
//! their environment), waits for the longest grace period, and sends `SIGKILL` to whatever is
//! left, and kills what is left in the job's cgroups (see [`super::cgroup`]).
//!
//! [`run`] is the watchdog's side of the pipe, [`Watchdog`] `trainctl`'s.

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::process::ChildStdin;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use thread_priority::ThreadPriority;
use thread_priority::unix::{
    NormalThreadSchedulePolicy, ThreadSchedulePolicy, set_thread_priority_and_policy,
    thread_native_id,
};
use tokio::sync::oneshot;

use super::cgroup;
use super::child::{HelperCommand, KILLED, Termination, Waiters};
use super::marker::{kill_marked, marked_processes};

/// How long `trainctl` waits for the watchdog it killed to be gone: at once, unless the machine
/// is so busy that even a killed process waits for a CPU to end on.
const DISMISSED_WITHIN: Duration = Duration::from_secs(3);

/// How often the watchdog looks whether everything it stopped is gone.
const POLL: Duration = Duration::from_millis(50);

/// Runs the watchdog on `input` (its stdin); returns when `trainctl` said `done` or, after
/// cleaning up, when the input closed.
pub fn run(input: impl BufRead) -> io::Result<()> {
    // A terminal's Ctrl-C or hang-up must not stop the one process left to clean up.
    let ignored = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(signal, Arc::clone(&ignored))?;
    }
    let mut job_uid: Option<String> = None;
    let mut groups: BTreeMap<i32, Duration> = BTreeMap::new();
    let mut abandoned: Vec<String> = Vec::new();
    for line in input.lines() {
        let line = line?;
        if let Some(dir) = line.strip_prefix("remove ") {
            // Gone already, or never made: nothing to do.
            let _ = std::fs::remove_dir_all(dir);
            continue;
        }
        if let Some(dir) = line.strip_prefix("abandoned ") {
            abandoned.push(dir.to_owned());
            continue;
        }
        let mut words = line.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some("done"), None, None) => return Ok(()),
            (Some("job"), Some(uid), None) => job_uid = Some(uid.to_owned()),
            (Some("group"), Some(pgid), Some(grace)) => {
                if let (Ok(pgid), Ok(grace)) = (pgid.parse(), grace.parse::<f64>()) {
                    groups.insert(pgid, Duration::try_from_secs_f64(grace).unwrap_or_default());
                }
            }
            (Some("ended"), Some(pgid), None) => {
                if let Ok(pgid) = pgid.parse::<i32>() {
                    groups.remove(&pgid);
                }
            }
            _ => {}
        }
    }
    stop_everything(job_uid.as_deref(), &groups);
    for dir in abandoned {
        let _ = std::fs::remove_dir_all(dir);
    }
    Ok(())
}

/// Moves the calling thread (the watchdog's only one) to `SCHED_IDLE`: it then runs only on CPU
/// that nothing else wants, and any other process that wakes takes the CPU from it at once. At
/// nice 19, which `trainctl` sets at the spawn, it still got a share of a busy core while the
/// replicas started. Its work (the rest of its own start and, should `trainctl` die, a few
/// signals) can wait for idle CPU; where the system refuses, it stays at nice 19.
pub fn run_only_when_idle() {
    // The policy is set first; the nice value that follows (0, the only one `SCHED_IDLE`
    // accepts) is not used under it, and is refused without privileges.
    let _ = set_thread_priority_and_policy(
        thread_native_id(),
        ThreadPriority::Min,
        ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle),
    );
}

/// `SIGTERM` to every group and process marked as the job's (none before the job is known),
/// then `SIGKILL` after the longest grace period.
fn stop_everything(job_uid: Option<&str>, groups: &BTreeMap<i32, Duration>) {
    let grace = groups.values().max().copied().unwrap_or_default();
    signal_all(job_uid, groups, Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline && anything_left(job_uid, groups) {
        thread::sleep(POLL);
    }
    signal_groups(groups, Signal::SIGKILL);
    if let Some(uid) = job_uid {
        // Everything in the replicas' cgroups, whatever it did to its group and environment.
        cgroup::kill_job(uid);
        // Until none is left: one look misses what starts meanwhile (see `kill_marked`).
        kill_marked(uid);
    }
}

fn signal_all(job_uid: Option<&str>, groups: &BTreeMap<i32, Duration>, signal: Signal) {
    signal_groups(groups, signal);
    for pid in job_uid.map(marked_processes).unwrap_or_default() {
        let _ = kill(pid, signal);
    }
}

fn signal_groups(groups: &BTreeMap<i32, Duration>, signal: Signal) {
    for &pgid in groups.keys() {
        let _ = killpg(Pid::from_raw(pgid), signal);
    }
}

fn anything_left(job_uid: Option<&str>, groups: &BTreeMap<i32, Duration>) -> bool {
    groups
        .keys()
        .any(|&pgid| killpg(Pid::from_raw(pgid), None).is_ok())
        || job_uid.is_some_and(|uid| !marked_processes(uid).is_empty())
}

/// The pipe to the job's watchdog. Lines are buffered until [`Watchdog::flush`], so a pass that
/// starts many replicas wakes the watchdog once; a replica it has not heard of yet is still
/// stopped if trainctl dies, found by its marker.
#[derive(Debug)]
pub struct Watchdog {
    pid: i32,
    input: Option<BufWriter<ChildStdin>>,
    /// The watchdog's exit code, from the reaper.
    exit: oneshot::Receiver<Termination>,
    /// The reaper's children, the watchdog among them until it is reaped.
    waiters: Waiters,
    /// The directories handed to the watchdog to remove.
    removing: Vec<PathBuf>,
    /// How it was started: how a new one is, should it be killed.
    helper: HelperCommand,
}

impl Watchdog {
    /// The watchdog `pid`, reading `input`, a child of the reaper of `waiters`, which sends its
    /// exit code to `exit`.
    pub(super) fn new(
        pid: i32,
        input: BufWriter<ChildStdin>,
        exit: oneshot::Receiver<Termination>,
        waiters: Waiters,
        helper: HelperCommand,
    ) -> Watchdog {
        Watchdog {
            pid,
            input: Some(input),
            exit,
            waiters,
            removing: Vec::new(),
            helper,
        }
    }

    /// How the watchdog was started (to start another in its place).
    #[must_use]
    pub fn helper(&self) -> &HelperCommand {
        &self.helper
    }

    /// Waits until the watchdog exits before it is dismissed (killed: it exits only when told
    /// `done`); its exit code. Cancel-safe; once it has returned, the watchdog is to be replaced,
    /// not awaited again.
    pub async fn lost(&mut self) -> i32 {
        (&mut self.exit).await.map_or(KILLED, |ended| ended.code)
    }

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
        if self.input.is_none() {
            return false;
        }
        self.removing.push(PathBuf::from(dir));
        true
    }

    /// Hands the watchdog a directory to remove should trainctl die, once it has stopped the
    /// replicas (their volumes' files); the run removes it itself when it ends. Nothing when the
    /// path is not one line of UTF-8.
    pub fn remove_if_abandoned(&mut self, dir: &Path) {
        if let Some(dir) = dir.to_str().filter(|dir| !dir.contains('\n')) {
            self.say(&format!("abandoned {dir}"));
            self.flush();
        }
    }

    /// Tells the watchdog that every replica was stopped; it exits.
    pub fn done(&mut self) {
        self.say("done");
        self.flush();
        self.input = None;
    }

    /// Ends the watchdog once the run has stopped everything, and waits until it is gone (for up
    /// to `DISMISSED_WITHIN`), so that it does not outlive `trainctl`: it is told `done`
    /// (unless [`Watchdog::done`] did) and killed, as it has nothing left to guard and, at the
    /// lowest priority on a busy machine, may not even have finished starting. What it was
    /// handed to remove and did not get to is removed here.
    pub async fn dismiss(mut self) {
        self.done();
        self.waiters.kill(self.pid);
        let _ = tokio::time::timeout(DISMISSED_WITHIN, self.exit).await;
        for dir in &self.removing {
            // Gone already: the watchdog removed it.
            let _ = std::fs::remove_dir_all(dir);
        }
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

#[cfg(test)]
mod tests {
    use std::process::{Command, Stdio};

    use super::*;
    use crate::process::marker::MARKER_ENV;

    /// A `sleep` carrying the marker, once its environment shows it (until `exec`, a new
    /// process still shows its parent's).
    fn marked_sleep(uid: &str) -> std::process::Child {
        let child = Command::new("sleep")
            .arg("30")
            .env(MARKER_ENV, uid)
            .stdin(Stdio::null())
            .spawn()
            .expect("sleep starts");
        let deadline = Instant::now() + Duration::from_secs(5);
        while marked_processes(uid).is_empty() {
            assert!(Instant::now() < deadline, "the marker never showed");
            thread::sleep(Duration::from_millis(1));
        }
        child
    }

    /// Runs the watchdog on the input `lines` gives for a marked replica's job uid, and checks
    /// that the replica is still alive afterwards.
    fn assert_left_alone(lines: impl Fn(&str) -> String) {
        let uid = uuid::Uuid::new_v4().to_string();
        let mut child = marked_sleep(&uid);
        run(lines(&uid).as_bytes()).expect("runs");
        assert_eq!(marked_processes(&uid), [Pid::from_raw(child.id() as i32)]);
        child.kill().expect("kill");
        child.wait().expect("reaped");
    }

    #[test]
    fn done_leaves_the_replicas_alone() {
        assert_left_alone(|uid| format!("job {uid}\ndone\n"));
    }

    #[test]
    fn a_closed_pipe_before_the_job_is_known_stops_nothing() {
        assert_left_alone(|_| String::new());
    }

    #[test]
    fn remove_removes_the_directory_and_a_missing_one_is_no_error() {
        let temp = tempfile::tempdir().expect("temp dir");
        let logs = temp.path().join("logs with spaces").join("uid");
        std::fs::create_dir_all(&logs).expect("mkdir");
        std::fs::write(logs.join("worker-0.log"), "output\n").expect("write");
        let missing = temp.path().join("never made");
        let input = format!(
            "remove {}\nremove {}\ndone\n",
            missing.display(),
            logs.display()
        );
        run(input.as_bytes()).expect("runs");
        assert!(!logs.exists());
        assert!(temp.path().join("logs with spaces").exists());
    }

    #[test]
    fn a_closed_pipe_stops_every_marked_process() {
        let uid = uuid::Uuid::new_v4().to_string();
        let mut child = marked_sleep(&uid);
        let pid = child.id() as i32;
        run(format!("job {uid}\ngroup {pid} 5\n").as_bytes()).expect("runs");
        let status = child.wait().expect("reaped");
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(Signal::SIGTERM as i32)
        );
        assert!(marked_processes(&uid).is_empty());
    }
}
