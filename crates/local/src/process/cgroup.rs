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
//! replica. This needs write access to that cgroup: root has it, and so has a user in a
//! delegated cgroup (`systemd-run --user --scope -p Delegate=yes trainctl ...`). Elsewhere the
//! replicas run as before, found by their process group and marker (see [`super::marker`]).
//!
//! Limits: a replica's `limits.memory` and `limits.cpu` are written to its cgroup
//! ([`limits`]) where this process's cgroup gives the `memory` and `cpu` controllers to its
//! children (it is the root, or has no process of its own: a `trainctl` alone in its cgroup moves
//! itself into a child cgroup to make it so, see [`delegation`]). On a hybrid system, where those
//! controllers are bound to cgroup v1 hierarchies, the replica also gets a cgroup of the same
//! name in each such hierarchy its limits need, under this process's cgroup there, and is born
//! in all of them. Where neither can be written, [`unenforced`] says which limits are not
//! enforced, for the runner to say so.
//!
//! How: the spawner steps into the replica's new cgroup for the instant of the fork and back out
//! after it ([`spawn_inside`]), so the replica is born inside: everything it starts from its
//! first instruction on is held. (Container runtimes hold the child until it is moved, as runc
//! does, or create it inside with `clone3(CLONE_INTO_CGROUP)`, as crun does; neither can be
//! asked of the standard library's `Command` without unsafe code. Moving this process costs
//! about 0.1 ms each way.) No other child is forked meanwhile: every fork of this process's
//! children goes through [`spawn_inside`] or [`spawn_outside`], which take one lock.
//!
//! When the replica's main process exits, the spawner kills what is left in its cgroup
//! (`cgroup.kill`, or `SIGKILL` to each member on kernels older than 5.14) and removes it, as it
//! kills what is left of the replica's process group. The watchdog kills a job's cgroups when
//! `trainctl run` dies; a server kills those of its shim's replicas when the shim dies; a server
//! that takes a replica over from a server that died (and its shim) kills the replica's cgroup
//! once it exits.

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

mod delegation;
mod hierarchy;
mod limits;
use delegation::{Delegation, is_writable};
pub use hierarchy::hierarchy;
use limits::Controller;
pub use limits::Limits;

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

/// The cgroups this process can put replicas in, found once.
static CONTAINMENT: OnceLock<Containment> = OnceLock::new();

/// Whether this process contains the replicas it starts ([`enable`]).
static ENABLED: AtomicBool = AtomicBool::new(false);

/// The cgroup of each replica started here, by the pid of its main process, until it exits.
static STARTED: Mutex<Option<HashMap<i32, ReplicaCgroup>>> = Mutex::new(None);

/// The starts made here, to name each replica's cgroup.
static STARTS: AtomicU64 = AtomicU64::new(0);

/// Held while this process is inside a replica's cgroups for a fork ([`spawn_inside`]), and by
/// every other fork of a child of this process ([`spawn_outside`]): a child forked meanwhile
/// would be born in the replica's cgroups, counted against its limits and killed with it.
static FORKING: Mutex<()> = Mutex::new(());

/// Runs `spawn` (a fork of a child that is no replica: a helper, a notification's command)
/// while no replica is being forked, so that the child is born in this process's cgroups.
pub fn spawn_outside<T>(spawn: impl FnOnce() -> T) -> T {
    let _forking = FORKING.lock().unwrap_or_else(PoisonError::into_inner);
    spawn()
}

/// Where this process makes its replicas' cgroups.
#[derive(Debug)]
struct Containment {
    /// Its cgroup in the cgroup v2 hierarchy (or the parent of its supervisor cgroup there), which
    /// holds every replica.
    unified: Option<Tree>,
    /// The controllers whose limits the v2 cgroups enforce (memory, cpu).
    unified_controllers: [bool; 2],
    /// Its cgroups in the v1 hierarchies of the controllers the v2 one lacks (memory, cpu).
    legacy: [Option<Tree>; 2],
}

/// This process's cgroup in one hierarchy, under which the jobs' cgroups are made.
#[derive(Debug)]
struct Tree {
    base: PathBuf,
    /// Where this process is in the hierarchy, and goes back to after a fork in a replica's
    /// cgroup: `base`, or its supervisor cgroup (see [`delegation`]).
    home: PathBuf,
    /// The cgroup v2 hierarchy, where a cgroup gives its children controllers.
    unified: bool,
    /// Cleared when a cgroup could not be made or entered here: none is made here any more.
    usable: AtomicBool,
}

/// A replica's cgroups: one in the cgroup v2 hierarchy (first, where there is one), and one in
/// each v1 hierarchy its limits need, all of the same name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaCgroup {
    dirs: Vec<PathBuf>,
}

/// Contains the replicas this process starts from now on, each in a cgroup of its own (see
/// [`make`] and [`spawn_inside`]), giving them the v2 controllers their limits need where the
/// kernel lets this process; returns the cgroup v2 cgroup under which they go, or `None` when
/// the system has none (they then run uncontained, or held by v1 cgroups for their limits).
/// Call it before anything else here asks about cgroups ([`unenforced`]): the first call finds
/// them.
pub fn enable() -> Option<PathBuf> {
    ENABLED.store(true, Ordering::Relaxed);
    prepare()
}

/// Gives the replicas' cgroups their v2 controllers as [`enable`] does (this process moves to a
/// cgroup of its own first where it is alone in its cgroup), for a process whose children start
/// the replicas (a server, whose shim does): call it before it starts any child. Returns the
/// cgroup under which they go.
pub fn prepare() -> Option<PathBuf> {
    let containment = CONTAINMENT.get_or_init(|| Containment::find(Delegation::Give));
    containment.unified.as_ref().map(|tree| tree.base.clone())
}

/// The cgroups of this process, found once: as [`enable`] or [`prepare`] found them, else only
/// looked at (a process that starts no replica, such as `validate`, changes no cgroup).
fn containment() -> &'static Containment {
    CONTAINMENT.get_or_init(|| Containment::find(Delegation::Predict))
}

impl Containment {
    /// The cgroups of this process: the v2 one, with the controllers it gives (or would give)
    /// its children, and the v1 ones of the controllers it does not.
    fn find(delegation: Delegation) -> Containment {
        let unified = hierarchy::own_cgroup().map(|own| delegation::place(own, delegation));
        let unified_controllers = Controller::ALL.map(|controller| {
            unified
                .as_ref()
                .is_some_and(|place| delegation::delegates(&place.base, controller, delegation))
        });
        let legacy = Controller::ALL.map(|controller| {
            let index = controller.index();
            if unified_controllers[index] {
                return None;
            }
            hierarchy::own_legacy_cgroup(controller.name())
                .filter(|base| is_writable(base))
                .map(|base| Tree::new(base.clone(), base, false))
        });
        Containment {
            unified: unified.map(|place| Tree::new(place.base, place.home, true)),
            unified_controllers,
            legacy,
        }
    }
}

/// Which of `limits` the cgroups here cannot enforce (`memory`, `cpu`), and why, for the
/// runner to say once; `None` when each is enforced.
#[must_use]
pub fn unenforced(limits: &Limits) -> Option<(Vec<&'static str>, String)> {
    let containment = containment();
    let missing: Vec<&'static str> = Controller::ALL
        .into_iter()
        .filter(|controller| controller.is_limited(limits))
        .filter(|controller| !containment.enforces(*controller))
        .map(Controller::name)
        .collect();
    if missing.is_empty() {
        return None;
    }
    let why = match &containment.unified {
        Some(tree) => format!(
            "trainctl's cgroup ({}) cannot give the controllers to the replicas' cgroups, and \
             no cgroup v1 hierarchy of theirs can be written; run as root, or in a cgroup of \
             its own with the controllers delegated (`systemd-run --scope -p Delegate=yes \
             trainctl ...`)",
            tree.base.display()
        ),
        None => "this system has no cgroup hierarchy trainctl can write".to_owned(),
    };
    Some((missing, why))
}

/// A new cgroup for the job `job_uid`'s replica `name`, with its `limits` written; `None` when
/// containment is not active, or when no cgroup can be made here (said once; the replica then
/// runs without one, found by its process group and marker).
#[must_use]
pub fn make(job_uid: &str, name: &str, limits: &Limits) -> Option<ReplicaCgroup> {
    if !ENABLED.load(Ordering::Relaxed) {
        return None;
    }
    let containment = containment();
    loop {
        let n = STARTS.fetch_add(1, Ordering::Relaxed);
        let leaf = format!("{name}.{}.{n}", std::process::id());
        // Else a cgroup of that name still holds a replica (of a process that had this pid):
        // the next number.
        if let Ok(dirs) = containment.make(job_uid, &leaf, limits) {
            return (!dirs.is_empty()).then_some(ReplicaCgroup { dirs });
        }
    }
}

/// Runs `spawn` (one fork) with this process inside each of `cgroup`'s cgroups, so that the
/// child is born there, then moves this process back to its own. A cgroup this process cannot
/// enter is removed and left out (`None` comes back when none is left). The caller serialises
/// its spawns (no other fork may happen while this process is inside).
pub fn spawn_inside<T>(
    cgroup: ReplicaCgroup,
    spawn: impl FnOnce() -> io::Result<T>,
) -> (io::Result<T>, Option<ReplicaCgroup>) {
    let _forking = FORKING.lock().unwrap_or_else(PoisonError::into_inner);
    let containment = containment();
    let mut entered = Vec::new();
    for dir in cgroup.dirs {
        match enter(&dir) {
            Ok(()) => entered.push(dir),
            Err(error) => {
                containment.unusable(&dir, &error);
                let _ = fs::remove_dir(&dir);
            }
        }
    }
    let spawned = spawn();
    let mut contained = Vec::new();
    for dir in entered {
        match enter(&containment.home(&dir)) {
            Ok(()) if spawned.is_ok() => contained.push(dir),
            Ok(()) => {
                let _ = fs::remove_dir(&dir);
            }
            // Still inside: killing the replica's cgroup would kill this process too, so it is
            // not killed; the replica is then found by its group and marker, as without cgroups.
            Err(error) => containment.unusable(&dir, &error),
        }
    }
    let contained = (!contained.is_empty()).then_some(ReplicaCgroup { dirs: contained });
    (spawned, contained)
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
pub fn started(pid: i32, cgroup: ReplicaCgroup) {
    STARTED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_with(HashMap::new)
        .insert(pid, cgroup);
}

/// Kills what is left in the cgroup of the replica `pid`, which exited, and removes it; returns
/// whether the kernel killed one of its processes for its memory limit (`OOMKilled`). Nothing
/// when `pid` has none.
pub fn release(pid: i32) -> bool {
    let cgroup = STARTED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_mut()
        .and_then(|started| started.remove(&pid));
    cgroup.is_some_and(|cgroup| {
        let oom_killed = cgroup.dirs.iter().any(|dir| limits::oom_killed(dir));
        cgroup.kill_and_remove();
        oom_killed
    })
}

/// Kills every process in each cgroup of the job `job_uid` made under this process's cgroups,
/// and removes them: by the process that made them, its watchdog, or the server whose shim made
/// them and died (which called [`prepare`], and does not contain replicas of its own).
pub fn kill_job(job_uid: &str) {
    let containment = containment();
    let trees = containment
        .unified
        .iter()
        .chain(containment.legacy.iter().flatten());
    for tree in trees {
        let job = tree.base.join(job_cgroup(job_uid));
        let Ok(entries) = fs::read_dir(&job) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                kill_and_remove(&entry.path());
            }
        }
        let _ = fs::remove_dir(&job);
    }
}

/// Writes where a replica's cgroups are to `file` (beside its log), one a line, for a process
/// that takes the replica over after its spawner died to find them even once the replica is
/// gone ([`recorded`]).
pub fn record(file: &Path, cgroup: &ReplicaCgroup) -> io::Result<()> {
    let mut text = Vec::new();
    for dir in &cgroup.dirs {
        text.extend_from_slice(dir.as_os_str().as_encoded_bytes());
        text.push(b'\n');
    }
    crate::state_dir::write_private(file, &text)
}

/// The cgroups of a replica of the job `job_uid` that [`record`] wrote to `file`: only cgroups
/// that trainctl makes for that job, in a cgroup hierarchy.
#[must_use]
pub fn recorded(file: &Path, job_uid: &str) -> Option<ReplicaCgroup> {
    let text = fs::read_to_string(file).ok()?;
    let hierarchies: Vec<PathBuf> = hierarchy()
        .into_iter()
        .chain(
            Controller::ALL
                .iter()
                .filter_map(|controller| hierarchy::legacy_hierarchy(controller.name())),
        )
        .collect();
    let dirs: Vec<PathBuf> = text
        .lines()
        .map(PathBuf::from)
        .filter(|cgroup| {
            is_jobs(cgroup, job_uid) && hierarchies.iter().any(|root| cgroup.starts_with(root))
        })
        .collect();
    (!dirs.is_empty()).then_some(ReplicaCgroup { dirs })
}

/// Whether `cgroup` is a replica cgroup of the job `job_uid`, named plainly.
fn is_jobs(cgroup: &Path, job_uid: &str) -> bool {
    let job = cgroup
        .parent()
        .and_then(Path::file_name)
        .and_then(|name| name.to_str());
    job.and_then(|name| name.strip_prefix(JOB_PREFIX)) == Some(job_uid)
        && cgroup
            .components()
            .all(|part| matches!(part, Component::RootDir | Component::Normal(_)))
}

impl ReplicaCgroup {
    /// Kills every process in the replica's cgroups and removes them (see [`kill_and_remove`]).
    pub fn kill_and_remove(&self) {
        for dir in &self.dirs {
            kill_and_remove(dir);
        }
    }
}

/// Kills every process in `cgroup`, waits until it is empty (for up to `EMPTY_WITHIN`), and
/// removes it, and its job's directory once that is empty.
fn kill_and_remove(cgroup: &Path) {
    let deadline = Instant::now() + EMPTY_WITHIN;
    while is_populated(cgroup) {
        if fs::write(cgroup.join("cgroup.kill"), "1").is_err() {
            // Before Linux 5.14, and in v1 hierarchies: each member, until none is left (one
            // look misses what starts meanwhile).
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

/// A replica cgroup's name is taken in some hierarchy.
struct AlreadyExists;

impl Containment {
    /// Makes the replica cgroups named `leaf` of the job `job_uid`, with `limits` written: in
    /// the v2 hierarchy, and in each v1 hierarchy `limits` need. What cannot be made is left out.
    fn make(
        &self,
        job_uid: &str,
        leaf: &str,
        limits: &Limits,
    ) -> Result<Vec<PathBuf>, AlreadyExists> {
        // Each hierarchy with the controllers whose limits it takes.
        let mut trees: Vec<(&Tree, Vec<Controller>)> = Vec::new();
        if let Some(tree) = &self.unified {
            trees.push((tree, self.enforced_controllers()));
        }
        for controller in Controller::ALL {
            if let Some(tree) = &self.legacy[controller.index()]
                && controller.is_limited(limits)
            {
                trees.push((tree, vec![controller]));
            }
        }
        let mut dirs = Vec::new();
        for (tree, controllers) in trees {
            match tree.make(job_uid, leaf, &controllers) {
                Ok(Some(dir)) => {
                    for controller in controllers {
                        if let Err(error) = limits::write(&dir, tree.unified, controller, limits) {
                            tracing::debug!(%error, "cannot set a replica's {} limit", controller.name());
                        }
                    }
                    dirs.push(dir);
                }
                Ok(None) => {}
                Err(AlreadyExists) => {
                    for dir in &dirs {
                        let _ = fs::remove_dir(dir);
                    }
                    return Err(AlreadyExists);
                }
            }
        }
        Ok(dirs)
    }

    /// The controllers the v2 replica cgroups get from their job's.
    fn enforced_controllers(&self) -> Vec<Controller> {
        Controller::ALL
            .into_iter()
            .filter(|controller| self.unified_controllers[controller.index()])
            .collect()
    }

    /// Whether the limits of `controller` are enforced here.
    fn enforces(&self, controller: Controller) -> bool {
        let index = controller.index();
        (self.unified_controllers[index] && self.unified.as_ref().is_some_and(Tree::is_usable))
            || self.legacy[index].as_ref().is_some_and(Tree::is_usable)
    }

    /// Makes no more cgroups in the hierarchy of `dir`, saying why once.
    fn unusable(&self, dir: &Path, error: &io::Error) {
        if let Some(tree) = self.tree_of(dir) {
            tree.unusable(error);
        }
    }

    /// The tree of the replica cgroup `dir`.
    fn tree_of(&self, dir: &Path) -> Option<&Tree> {
        let mut trees = self.unified.iter().chain(self.legacy.iter().flatten());
        trees.find(|tree| dir.starts_with(&tree.base))
    }

    /// Where this process goes back to in the hierarchy of the replica cgroup `dir` after a
    /// fork there: its own cgroup.
    fn home(&self, dir: &Path) -> PathBuf {
        self.tree_of(dir).map_or_else(
            // Its job's parent.
            || {
                dir.parent()
                    .and_then(Path::parent)
                    .unwrap_or(dir)
                    .to_owned()
            },
            |tree| tree.home.clone(),
        )
    }
}

impl Tree {
    fn new(base: PathBuf, home: PathBuf, unified: bool) -> Tree {
        Tree {
            base,
            home,
            unified,
            usable: AtomicBool::new(true),
        }
    }

    fn is_usable(&self) -> bool {
        self.usable.load(Ordering::Relaxed)
    }

    /// Makes no more cgroups here, saying why once.
    fn unusable(&self, error: &io::Error) {
        if self.usable.swap(false, Ordering::Relaxed) {
            // Where cgroups are read-only (most containers) this is the rule, not news: said
            // at debug level, and the README says what it means.
            tracing::debug!(
                base = %self.base.display(),
                %error,
                "cannot put the replicas in cgroups of their own here: they run without, found \
                 by their process group and marker (run as root, or in a delegated cgroup, to \
                 contain them)"
            );
        }
    }

    /// Makes the cgroup `leaf` of the job `job_uid` here, its job's cgroup giving it
    /// `controllers` (in the v2 hierarchy); `None` when it cannot be made (this tree is then not used again).
    fn make(
        &self,
        job_uid: &str,
        leaf: &str,
        controllers: &[Controller],
    ) -> Result<Option<PathBuf>, AlreadyExists> {
        if !self.is_usable() {
            return Ok(None);
        }
        let job = self.base.join(job_cgroup(job_uid));
        let cgroup = job.join(leaf);
        let mut tries = 0;
        loop {
            let made = fs::create_dir_all(&job).and_then(|()| {
                // A v1 hierarchy has one controller, in every cgroup.
                for controller in controllers.iter().filter(|_| self.unified) {
                    let enable = format!("+{}", controller.name());
                    fs::write(job.join("cgroup.subtree_control"), enable)?;
                }
                fs::create_dir(&cgroup)
            });
            tries += 1;
            match made {
                Ok(()) => return Ok(Some(cgroup)),
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                    return Err(AlreadyExists);
                }
                // The job's directory was removed between the two (its last replica's went):
                // once more.
                Err(error) if error.kind() == io::ErrorKind::NotFound && tries < 3 => {}
                Err(error) => {
                    self.unusable(&error);
                    return Ok(None);
                }
            }
        }
    }
}

/// Whether a process is still in `cgroup` (`false` once it is gone).
fn is_populated(cgroup: &Path) -> bool {
    match fs::read_to_string(cgroup.join("cgroup.events")) {
        Ok(events) => events.lines().any(|line| line.trim() == "populated 1"),
        // A v1 cgroup: its members.
        Err(_) => !members(cgroup).is_empty(),
    }
}

/// The processes in `cgroup` now.
fn members(cgroup: &Path) -> Vec<i32> {
    fs::read_to_string(cgroup.join("cgroup.procs"))
        .map(|text| text.lines().filter_map(|pid| pid.parse().ok()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
