//! Containment: each start of a replica in a cgroup of its own, where the system offers one.
//!
//! A process group and the job's marker find most of what a replica starts, but not a process
//! that leaves its group (`setsid`) *and* clears its environment (`env -i`). A cgroup holds every
//! descendant whatever it does to its session, group, parent or environment, so killing the
//! cgroup kills them all, as a container runtime kills a container's.
//!
//! Where: the cgroup v2 hierarchy (`cgroup2` in `/proc/self/mountinfo`), under the cgroup of the
//! process that starts the replicas (`trainctl run`, or a server's shim), as
//! `trainctl-<job uid>/<replica>.<spawner pid>.<n>`: one directory per job, one per start of a
//! replica, with no controller enabled (nothing is limited; the cgroup only holds). This needs
//! write access to that cgroup: root has it, and so has a user in a delegated cgroup
//! (`systemd-run --user --scope -p Delegate=yes trainctl ...`). Elsewhere the replicas run as
//! before, found by their process group and marker (see [`super::marker`]).
//!
//! How: the spawner steps into the replica's new cgroup for the instant of the fork and back out
//! after it ([`spawn_inside`]), so the replica is born inside: everything it starts from its
//! first instruction on is held. (Container runtimes hold the child until it is moved, as runc
//! does, or create it inside with `clone3(CLONE_INTO_CGROUP)`, as crun does; neither can be
//! asked of the standard library's `Command` without unsafe code. Moving this process costs
//! about 0.1 ms each way.) Starts are serialised (the reaper's and the shim's locks), so no
//! other child is forked meanwhile.
//!
//! When the replica's main process exits, the spawner kills what is left in its cgroup
//! (`cgroup.kill`, or `SIGKILL` to each member on kernels older than 5.14) and removes it, as it
//! kills what is left of the replica's process group. The watchdog kills a job's cgroups when
//! `trainctl run` dies; a server that takes a replica over from a server that died (and its
//! shim) kills the replica's cgroup once it exits.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The prefix of a job's cgroup directory; the job's uid follows.
const JOB_PREFIX: &str = "trainctl-";

/// The name of the cgroup of the job `job_uid`, under which each start of its replicas has one.
pub(crate) fn job_cgroup(job_uid: &str) -> String {
    format!("{JOB_PREFIX}{job_uid}")
}

/// How long killing a cgroup waits for it to be empty (a process in an uninterruptible wait is
/// in the kernel's hands).
const EMPTY_WITHIN: Duration = Duration::from_secs(1);

/// How often killing a cgroup looks whether it is empty.
const EMPTY_POLL: Duration = Duration::from_millis(1);

/// The containment of this process's replicas, once [`enable`]d.
static CONTAINMENT: OnceLock<Containment> = OnceLock::new();

/// The cgroup of each replica started here, by the pid of its main process, until it exits.
static STARTED: Mutex<Option<HashMap<i32, PathBuf>>> = Mutex::new(None);

/// The starts made here, to name each replica's cgroup.
static STARTS: AtomicU64 = AtomicU64::new(0);

#[derive(Debug)]
struct Containment {
    /// This process's cgroup, under which the jobs' cgroups are made.
    base: PathBuf,
    /// Cleared when a cgroup could not be made here: the replicas then run uncontained.
    usable: AtomicBool,
}

/// Contains the replicas this process starts from now on, each in a cgroup of its own (see
/// [`make`] and [`spawn_inside`]); returns the cgroup under which they go, or `None` when the
/// system has no cgroup v2 hierarchy (they then run uncontained). Also lets [`kill_job`] find a
/// job's cgroups. Only the first call counts.
pub fn enable() -> Option<PathBuf> {
    let base = own_cgroup()?;
    let containment = CONTAINMENT.get_or_init(|| Containment {
        base,
        usable: AtomicBool::new(true),
    });
    Some(containment.base.clone())
}

/// A new cgroup for the job `job_uid`'s replica `name`; `None` when containment is not active,
/// or when no cgroup can be made here (said once; the replicas then run without one, found by
/// their process group and marker).
#[must_use]
pub fn make(job_uid: &str, name: &str) -> Option<PathBuf> {
    let containment = CONTAINMENT.get()?;
    if !containment.usable.load(Ordering::Relaxed) {
        return None;
    }
    match containment.make(job_uid, name) {
        Ok(cgroup) => Some(cgroup),
        Err(error) => {
            containment.unusable(&error);
            None
        }
    }
}

/// Runs `spawn` (one fork) with this process inside `cgroup`, so that the child is born there,
/// then moves this process back to its own cgroup. Where this process cannot enter the cgroup,
/// the child is spawned where this process is, and the cgroup removed: `None` comes back in
/// place of the cgroup then. The caller serialises its spawns (no other fork may happen while
/// this process is inside).
pub fn spawn_inside<T>(
    cgroup: PathBuf,
    spawn: impl FnOnce() -> io::Result<T>,
) -> (io::Result<T>, Option<PathBuf>) {
    let Some(containment) = CONTAINMENT.get() else {
        return (spawn(), None);
    };
    if let Err(error) = enter(&cgroup) {
        containment.unusable(&error);
        let _ = fs::remove_dir(&cgroup);
        return (spawn(), None);
    }
    let spawned = spawn();
    if let Err(error) = enter(&containment.base) {
        // Still inside: killing the replica's cgroup would kill this process too, so it is not
        // killed; the replica is then found by its group and marker, as without cgroups.
        containment.unusable(&error);
        return (spawned, None);
    }
    if spawned.is_err() {
        let _ = fs::remove_dir(&cgroup);
        return (spawned, None);
    }
    (spawned, Some(cgroup))
}

/// Moves this process (all its threads) into `cgroup`.
fn enter(cgroup: &Path) -> io::Result<()> {
    fs::write(cgroup.join("cgroup.procs"), "0")
}

/// The name of a replica's cgroup: its log file's, without the extension (`worker-0`).
#[must_use]
pub fn replica_name(log_path: &Path) -> String {
    log_path.file_stem().map_or_else(
        || "replica".to_owned(),
        |stem| stem.to_string_lossy().into_owned(),
    )
}

/// Records that the replica `pid` runs in `cgroup`, for [`release`] to kill it when `pid` exits.
/// Call it before the spawner can reap `pid`.
pub fn started(pid: i32, cgroup: PathBuf) {
    STARTED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_with(HashMap::new)
        .insert(pid, cgroup);
}

/// Kills what is left in the cgroup of the replica `pid`, which exited, and removes it; nothing
/// when `pid` has none.
pub fn release(pid: i32) {
    let cgroup = STARTED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_mut()
        .and_then(|started| started.remove(&pid));
    if let Some(cgroup) = cgroup {
        kill_and_remove(&cgroup);
    }
}

/// Kills every process in each cgroup of the job `job_uid` made under this process's cgroup,
/// and removes them.
pub fn kill_job(job_uid: &str) {
    let Some(containment) = CONTAINMENT.get() else {
        return;
    };
    let job = containment.base.join(job_cgroup(job_uid));
    let Ok(entries) = fs::read_dir(&job) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            kill_and_remove(&entry.path());
        }
    }
    let _ = fs::remove_dir(&job);
}

/// Writes where a replica's cgroup is to `file` (beside its log), for a process that takes the
/// replica over after its spawner died to find it even once the replica is gone ([`recorded`]).
pub fn record(file: &Path, cgroup: &Path) -> io::Result<()> {
    crate::state_dir::write_private(file, cgroup.as_os_str().as_encoded_bytes())
}

/// The cgroup of a replica of the job `job_uid` that [`record`] wrote to `file`: only a cgroup
/// that trainctl makes for that job, in the cgroup v2 hierarchy.
#[must_use]
pub fn recorded(file: &Path, job_uid: &str) -> Option<PathBuf> {
    let cgroup = PathBuf::from(fs::read_to_string(file).ok()?);
    let job = cgroup.parent()?;
    let is_jobs = job.file_name()?.to_str()?.strip_prefix(JOB_PREFIX) == Some(job_uid);
    let in_hierarchy = cgroup.starts_with(hierarchy()?)
        && cgroup
            .components()
            .all(|part| matches!(part, Component::RootDir | Component::Normal(_)));
    (is_jobs && in_hierarchy).then_some(cgroup)
}

/// Kills every process in `cgroup`, waits until it is empty (for up to `EMPTY_WITHIN`), and
/// removes it, and its job's directory once that is empty.
pub fn kill_and_remove(cgroup: &Path) {
    let deadline = Instant::now() + EMPTY_WITHIN;
    while is_populated(cgroup) {
        if fs::write(cgroup.join("cgroup.kill"), "1").is_err() {
            // Before Linux 5.14: each member, until none is left (one look misses what starts
            // meanwhile).
            for pid in members(cgroup) {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
        if Instant::now() >= deadline {
            break;
        }
        thread::sleep(EMPTY_POLL);
    }
    let _ = fs::remove_dir(cgroup);
    if let Some(job) = cgroup.parent() {
        // Another replica of the job may still have its cgroup there.
        let _ = fs::remove_dir(job);
    }
}

impl Containment {
    /// Turns containment off for this process, saying why once.
    fn unusable(&self, error: &io::Error) {
        if self.usable.swap(false, Ordering::Relaxed) {
            // Where cgroups are read-only (most containers) this is the rule, not news: said
            // at debug level, and the README says what it means.
            tracing::debug!(
                base = %self.base.display(),
                %error,
                "cannot put the replicas in cgroups of their own: they run without, found by \
                 their process group and marker (run as root, or in a delegated cgroup, to \
                 contain them)"
            );
        }
    }

    /// Makes a new cgroup for the job's replica `name`.
    fn make(&self, job_uid: &str, name: &str) -> io::Result<PathBuf> {
        let job = self.base.join(job_cgroup(job_uid));
        let spawner = std::process::id();
        loop {
            let n = STARTS.fetch_add(1, Ordering::Relaxed);
            let cgroup = job.join(format!("{name}.{spawner}.{n}"));
            match fs::create_dir_all(&job).and_then(|()| fs::create_dir(&cgroup)) {
                Ok(()) => return Ok(cgroup),
                // A cgroup of that name still holds a replica: the next number.
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                // The job's directory was removed between the two: again.
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
        }
    }
}

/// This process's cgroup in the cgroup v2 hierarchy; `None` where there is none.
fn own_cgroup() -> Option<PathBuf> {
    let text = fs::read_to_string("/proc/self/cgroup").ok()?;
    Some(hierarchy()?.join(unified_path(&text)?.trim_start_matches('/')))
}

/// The path of the cgroup v2 entry (`0::PATH`) of a `/proc/PID/cgroup`.
fn unified_path(text: &str) -> Option<&str> {
    text.lines().find_map(|line| line.strip_prefix("0::"))
}

/// Where the cgroup v2 hierarchy is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on a
/// hybrid system), from this process's mount table.
#[must_use]
pub fn hierarchy() -> Option<PathBuf> {
    let table = fs::read_to_string("/proc/self/mountinfo").ok()?;
    table.lines().find_map(|line| {
        let (mount, fs_type) = line.split_once(" - ")?;
        if fs_type.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let mut fields = mount.split_whitespace();
        // Fields: id, parent id, major:minor, root, mount point.
        let root = fields.nth(3)?;
        let point = fields.next()?;
        (root == "/").then(|| PathBuf::from(point))
    })
}

/// Whether a process is still in `cgroup` (`false` once it is gone).
fn is_populated(cgroup: &Path) -> bool {
    fs::read_to_string(cgroup.join("cgroup.events"))
        .is_ok_and(|events| events.lines().any(|line| line.trim() == "populated 1"))
}

/// The processes in `cgroup` now.
fn members(cgroup: &Path) -> Vec<i32> {
    fs::read_to_string(cgroup.join("cgroup.procs"))
        .map(|text| text.lines().filter_map(|pid| pid.parse().ok()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::process::{Command, Stdio};

    use super::*;

    #[test]
    fn finds_the_cgroup_v2_entry_of_a_hybrid_system() {
        let text = "12:pids:/\n4:memory:/x\n1:name=systemd:/\n0::/user.slice/a.scope\n";
        assert_eq!(unified_path(text), Some("/user.slice/a.scope"));
        assert_eq!(unified_path("4:memory:/x\n"), None);
    }

    /// Whether `pid` runs (a zombie does not).
    fn runs(pid: i32) -> bool {
        fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| !rest.starts_with('Z'))
        })
    }

    #[test]
    fn what_a_replica_starts_dies_with_its_cgroup_whatever_it_did_to_escape() {
        let Some(base) = enable() else {
            eprintln!("skipped: no cgroup v2 hierarchy here");
            return;
        };
        let uid = uuid::Uuid::new_v4().to_string();
        let Some(cgroup) = make(&uid, "worker-0") else {
            eprintln!("skipped: no cgroup can be made under {}", base.display());
            return;
        };
        // Leaves its group, its session, its parent and its environment.
        let mut command = Command::new("sh");
        command
            .args(["-c", "(env -i setsid sleep 1000 &)"])
            .stdin(Stdio::null());
        let (spawned, contained) = spawn_inside(cgroup.clone(), || command.spawn());
        let status = spawned.expect("sh starts").wait().expect("sh exits");
        assert!(status.success());
        assert_eq!(contained.as_ref(), Some(&cgroup));
        assert_eq!(
            own_cgroup(),
            Some(base),
            "this process went back to its cgroup"
        );
        let deadline = Instant::now() + Duration::from_secs(5);
        let escaped = loop {
            if let [pid] = members(&cgroup)[..] {
                break pid;
            }
            assert!(
                Instant::now() < deadline,
                "the sleep never ran in the cgroup"
            );
            thread::sleep(EMPTY_POLL);
        };
        assert!(runs(escaped));

        kill_and_remove(&cgroup);
        assert!(!runs(escaped), "the escaped sleep outlived its cgroup");
        assert!(!cgroup.exists(), "the replica's cgroup is removed");
        assert!(
            !cgroup.parent().expect("job").exists(),
            "the job's cgroup is removed"
        );
    }
}
