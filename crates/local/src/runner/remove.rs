//! Removing a job when no server runs: what a `trainctl delete` does for a job whose server is
//! gone (a repair path: a job that kept a server from starting can be cleared with no server).
//!
//! The job must have no live owner: a `trainctl run` or a server that still runs it is asked to
//! stop it instead. What the job left running (replicas that outlived a server that died, under a
//! shim that lives on, and what they started) is stopped first: `SIGTERM` to each replica's
//! group, up to [`GRACE`] to end, then `SIGKILL` to the groups, to everything in the replicas'
//! cgroups and to every process marked as the job's. Then its records and its logs go.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::process::cgroup;
use crate::process::identity::ProcessIdentity;
use crate::process::marker::kill_marked;
use crate::process::reaper::signal_group;
use crate::store::{JobRecord, Store, StoreError};

/// How long the replicas of a job removed without a server get to end after `SIGTERM`.
pub const GRACE: Duration = Duration::from_secs(5);

/// How often their end is looked for.
const POLL: Duration = Duration::from_millis(20);

/// How long a replica killed with `SIGKILL` has to be reaped before its logs are removed.
const REAPED: Duration = Duration::from_secs(2);

/// Why a job could not be removed without a server.
#[derive(Debug, thiserror::Error)]
pub enum RemoveError {
    /// A live process runs the job: it must stop it.
    #[error(
        "{job} is run by process {pid}, which does not answer as a server; stop that process first \
         (Ctrl-C for `trainctl run`, or kill {pid}), then delete the job again"
    )]
    Owned {
        /// `kind/name` of the job.
        job: String,
        /// The owner's pid.
        pid: i32,
    },
    /// The state database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Removes `record`'s job from `store` and its logs, once whatever it left running is stopped;
/// returns how many replica processes were still running.
pub fn remove_unowned_job(store: &mut Store, record: &JobRecord) -> Result<usize, RemoveError> {
    if let Some(owner) = record.owner.filter(ProcessIdentity::is_alive) {
        return Err(RemoveError::Owned {
            job: format!("{}/{}", record.kind.singular(), record.name),
            pid: owner.pid,
        });
    }
    let replicas = store.replicas(&record.uid)?;
    let running: Vec<ProcessIdentity> = replicas
        .iter()
        .filter_map(|replica| replica.pid)
        .filter(ProcessIdentity::is_alive)
        .collect();
    for replica in &running {
        signal_group(replica.pid, Signal::SIGTERM);
    }
    // Until each is reaped, not only dead: its shim, when one runs, writes its last output and
    // its exit into the job's log directory first, which must not be removed under it.
    let deadline = Instant::now() + GRACE;
    while running.iter().any(ProcessIdentity::exists) && Instant::now() < deadline {
        std::thread::sleep(POLL);
    }
    for replica in running.iter().filter(|replica| replica.is_alive()) {
        signal_group(replica.pid, Signal::SIGKILL);
    }
    let deadline = Instant::now() + REAPED;
    while running.iter().any(ProcessIdentity::exists) && Instant::now() < deadline {
        std::thread::sleep(POLL);
    }
    // Every cgroup recorded beside the job's logs, as each replica started (by the shim, or by
    // `trainctl run`): a replica started just before its runner died may not be in the
    // database yet, but its cgroup is recorded.
    let recorded = std::fs::read_dir(store.logs_dir(&record.uid))
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "cgroup")
        });
    for file in recorded {
        if let Some(contained) = cgroup::recorded(&file, &record.uid) {
            contained.kill_and_remove();
        }
    }
    kill_marked(&record.uid);
    store.delete_job(&record.uid)?;
    let _ = std::fs::remove_dir_all(store.logs_dir(&record.uid));
    let _ = std::fs::remove_dir_all(store.pods_dir(&record.uid));
    let _ = std::fs::remove_dir_all(store.tensorboard_dir(&record.uid));
    Ok(running.len())
}
