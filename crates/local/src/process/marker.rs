//! The job's marker: the variable every replica's environment carries, and the processes found
//! (and killed) by it.
//!
//! `trainctl` adds [`MARKER_ENV`]`=<job uid>` to each replica's environment. A process keeps its
//! environment wherever it goes (a new session with `setsid`, a parent that exited), so the marker
//! finds what a job started when its process groups no longer do: the reaper kills what a job
//! left behind, the watchdog what a `trainctl` that died could not stop, and a server what a run
//! it took over does not know.

use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::{Pid, getpid};

use super::identity;

/// The variable `trainctl` adds to every replica's environment: the job's uid. It marks the
/// processes a job started, wherever they went.
pub const MARKER_ENV: &str = "TRAINCTL_JOB_UID";

/// How long killing a job's marked processes waits for them to be gone: a process that does not
/// end by then is in the kernel's hands (an uninterruptible wait), and no signal can do more.
const MARKED_GONE_WITHIN: Duration = Duration::from_secs(1);

/// How often killing a job's marked processes looks whether they are gone.
const MARKED_POLL: Duration = Duration::from_millis(1);

/// The live processes (not zombies) whose environment has `MARKER_ENV=job_uid`.
#[must_use]
pub fn marked_processes(job_uid: &str) -> Vec<Pid> {
    scan_marked(|uid| uid == job_uid.as_bytes())
        .into_iter()
        .map(|(pid, _)| pid)
        .collect()
}

/// Every live process that carries a job's marker, with the job's uid, in one look at the
/// process table.
#[must_use]
pub fn all_marked_processes() -> Vec<(Pid, String)> {
    scan_marked(|_| true)
}

/// The live processes other than this one whose marker's value `wanted` accepts.
fn scan_marked(wanted: impl Fn(&[u8]) -> bool) -> Vec<(Pid, String)> {
    let me = getpid().as_raw();
    let prefix = format!("{MARKER_ENV}=");
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter_map(|pid| {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
            let uid = environ
                .split(|&byte| byte == 0)
                .find_map(|entry| entry.strip_prefix(prefix.as_bytes()))
                .filter(|uid| wanted(uid))?;
            let uid = String::from_utf8_lossy(uid).into_owned();
            identity::is_running(pid).then(|| (Pid::from_raw(pid), uid))
        })
        .collect()
}

/// Kills every process marked with the job's uid, and waits until they are gone.
pub fn kill_marked(job_uid: &str) {
    kill_marked_where(job_uid, |_| true);
}

/// Kills the processes marked with the job's uid whose process group `doomed` picks (`None`:
/// the group could not be read), and waits until they are gone, for up to `MARKED_GONE_WITHIN`.
///
/// One look at the process table is not enough: a process may start another between the look
/// and its `SIGKILL`, and a killed process stays in the table until the scheduler runs it, so
/// that a `ps` right after `trainctl` exits could still show it. The table is read again until
/// nothing doomed is left.
pub fn kill_marked_where(job_uid: &str, doomed: impl Fn(Option<i32>) -> bool) {
    let deadline = Instant::now() + MARKED_GONE_WITHIN;
    loop {
        let left: Vec<Pid> = marked_processes(job_uid)
            .into_iter()
            .filter(|pid| doomed(identity::process_group(pid.as_raw())))
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

#[cfg(test)]
mod tests {
    use std::process::{Command, Stdio};

    use super::*;

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
