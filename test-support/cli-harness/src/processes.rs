//! The process table, as `/proc` shows it.

/// A process as `/proc` shows it.
#[derive(Debug, Clone)]
pub struct Process {
    /// Its pid.
    pub pid: u32,
    /// `/proc/<pid>/comm`: the program's name.
    pub comm: String,
    /// Its process group.
    pub group: u32,
    /// Its nice value.
    pub nice: i32,
    /// Its scheduling policy (`SCHED_OTHER` 0, `SCHED_IDLE` 5).
    pub policy: u32,
    /// Its environment, `NAME=value` entries.
    pub environ: Vec<String>,
}

/// Every live (not zombie) process whose environment this user may read.
pub fn live_processes() -> Vec<Process> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(read_process)
        .collect()
}

fn read_process(pid: u32) -> Option<Process> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_owned();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if fields
        .first()
        .is_none_or(|state| *state == "Z" || *state == "X")
    {
        return None;
    }
    let number = |i: usize| fields.get(i)?.parse::<u32>().ok();
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    Some(Process {
        pid,
        comm,
        group: number(2)?,
        // Field 19 of `/proc/<pid>/stat`; `fields` starts at field 3.
        nice: fields.get(19 - 3)?.parse().ok()?,
        policy: number(41 - 3)?,
        environ: environ
            .split(|&byte| byte == 0)
            .map(|entry| String::from_utf8_lossy(entry).into_owned())
            .collect(),
    })
}

impl Process {
    /// The value of the variable `name` in its environment.
    #[must_use]
    pub fn var(&self, name: &str) -> Option<&str> {
        self.environ
            .iter()
            .find_map(|entry| entry.strip_prefix(name)?.strip_prefix('='))
    }
}

/// The live processes of this user whose environment holds the entry `entry` (`NAME=value`,
/// exactly). A variable set only on one test's `trainctl` (replicas inherit its environment)
/// picks out that test's processes, grandchildren and orphans included.
pub fn processes_with_env(entry: &str) -> Vec<Process> {
    live_processes()
        .into_iter()
        .filter(|process| process.environ.iter().any(|e| e == entry))
        .collect()
}
