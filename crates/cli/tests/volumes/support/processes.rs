//! What the machine shows and how a test waits for it: the live processes in `/proc` (with their
//! environment, which carries a test's mark), the host's mount table, signals, and polling.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a test waits for something that takes milliseconds when all is well.
pub const SOON: Duration = Duration::from_secs(10);

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(10);

/// The host's mount table: the lines of this process's `/proc/self/mountinfo` (the tests run in
/// the host's mount namespace).
pub fn mount_table() -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .expect("/proc/self/mountinfo")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Calls `probe` until it gives a value; panics after `timeout`, saying what it waited for.
pub fn wait_for<T>(what: &str, timeout: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(POLL);
    }
}

/// Sends `signal` (a name: `INT`, `KILL`) to one process; one that is gone already is no error.
pub fn signal(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status();
}

/// A process as `/proc` shows it.
#[derive(Debug, Clone)]
pub struct Process {
    /// Its pid.
    pub pid: u32,
    /// `/proc/<pid>/comm`: the program's name.
    pub comm: String,
    /// Its environment, `NAME=value` entries.
    pub environ: Vec<String>,
}

/// Every live (not zombie) process whose environment this user may read.
pub(super) fn live_processes() -> Vec<Process> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (head, rest) = stat.rsplit_once(')')?;
            if matches!(rest.split_whitespace().next(), None | Some("Z" | "X")) {
                return None;
            }
            let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
            Some(Process {
                pid,
                comm: head.split_once('(')?.1.to_owned(),
                environ: environ
                    .split(|&byte| byte == 0)
                    .map(|entry| String::from_utf8_lossy(entry).into_owned())
                    .collect(),
            })
        })
        .collect()
}
