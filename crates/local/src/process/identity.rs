//! [`ProcessIdentity`]: a process named by its pid and its start time, so that a recycled pid is
//! never mistaken for the process that once had it.
//!
//! The start time is field 22 of `/proc/<pid>/stat` (`starttime`, in clock ticks since boot): it
//! never changes for a process, and a new process that gets the same pid later starts later.

use std::fs;

use serde::{Deserialize, Serialize};

/// A process: its pid and its start time in clock ticks since boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProcessIdentity {
    /// The process id.
    pub pid: i32,
    /// `starttime` of `/proc/<pid>/stat`.
    pub start_ticks: u64,
}

impl ProcessIdentity {
    /// The calling process.
    ///
    /// # Panics
    ///
    /// When `/proc/self/stat` cannot be read: the local runtime needs Linux's `/proc`.
    #[must_use]
    pub fn current() -> Self {
        let pid = i32::try_from(std::process::id()).expect("Linux pids fit in i32");
        Self::of(pid).expect("/proc/self/stat is readable: the local runtime needs Linux's /proc")
    }

    /// The process that has `pid` now, or `None` when there is no such process.
    #[must_use]
    pub fn of(pid: i32) -> Option<Self> {
        let stat = read_stat(pid)?;
        Some(ProcessIdentity {
            pid,
            start_ticks: stat.start_ticks,
        })
    }

    /// Whether this very process still runs: its pid exists, started at the same tick, and is
    /// not a zombie (exited, waiting to be reaped) or dead.
    #[must_use]
    pub fn is_alive(&self) -> bool {
        read_stat(self.pid)
            .is_some_and(|stat| stat.start_ticks == self.start_ticks && stat.is_running())
    }

    /// Whether this very process exists still, running or exited and not yet reaped.
    #[must_use]
    pub fn exists(&self) -> bool {
        read_stat(self.pid).is_some_and(|stat| stat.start_ticks == self.start_ticks)
    }
}

/// The process group of the live process `pid`, or `None` when there is no such process.
#[must_use]
pub fn process_group(pid: i32) -> Option<i32> {
    read_stat(pid)
        .filter(Stat::is_running)
        .map(|stat| stat.process_group)
}

/// Whether a process with this pid exists and is not a zombie or dead.
#[must_use]
pub fn is_running(pid: i32) -> bool {
    read_stat(pid).is_some_and(|stat| stat.is_running())
}

/// The fields of `/proc/<pid>/stat` that identify a process, tell whether it runs, and its
/// group.
#[derive(Debug, PartialEq, Eq)]
struct Stat {
    state: char,
    process_group: i32,
    start_ticks: u64,
}

impl Stat {
    /// Neither a zombie (exited, waiting to be reaped) nor dead.
    fn is_running(&self) -> bool {
        !matches!(self.state, 'Z' | 'X' | 'x')
    }
}

fn read_stat(pid: i32) -> Option<Stat> {
    if pid <= 0 {
        return None;
    }
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Parses `pid (comm) state ppid ... starttime ...`. `comm` may hold spaces and `)`, so the
/// fields are counted from the last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let (_, after_comm) = text.rsplit_once(')')?;
    let mut fields = after_comm.split_ascii_whitespace();
    // Fields are numbered from 1 (`pid`); the first after `comm` is field 3 (`state`).
    let state = fields.next()?.chars().next()?;
    let process_group = fields.nth(5 - 4)?.parse().ok()?;
    let start_ticks = fields.nth(22 - 6)?.parse().ok()?;
    Some(Stat {
        state,
        process_group,
        start_ticks,
    })
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    #[test]
    fn current_process_is_alive() {
        assert!(ProcessIdentity::current().is_alive());
    }

    #[test]
    fn reaped_child_is_not_alive() {
        let mut child = crate::process::cgroup::spawn_outside(|| Command::new("true").spawn())
            .expect("spawn `true`");
        let pid = i32::try_from(child.id()).expect("pid fits in i32");
        // Not reaped yet, so /proc/<pid> exists even if it already exited.
        let identity = ProcessIdentity::of(pid).expect("an unreaped child has a /proc entry");
        child.wait().expect("reap the child");
        assert!(!identity.is_alive());
    }

    #[test]
    fn exited_unreaped_child_is_not_alive() {
        let mut child = crate::process::cgroup::spawn_outside(|| Command::new("true").spawn())
            .expect("spawn `true`");
        let pid = i32::try_from(child.id()).expect("pid fits in i32");
        let identity = ProcessIdentity::of(pid).expect("an unreaped child has a /proc entry");
        // Wait for the exit without reaping: the child stays a zombie.
        nix::sys::wait::waitid(
            nix::sys::wait::Id::Pid(nix::unistd::Pid::from_raw(pid)),
            nix::sys::wait::WaitPidFlag::WEXITED | nix::sys::wait::WaitPidFlag::WNOWAIT,
        )
        .expect("wait for the child to exit");
        assert!(!identity.is_alive(), "a zombie is not alive");
        child.wait().expect("reap the child");
    }

    #[test]
    fn same_pid_with_other_start_ticks_is_not_alive() {
        let current = ProcessIdentity::current();
        let recycled = ProcessIdentity {
            start_ticks: current.start_ticks + 1,
            ..current
        };
        assert!(!recycled.is_alive());
    }

    #[test]
    fn a_process_group_is_read_from_stat() {
        let pid = i32::try_from(std::process::id()).expect("pid fits in i32");
        assert_eq!(process_group(pid), Some(nix::unistd::getpgrp().as_raw()));
        assert_eq!(process_group(i32::MAX), None);
    }

    #[test]
    fn missing_pid_has_no_identity() {
        assert_eq!(ProcessIdentity::of(0), None);
        assert_eq!(ProcessIdentity::of(-1), None);
        assert_eq!(ProcessIdentity::of(i32::MAX), None);
    }

    #[test]
    fn stat_parsing_counts_fields_from_the_last_parenthesis() {
        let text = "4242 (evil) S 1 (x)) Z 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    987654 12345678 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0\n";
        assert_eq!(
            parse_stat(text),
            Some(Stat {
                state: 'Z',
                process_group: 4242,
                start_ticks: 987_654
            })
        );
        assert_eq!(parse_stat("12 (truncated"), None);
        assert_eq!(parse_stat("12 (short) S 1 2"), None);
    }
}
