//! What a replica's processes use now: CPU (cores, measured between two readings) and memory
//! (the working set, as the kubelet reports a container's).
//!
//! Where the replica has a cgroup of its own (`trainctl-<job uid>/<replica>...`, see the README's
//! "No process outlives trainctl"), everything it started is in it, whatever it did to its session:
//! CPU is the cgroup's `cpu.stat` `usage_usec`, memory its `memory.current` less the page cache
//! that can be reclaimed at once (`inactive_file` of `memory.stat`) when the memory controller
//! is enabled there, else the resident memory of its processes. Elsewhere the replica's
//! processes are its process group (each replica leads one): CPU from `/proc/<pid>/stat`
//! (including that of children they reaped), memory their `VmRSS`.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::cgroup;

/// Clock ticks per second of `/proc/<pid>/stat`'s times (`USER_HZ`): 100 on every Linux
/// architecture trainctl builds for.
const TICKS_PER_SECOND: u64 = 100;

/// A replica process to measure: the leader of its group, and its job.
#[derive(Debug, Clone, Copy)]
pub struct Measured<'a> {
    /// The replica's main process (the leader of its process group).
    pub pid: i32,
    /// Its job's uid, which names the job's cgroups.
    pub job_uid: &'a str,
}

/// What one replica used.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// CPU cores in use over the interval (`1.5`: one and a half cores).
    pub cores: f64,
    /// Memory in bytes: the working set.
    pub memory_bytes: u64,
}

/// Measures `replicas` over `interval`: two readings, that far apart.
#[must_use]
pub fn sample(replicas: &[Measured<'_>], interval: Duration) -> Vec<Usage> {
    let hierarchy = cgroup::hierarchy();
    let places: Vec<Place> = replicas
        .iter()
        .map(|replica| Place::of(replica, hierarchy.as_deref()))
        .collect();
    let start = Instant::now();
    let before = read_all(&places);
    std::thread::sleep(interval);
    let after = read_all(&places);
    let elapsed = start.elapsed().as_secs_f64().max(f64::MIN_POSITIVE);
    before
        .iter()
        .zip(&after)
        .map(|(before, after)| {
            let used = Duration::from_micros(after.cpu_usec.saturating_sub(before.cpu_usec));
            Usage {
                cores: used.as_secs_f64() / elapsed,
                memory_bytes: after.memory_bytes,
            }
        })
        .collect()
}

/// Where a replica's processes are.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place {
    /// Its own cgroup.
    Cgroup(PathBuf),
    /// The process group it leads.
    Group(i32),
}

impl Place {
    /// The replica's cgroup when it has one of its own (under its job's), else its group.
    fn of(replica: &Measured<'_>, hierarchy: Option<&Path>) -> Place {
        let job_cgroup = cgroup::job_cgroup(replica.job_uid);
        hierarchy
            .and_then(|root| {
                let text = fs::read_to_string(format!("/proc/{}/cgroup", replica.pid)).ok()?;
                let path = text.lines().find_map(|line| line.strip_prefix("0::"))?;
                let cgroup = root.join(path.trim_start_matches('/'));
                let job = cgroup.parent()?.file_name()?;
                (job.to_str() == Some(job_cgroup.as_str())).then_some(cgroup)
            })
            .map_or(Place::Group(replica.pid), Place::Cgroup)
    }
}

/// One reading of a replica.
#[derive(Debug, Clone, Copy, Default)]
struct Reading {
    cpu_usec: u64,
    memory_bytes: u64,
}

/// A process as its `/proc/<pid>/stat` shows it.
#[derive(Debug, Clone, Copy)]
struct ProcessTimes {
    group: i32,
    /// User and system time, its own and that of the children it reaped, in microseconds.
    cpu_usec: u64,
}

/// Reads every place; the process table is read once, and only when a place needs it.
fn read_all(places: &[Place]) -> Vec<Reading> {
    let table = OnceCell::new();
    let table = || table.get_or_init(process_table);
    places
        .iter()
        .map(|place| match place {
            Place::Cgroup(cgroup) => read_cgroup(cgroup, table),
            Place::Group(group) => {
                let table = table();
                let members: Vec<i32> = table
                    .iter()
                    .filter(|(_, times)| times.group == *group)
                    .map(|(pid, _)| *pid)
                    .collect();
                processes_reading(&members, table)
            }
        })
        .collect()
}

/// A cgroup's reading: its own accounting where it keeps it, its processes' otherwise.
fn read_cgroup<'a>(
    cgroup: &Path,
    table: impl FnOnce() -> &'a HashMap<i32, ProcessTimes>,
) -> Reading {
    let members: Vec<i32> = fs::read_to_string(cgroup.join("cgroup.procs"))
        .map(|text| text.lines().filter_map(|pid| pid.parse().ok()).collect())
        .unwrap_or_default();
    let cpu_usec = fs::read_to_string(cgroup.join("cpu.stat"))
        .ok()
        .and_then(|text| flat_key(&text, "usage_usec"));
    let memory_bytes = fs::read_to_string(cgroup.join("memory.current"))
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .map(|current| {
            let inactive = fs::read_to_string(cgroup.join("memory.stat"))
                .ok()
                .and_then(|text| flat_key(&text, "inactive_file"))
                .unwrap_or(0);
            current.saturating_sub(inactive)
        });
    if let (Some(cpu_usec), Some(memory_bytes)) = (cpu_usec, memory_bytes) {
        return Reading {
            cpu_usec,
            memory_bytes,
        };
    }
    let from_processes = processes_reading(&members, table());
    Reading {
        cpu_usec: cpu_usec.unwrap_or(from_processes.cpu_usec),
        memory_bytes: memory_bytes.unwrap_or(from_processes.memory_bytes),
    }
}

/// The reading of these processes: their CPU times and resident memory added up.
fn processes_reading(members: &[i32], table: &HashMap<i32, ProcessTimes>) -> Reading {
    members.iter().fold(Reading::default(), |sum, pid| Reading {
        cpu_usec: sum.cpu_usec + table.get(pid).map_or(0, |times| times.cpu_usec),
        memory_bytes: sum.memory_bytes + resident_bytes(*pid).unwrap_or(0),
    })
}

/// Every process's group and CPU times, by pid.
fn process_table() -> HashMap<i32, ProcessTimes> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return HashMap::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            Some((pid, parse_stat(&stat)?))
        })
        .collect()
}

/// The group and CPU times of a `/proc/<pid>/stat` line.
fn parse_stat(stat: &str) -> Option<ProcessTimes> {
    // The command name may hold spaces and parentheses: the fields start after the last `)`.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `fields[0]` is field 3 (state): field n is `fields[n - 3]`.
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    let ticks = field(14)? + field(15)? + field(16)? + field(17)?;
    Some(ProcessTimes {
        group: fields.get(5 - 3)?.parse().ok()?,
        cpu_usec: ticks * (1_000_000 / TICKS_PER_SECOND),
    })
}

/// `VmRSS` of `/proc/<pid>/status`, in bytes; `None` for a process gone or a kernel thread.
fn resident_bytes(pid: i32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse::<u64>()
        .ok()?;
    Some(kib * 1024)
}

/// The value of `key` in a flat-keyed cgroup file (`usage_usec 1234` lines).
fn flat_key(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        (name == key).then(|| value.trim().parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt as _;
    use std::process::{Command, Stdio};

    use super::*;

    #[test]
    fn a_stat_line_gives_the_group_and_every_cpu_time() {
        let stat = "4242 (my (odd) name) S 1 4240 4240 0 -1 4194560 100 0 0 0 \
                    150 50 7 3 20 0 1 0 12345 1000 100";
        let times = parse_stat(stat).expect("a stat line");
        assert_eq!(times.group, 4240);
        assert_eq!(times.cpu_usec, (150 + 50 + 7 + 3) * 10_000);
        assert!(parse_stat("4242 (truncated) S 1").is_none());
    }

    #[test]
    fn flat_keyed_files_are_read_by_key() {
        let cpu = "usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\n";
        assert_eq!(flat_key(cpu, "usage_usec"), Some(123_456));
        assert_eq!(flat_key(cpu, "user"), None);
        assert_eq!(flat_key("inactive_file lots\n", "inactive_file"), None);
    }

    #[test]
    fn a_busy_process_group_uses_about_a_core_and_some_memory() {
        let mut busy = Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .process_group(0)
            .stdin(Stdio::null())
            .spawn()
            .expect("sh starts");
        let pid = i32::try_from(busy.id()).expect("a pid");
        let usage = sample(
            &[Measured {
                pid,
                job_uid: "no-such-job",
            }],
            Duration::from_millis(300),
        );
        busy.kill().expect("kill");
        busy.wait().expect("reap");
        let [usage] = usage[..] else {
            panic!("one reading per replica: {usage:?}");
        };
        // Another test may share the core: a busy loop gets a good part of one, never two.
        assert!(usage.cores > 0.05 && usage.cores < 1.5, "{usage:?}");
        assert!(usage.memory_bytes > 0, "{usage:?}");
    }
}
