use trainctl_api::{JobStatus, ReplicaType};

use super::*;
use crate::store::JobRecord;
use crate::store::fixtures::{event, job_record, pending_replica, state_dir};

/// A store in a temporary directory, holding one job.
fn store_with_job() -> (tempfile::TempDir, Store, JobRecord) {
    let temp = state_dir();
    let mut store = Store::open(temp.path()).expect("open");
    let record = job_record("mnist", None);
    let _ = store.insert_job(&record).expect("insert");
    (temp, store, record)
}

fn update(record: &JobRecord) -> JobUpdate<'_> {
    JobUpdate {
        job: &record.job,
        retired_restarts: 0,
        finished: false,
    }
}

fn worker(index: i32) -> ReplicaSlot {
    ReplicaSlot::new(ReplicaType::Worker, index)
}

#[test]
fn nothing_changed_is_never_due() {
    let mut changes = WriteBehind::default();
    let now = Instant::now();
    assert!(!changes.is_due(now + Duration::from_secs(3600)));
    assert_eq!(changes.due(), None);
}

#[test]
fn changes_wait_the_write_delay_from_the_first_one_and_go_in_one_write() {
    let (_temp, mut store, record) = store_with_job();
    let mut changes = WriteBehind::default();
    let start = Instant::now();
    changes.event(event("SuccessfulCreatePod"));
    assert!(!changes.is_due(start), "a change waits");
    assert_eq!(changes.due(), Some(start + WRITE_DELAY));
    // What comes meanwhile joins it: the wait is not started again.
    let later = start + WRITE_DELAY / 2;
    changes.event(event("JobRunning"));
    changes.replica(worker(0));
    assert!(!changes.is_due(later));
    assert_eq!(changes.due(), Some(start + WRITE_DELAY));
    assert!(changes.is_due(start + WRITE_DELAY));
    // Nothing reached the store yet.
    assert_eq!(store.events(&record.uid).expect("events"), []);

    let slots: Vec<ReplicaSlot> = changes.changed_replicas().cloned().collect();
    assert_eq!(slots, [worker(0)]);
    let replicas = [pending_replica(&record.uid, ReplicaType::Worker, 0)];
    changes
        .write(&mut store, &record.uid, update(&record), &replicas, false)
        .expect("write");
    let reasons: Vec<String> = store
        .events(&record.uid)
        .expect("events")
        .into_iter()
        .map(|event| event.reason)
        .collect();
    assert_eq!(reasons, ["SuccessfulCreatePod", "JobRunning"]);
    assert_eq!(store.replicas(&record.uid).expect("replicas"), replicas);

    // Written: nothing waits, and the next change waits afresh.
    assert_eq!(changes.due(), None);
    assert!(!changes.is_due(start + WRITE_DELAY * 10));
    assert_eq!(changes.changed_replicas().count(), 0);
    changes.replica(worker(1));
    let again = start + WRITE_DELAY * 10;
    assert!(!changes.is_due(again));
    assert_eq!(changes.due(), Some(again + WRITE_DELAY));
}

#[test]
fn the_job_is_written_only_when_it_changed() {
    let (_temp, mut store, record) = store_with_job();
    let mut finished = record.job.clone();
    *finished.status_mut() = Some(JobStatus::default());
    let finished_update = JobUpdate {
        job: &finished,
        retired_restarts: 2,
        finished: true,
    };

    let mut changes = WriteBehind::default();
    changes.event(event("SuccessfulCreatePod"));
    changes
        .write(&mut store, &record.uid, finished_update, &[], false)
        .expect("write");
    let saved = store.job_by_uid(&record.uid).expect("read").expect("job");
    assert_eq!((saved.finished, saved.retired_restarts), (false, 0));

    changes.job();
    changes
        .write(&mut store, &record.uid, finished_update, &[], false)
        .expect("write");
    let saved = store.job_by_uid(&record.uid).expect("read").expect("job");
    assert_eq!((saved.finished, saved.retired_restarts), (true, 2));
    assert_eq!(saved.job.status(), finished.status());
}

#[test]
fn the_last_write_gives_back_the_resources_even_with_nothing_else_to_write() {
    let (_temp, mut store, record) = store_with_job();
    let _ = store
        .reserve(&record.uid, |_: Vec<u32>| Some(1))
        .expect("reserve");
    let mut changes = WriteBehind::default();
    changes
        .write(&mut store, &record.uid, update(&record), &[], false)
        .expect("write");
    assert!(store.holds_resources(&record.uid).expect("read"));
    changes
        .write(&mut store, &record.uid, update(&record), &[], true)
        .expect("write");
    assert!(!store.holds_resources(&record.uid).expect("read"));
}

#[test]
fn a_failed_write_keeps_the_changes_for_the_next() {
    let (_temp, mut store, record) = store_with_job();
    let mut changes = WriteBehind::default();
    changes.event(event("SuccessfulCreatePod"));
    let start = Instant::now();
    assert!(!changes.is_due(start));
    changes
        .write(&mut store, "no-such-job", update(&record), &[], false)
        .expect_err("an unknown job");
    assert!(changes.is_due(start + WRITE_DELAY));
    changes
        .write(&mut store, &record.uid, update(&record), &[], false)
        .expect("write");
    assert_eq!(store.events(&record.uid).expect("events").len(), 1);
}

#[test]
fn a_full_disk_postpones_the_changes_with_a_doubling_wait_until_a_write() {
    let (_temp, mut store, record) = store_with_job();
    let mut changes = WriteBehind::default();
    changes.event(event("SuccessfulCreatePod"));
    let start = Instant::now();
    let waits: Vec<u64> = (0..6).map(|_| changes.postpone(start).as_secs()).collect();
    assert_eq!(waits, [1, 2, 4, 8, 10, 10]);
    assert_eq!(changes.due(), Some(start + FULL_DISK_RETRY_MAX));
    assert!(!changes.is_due(start + FULL_DISK_RETRY_MAX / 2));
    assert!(changes.is_due(start + FULL_DISK_RETRY_MAX));
    changes
        .write(&mut store, &record.uid, update(&record), &[], false)
        .expect("write");
    changes.event(event("JobRunning"));
    assert_eq!(
        changes.postpone(start),
        FULL_DISK_RETRY,
        "afresh after a write"
    );
}

#[test]
fn changes_a_full_disk_refused_are_written_once_there_is_room() {
    let (_temp, mut store, record) = store_with_job();
    let mut changes = WriteBehind::default();
    changes.event(event("SuccessfulCreatePod"));
    let mut big = event("Big");
    big.message = "x".repeat(64 * 1024);
    changes.event(big);
    store.fill_up(true);
    let error = changes
        .write(&mut store, &record.uid, update(&record), &[], false)
        .expect_err("no room");
    assert!(error.is_disk_full(), "{error:?}");
    assert_eq!(store.events(&record.uid).expect("events"), []);
    store.fill_up(false);
    changes
        .write(&mut store, &record.uid, update(&record), &[], false)
        .expect("write");
    let reasons: Vec<String> = store
        .events(&record.uid)
        .expect("events")
        .into_iter()
        .map(|event| event.reason)
        .collect();
    assert_eq!(reasons, ["SuccessfulCreatePod", "Big"]);
}

#[test]
fn the_user_is_told_of_a_full_disk_once_for_changes_and_once_for_the_outcome() {
    let (_temp, mut store, record) = store_with_job();
    let mut changes = WriteBehind::default();
    assert_eq!(changes.told(), Told::Nothing);
    assert!(changes.tell(Told::Changes));
    assert!(!changes.tell(Told::Changes));
    assert!(changes.tell(Told::Outcome));
    assert!(!changes.tell(Told::Changes));
    assert!(!changes.tell(Told::Outcome));
    assert_eq!(changes.told(), Told::Outcome);
    changes.event(event("JobRunning"));
    changes
        .write(&mut store, &record.uid, update(&record), &[], false)
        .expect("write");
    assert_eq!(changes.told(), Told::Nothing, "afresh after a write");
    assert!(changes.tell(Told::Changes));
}
