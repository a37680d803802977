//! The runner's writes to the store: the changes [`WriteBehind`](super::write_behind::WriteBehind) holds, once they are due and at
//! the end of a run, with the job's outcome; a full disk holds them back in memory (see
//! [`write_behind`](super::write_behind)) until it has room.

use tokio::time::Instant;
use trainctl_engine::reconcile::ReplicaSlot;

use super::launch::PreparedReplica;
use super::pod::LocalPod;
use super::report::{self, ReplicaSummary};
use super::write_behind::Told;
use super::{RunError, Runner};
use crate::process::identity::ProcessIdentity;
use crate::store::{JobUpdate, NEXT_START, ReplicaRecord, ReplicaState, Store, StoreError};

impl Runner<'_> {
    /// Sends the watchdog what it has not heard yet, and writes what changed once the oldest
    /// change has waited [`WRITE_DELAY`](super::write_behind::WRITE_DELAY).
    pub(super) fn write_when_due(&mut self, store: &mut Store) -> Result<(), RunError> {
        if let Some(watchdog) = &mut self.oversight.watchdog {
            watchdog.flush();
        }
        if self.changes.is_due(Instant::now()) {
            self.flush(store)?;
        }
        Ok(())
    }

    /// Writes what changed since the last flush (job object, events, replica records) in one
    /// transaction, and sends the watchdog what it has not heard yet. Changes that a full disk
    /// refuses wait for a later flush ([`WriteBehind::postpone`](super::write_behind::WriteBehind::postpone)).
    pub(super) fn flush(&mut self, store: &mut Store) -> Result<(), RunError> {
        match self.write_changes(store, false) {
            Err(error) if error.is_disk_full() => {
                self.changes.postpone(Instant::now());
                if self.changes.tell(Told::Changes) {
                    self.say_disk_full(
                        store,
                        "the job's changes are kept in memory and written when space frees up",
                    );
                }
                Ok(())
            }
            written => Ok(written?),
        }
    }

    /// Writes the outcome of the run: what changed, with the job's resources given back. A disk
    /// too full for it has the space kept for outcomes released ([`Store::release_reserve`]);
    /// should that not do, the outcome waits in memory, tried again until the disk has room or
    /// the run is asked to stop (then the write's error is returned).
    pub(super) async fn write_outcome(&mut self, store: &mut Store) -> Result<(), RunError> {
        loop {
            match self.write_outcome_now(store) {
                Err(RunError::Store(error)) if error.is_disk_full() => {
                    if self.changes.tell(Told::Outcome) {
                        self.say_disk_full(
                            store,
                            "the job's outcome is kept in memory and written when space frees up",
                        );
                    }
                    let retry = self.changes.postpone(Instant::now());
                    tokio::select! {
                        () = tokio::time::sleep(retry) => {}
                        _ = self.oversight.stops.recv() => return Err(RunError::Store(error)),
                    }
                }
                written => return written,
            }
        }
    }

    /// Writes the outcome of the run at once: what changed, with the job's resources given back.
    /// A disk too full for it has the space kept for outcomes released, and the write tried
    /// again (the user is told the disk is full); the space is kept again once it is written.
    pub(super) fn write_outcome_now(&mut self, store: &mut Store) -> Result<(), RunError> {
        let written = match self.write_changes(store, true) {
            Err(error) if error.is_disk_full() && store.release_reserve().unwrap_or(false) => {
                let written = self.write_changes(store, true);
                if written.is_ok() {
                    self.say_disk_full(
                        store,
                        "the job's outcome was written in the space kept for it",
                    );
                }
                written
            }
            written => written,
        };
        if written.is_ok() {
            // The space the write took back, kept again where the disk has it.
            let _ = store.keep_reserve();
        }
        Ok(written?)
    }

    /// Tells the terminal (and a server's log) that the disk is full: `what` became of the
    /// job's record, and where to free space.
    fn say_disk_full(&self, store: &Store, what: &str) {
        let dir = store.path().parent().unwrap_or_else(|| store.path());
        let message = format!("disk full: {what}; free space under {}", dir.display());
        tracing::warn!(job = %self.uid, "{message}");
        self.console.say(&message);
    }

    /// Writes what changed, giving back the job's resources in the same transaction when
    /// `release`; then nothing waits. Tells the user when a full disk had held the changes back.
    fn write_changes(&mut self, store: &mut Store, release: bool) -> Result<(), StoreError> {
        if let Some(watchdog) = &mut self.oversight.watchdog {
            watchdog.flush();
        }
        let replicas: Vec<ReplicaRecord> = self
            .changes
            .changed_replicas()
            .filter_map(|slot| self.record_of(slot))
            .collect();
        let finished = self.is_finished();
        let job = JobUpdate {
            job: &self.job,
            retired_restarts: self.retired_restarts,
            finished,
        };
        let told = self.changes.told();
        self.changes
            .write(store, &self.uid, job, &replicas, release)?;
        let what = match told {
            Told::Nothing => return Ok(()),
            Told::Changes => "changes are",
            Told::Outcome => "outcome is",
        };
        let message = format!("disk space freed: the job's {what} written");
        tracing::info!(job = %self.uid, "{message}");
        self.console.say(&message);
        Ok(())
    }

    /// How each prepared slot ended, from its record.
    pub(super) fn summaries(&self) -> Vec<ReplicaSummary> {
        self.prepared
            .keys()
            .filter_map(|slot| {
                self.record_of(slot)
                    .map(|record| ReplicaSummary::of(slot, record))
            })
            .collect()
    }

    /// The records of the prepared slots, as they stand.
    pub(super) fn records(&self) -> Vec<ReplicaRecord> {
        self.prepared
            .keys()
            .filter_map(|slot| self.record_of(slot))
            .collect()
    }

    /// The record of a prepared slot.
    fn record_of(&self, slot: &ReplicaSlot) -> Option<ReplicaRecord> {
        let prepared = self.prepared.get(slot)?;
        Some(self.record(slot, prepared, self.pods.get(slot)))
    }

    fn record(
        &self,
        slot: &ReplicaSlot,
        prepared: &PreparedReplica,
        pod: Option<&LocalPod>,
    ) -> ReplicaRecord {
        ReplicaRecord {
            job_uid: self.uid.clone(),
            replica_type: slot.replica_type.clone(),
            index: slot.index,
            state: pod.map_or(ReplicaState::Pending, report::state_of),
            pid: pod
                .and_then(|pod| pod.running)
                .and_then(|running| ProcessIdentity::of(running.pid)),
            port: prepared.port,
            gpus: prepared.gpus.clone(),
            restarts: self.restarts_of(slot),
            pod_restarts: pod.map_or(0, |pod| pod.restart_count),
            exit_code: pod.and_then(|pod| pod.exit_code),
            reason: pod.and_then(reason_of),
            // The latest start: what `describe` shows (the pod's first start is the engine's).
            started_at: pod.and_then(|pod| pod.last_started.or(pod.started_at)),
            finished_at: pod.and_then(|pod| pod.finished_at),
            log_path: prepared.launch.log_path.clone(),
        }
    }
}

/// The reason of a pod's state: when it starts again, for one in back-off; `OOMKilled` for one
/// that ended by the kernel's out-of-memory kill (its `last_reason`).
fn reason_of(pod: &LocalPod) -> Option<String> {
    next_start(pod).or_else(|| {
        pod.last_reason
            .filter(|_| pod.is_finished())
            .map(str::to_owned)
    })
}

/// When a pod in back-off starts again, as the reason of its `CrashLoopBackOff` state
/// (`next start 2026-11-26T08:40:12Z`).
fn next_start(pod: &LocalPod) -> Option<String> {
    let due = pod.restart_due.filter(|_| pod.running.is_none())?;
    let wait = due.saturating_duration_since(tokio::time::Instant::now());
    let at = jiff::Timestamp::now().checked_add(wait).ok()?;
    Some(format!("{NEXT_START}{at:.0}"))
}
