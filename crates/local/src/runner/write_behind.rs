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

use crate::store::{EventRecord, JobChanges, JobUpdate, ReplicaRecord, Store, StoreError};

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

#[cfg(test)]
mod tests;
