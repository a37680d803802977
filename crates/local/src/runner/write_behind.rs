//! The write-behind record of a run's changes: what the store has not seen yet (the job object,
//! new events, the slots whose replica records changed), written in one transaction once the
//! oldest change has waited [`WRITE_DELAY`], or at once at the end of a run.
//!
//! [`WriteBehind`] keeps the changes and decides when they are due; it knows nothing of
//! processes, and its tests run against a store in a temporary directory. The runner gives it
//! the records to write: each slot's, from its pod and what it was prepared with.
//!
//! A full disk does not end the run: changes it refuses wait in memory and are tried again,
//! after [`FULL_DISK_RETRY`] and then twice as long each time up to [`FULL_DISK_RETRY_MAX`]. The
//! final write, the job's outcome, first takes the space kept for it
//! ([`Store::release_reserve`]), then waits for space as long as it takes, unless the run is
//! asked to stop meanwhile. The terminal (and a server's log) is told once, with where to free
//! space.

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::time::Instant;
use trainctl_engine::reconcile::ReplicaSlot;

use super::launch::PreparedReplica;
use super::pod::LocalPod;
use super::{ReplicaSummary, RunError, Runner, report};
use crate::process::identity::ProcessIdentity;
use crate::store::{
    EventRecord, JobChanges, JobUpdate, NEXT_START, ReplicaRecord, ReplicaState, Store, StoreError,
};

/// How long a change waits before it is written, so that what follows it within this time goes
/// in the same write: replicas that exit soon after they start, exits that come one after
/// another. A job is written at most 20 times a second however busy it is (a write takes about
/// 0.3 ms of CPU), and the store lags by 50 ms at most, which no reader of `trainctl get`
/// notices; the end of a run is written at once, and the watchdog hears of every process at once.
pub(super) const WRITE_DELAY: Duration = Duration::from_millis(50);

/// How long changes that a full disk refused wait before they are tried again, at first.
pub(super) const FULL_DISK_RETRY: Duration = Duration::from_secs(1);

/// The longest wait between tries on a full disk: freed space is used within this time.
pub(super) const FULL_DISK_RETRY_MAX: Duration = Duration::from_secs(10);

/// What the user was told of a full disk, in increasing order.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Told {
    /// Nothing.
    #[default]
    Nothing,
    /// That the run's changes wait in memory.
    Changes,
    /// That the job's outcome waits in memory.
    Outcome,
}

/// The changes of a run that the store has not seen yet.
#[derive(Debug, Default)]
pub(super) struct WriteBehind {
    /// Slots whose record changed.
    replicas: BTreeSet<ReplicaSlot>,
    /// Whether the job object changed.
    job: bool,
    /// New events, in order.
    events: Vec<EventRecord>,
    /// When the changes are to be written, once the wait for them has started.
    due: Option<Instant>,
    /// Since a write found the disk full: the wait before the next try.
    full_disk_retry: Option<Duration>,
    /// What the user was told of the full disk.
    told: Told,
}

impl WriteBehind {
    /// The record of `slot` changed.
    pub(super) fn replica(&mut self, slot: ReplicaSlot) {
        self.replicas.insert(slot);
    }

    /// The records of `slots` changed.
    pub(super) fn replicas(&mut self, slots: impl IntoIterator<Item = ReplicaSlot>) {
        self.replicas.extend(slots);
    }

    /// The job object (its status, its ledger, its spec) changed.
    pub(super) fn job(&mut self) {
        self.job = true;
    }

    /// A new event.
    pub(super) fn event(&mut self, event: EventRecord) {
        self.events.push(event);
    }

    /// Whether nothing waits to be written.
    fn is_empty(&self) -> bool {
        self.replicas.is_empty() && !self.job && self.events.is_empty()
    }

    /// When the changes are to be written, once [`WriteBehind::is_due`] has started their wait.
    pub(super) fn due(&self) -> Option<Instant> {
        self.due
    }

    /// Whether the changes are to be written at `now`. The first look after a change starts the
    /// wait: they are due [`WRITE_DELAY`] later, however many more changes come meanwhile.
    pub(super) fn is_due(&mut self, now: Instant) -> bool {
        if self.is_empty() {
            return false;
        }
        *self.due.get_or_insert(now + WRITE_DELAY) <= now
    }

    /// The slots whose records are to be written.
    pub(super) fn changed_replicas(&self) -> impl Iterator<Item = &ReplicaSlot> {
        self.replicas.iter()
    }

    /// A write found the disk full at `now`: the changes wait for the next try, [`FULL_DISK_RETRY`]
    /// after the first such write and twice as long after each next, up to
    /// [`FULL_DISK_RETRY_MAX`]. Returns the wait.
    pub(super) fn postpone(&mut self, now: Instant) -> Duration {
        let retry = self.full_disk_retry.map_or(FULL_DISK_RETRY, |retry| {
            (retry * 2).min(FULL_DISK_RETRY_MAX)
        });
        self.full_disk_retry = Some(retry);
        self.due = Some(now + retry);
        retry
    }

    /// Whether the user is to be told `what` of the full disk: not when they were told as much
    /// already since the last write.
    pub(super) fn tell(&mut self, what: Told) -> bool {
        let tell = what > self.told;
        self.told = self.told.max(what);
        tell
    }

    /// What the user was told of a full disk since the last write.
    pub(super) fn told(&self) -> Told {
        self.told
    }

    /// Writes the changes to the job `uid` in one transaction: `job` if the job changed, the
    /// events, and `replicas` (the records of [`WriteBehind::changed_replicas`]), giving back
    /// the job's resources too when `release`. Then nothing waits.
    pub(super) fn write(
        &mut self,
        store: &mut Store,
        uid: &str,
        job: JobUpdate<'_>,
        replicas: &[ReplicaRecord],
        release: bool,
    ) -> Result<(), StoreError> {
        let changes = JobChanges {
            job: self.job.then_some(job),
            events: &self.events,
            replicas,
            release,
        };
        store.save(uid, &changes)?;
        *self = WriteBehind::default();
        Ok(())
    }
}

impl Runner<'_> {
    /// Sends the watchdog what it has not heard yet, and writes what changed once the oldest
    /// change has waited [`WRITE_DELAY`].
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
    /// refuses wait for a later flush ([`WriteBehind::postpone`]).
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
            reason: pod.and_then(next_start),
            // The latest start: what `describe` shows (the pod's first start is the engine's).
            started_at: pod.and_then(|pod| pod.last_started.or(pod.started_at)),
            finished_at: pod.and_then(|pod| pod.finished_at),
            log_path: prepared.launch.log_path.clone(),
        }
    }
}

/// When a pod in back-off starts again, as the reason of its `CrashLoopBackOff` state
/// (`next start 2026-11-26T08:40:12Z`).
fn next_start(pod: &LocalPod) -> Option<String> {
    let due = pod.restart_due.filter(|_| pod.running.is_none())?;
    let wait = due.saturating_duration_since(tokio::time::Instant::now());
    let at = jiff::Timestamp::now().checked_add(wait).ok()?;
    Some(format!("{NEXT_START}{at:.0}"))
}

#[cfg(test)]
mod tests;
