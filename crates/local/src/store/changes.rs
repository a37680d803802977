//! What one pass of a runner changed — the job's status, new events, changed replicas — written
//! in one transaction, so a reader never sees a status without the replica records behind it.

use super::codec::sqlite;
use super::{EventRecord, ReplicaRecord, Store, StoreError, events, holds, jobs, replicas};
use trainctl_api::TrainingJob;

/// A job's new object (with its status), as [`Store::update_job`] writes it.
#[derive(Debug, Clone, Copy)]
pub struct JobUpdate<'a> {
    /// The job object, status included.
    pub job: &'a TrainingJob,
    /// Restarts of replicas that were since re-created.
    pub retired_restarts: u32,
    /// Whether the job reached a final state.
    pub finished: bool,
}

/// The changes to one job, written together by [`Store::save`].
#[derive(Debug, Clone, Copy, Default)]
pub struct JobChanges<'a> {
    /// The job's new object, when it changed.
    pub job: Option<JobUpdate<'a>>,
    /// Events to record, in order, each as [`Store::append_event`] does (added to the series
    /// of an alike one).
    pub events: &'a [EventRecord],
    /// Replica records to insert or replace.
    pub replicas: &'a [ReplicaRecord],
    /// Whether the job gives back what it holds (its run is over), as [`Store::release`] does.
    pub release: bool,
}

impl JobChanges<'_> {
    /// Whether there is nothing to write.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.job.is_none() && self.events.is_empty() && self.replicas.is_empty() && !self.release
    }
}

impl Store {
    /// Writes `changes` to the job `uid` in one transaction: all of them, or none.
    pub fn save(&mut self, uid: &str, changes: &JobChanges<'_>) -> Result<(), StoreError> {
        if changes.is_empty() {
            return Ok(());
        }
        let failed = sqlite(&self.path, format!("record the changes to job {uid}"));
        let tx = self.conn.transaction().map_err(&failed)?;
        if let Some(update) = changes.job {
            jobs::update(
                &tx,
                &self.path,
                uid,
                update.job,
                update.retired_restarts,
                update.finished,
            )?;
        }
        for event in changes.events {
            events::append(&tx, &self.path, uid, event)?;
        }
        for replica in changes.replicas {
            replicas::upsert(&tx, &self.path, replica)?;
        }
        if changes.release {
            holds::release(&tx, &self.path, uid)?;
        }
        tx.commit().map_err(&failed)
    }
}

#[cfg(test)]
mod tests {
    use trainctl_api::ReplicaType;

    use super::*;
    use crate::store::fixtures::{event, job_record, pending_replica, state_dir};

    #[test]
    fn save_writes_the_status_events_and_replicas_together() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let record = job_record("mnist", None);
        let _ = store.insert_job(&record).expect("insert");
        let events = [event("SuccessfulCreatePod"), event("JobRunning")];
        let replicas = [
            pending_replica(&record.uid, ReplicaType::Worker, 0),
            pending_replica(&record.uid, ReplicaType::Worker, 1),
        ];
        store
            .save(
                &record.uid,
                &JobChanges {
                    job: Some(JobUpdate {
                        job: &record.job,
                        retired_restarts: 3,
                        finished: true,
                    }),
                    events: &events,
                    replicas: &replicas,
                    release: false,
                },
            )
            .expect("save");
        let saved = store.job_by_uid(&record.uid).expect("read").expect("job");
        assert_eq!((saved.retired_restarts, saved.finished), (3, true));
        assert_eq!(store.events(&record.uid).expect("events"), events);
        assert_eq!(store.replicas(&record.uid).expect("replicas"), replicas);
    }

    #[test]
    fn the_final_save_gives_back_the_hold_with_the_final_status() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let record = job_record("mnist", None);
        let _ = store.insert_job(&record).expect("insert");
        let _ = store
            .reserve(&record.uid, |_: Vec<u32>| Some(1))
            .expect("reserve");
        assert!(store.holds_resources(&record.uid).expect("read"));
        let done = JobChanges {
            job: Some(JobUpdate {
                job: &record.job,
                retired_restarts: 0,
                finished: true,
            }),
            release: true,
            ..JobChanges::default()
        };
        assert!(!done.is_empty());
        store.save(&record.uid, &done).expect("save");
        assert!(!store.holds_resources(&record.uid).expect("read"));
        assert!(
            store
                .job_by_uid(&record.uid)
                .expect("read")
                .expect("job")
                .finished
        );
        // Releasing alone is a change too; for an unknown job it fails, writing nothing.
        let release = JobChanges {
            release: true,
            ..JobChanges::default()
        };
        let error = store.save("nope", &release).expect_err("unknown job");
        assert!(matches!(error, StoreError::NoSuchJob { .. }), "{error:?}");
    }

    #[test]
    fn a_failed_save_writes_nothing() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let record = job_record("mnist", None);
        let _ = store.insert_job(&record).expect("insert");
        let events = [event("SuccessfulCreatePod")];
        // The second replica names no job: the whole transaction is refused.
        let replicas = [
            pending_replica(&record.uid, ReplicaType::Worker, 0),
            pending_replica("no-such-job", ReplicaType::Worker, 1),
        ];
        let error = store
            .save(
                &record.uid,
                &JobChanges {
                    job: None,
                    events: &events,
                    replicas: &replicas,
                    release: false,
                },
            )
            .expect_err("a replica of an unknown job");
        assert!(
            matches!(&error, StoreError::NoSuchJob { uid, .. } if uid == "no-such-job"),
            "{error:?}"
        );
        assert_eq!(store.events(&record.uid).expect("events"), []);
        assert_eq!(store.replicas(&record.uid).expect("replicas"), []);
    }
}
