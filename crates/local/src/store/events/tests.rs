use jiff::{SignedDuration, Timestamp};
use rusqlite::Connection;

use super::*;
use crate::store::fixtures::{job_record, state_dir};
use crate::store::queries::EventScope;
use crate::store::{DATABASE_FILE, JobChanges, schema};

/// A time `seconds` after a fixed start.
fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000).expect("time") + SignedDuration::from_secs(seconds)
}

fn warning(reason: &str, message: &str, seconds: i64) -> EventRecord {
    EventRecord::once(at(seconds), "Warning", reason, message.to_owned(), None)
}

/// `event` as a series of `count` from `first` seconds on.
fn series(event: &EventRecord, count: u32, first: i64) -> EventRecord {
    EventRecord {
        count,
        first_time: at(first),
        ..event.clone()
    }
}

/// A store with the job `mnist`, and its uid.
fn store_with_job(temp: &tempfile::TempDir) -> (Store, String) {
    let mut store = Store::open(temp.path()).expect("open");
    let job = job_record("mnist", None);
    let _ = store.insert_job(&job).expect("insert");
    (store, job.uid)
}

#[test]
fn events_come_back_in_the_order_they_were_appended() {
    let temp = state_dir();
    let mut store = Store::open(temp.path()).expect("open");
    let job = job_record("mnist", None);
    let other = job_record("other", None);
    let _ = store.insert_job(&job).expect("insert");
    let _ = store.insert_job(&other).expect("insert");
    let now = Timestamp::now();
    // The same time for all: order is insertion order, not time order.
    let events: Vec<EventRecord> = ["SuccessfulCreatePod", "JobRunning", "JobSucceeded"]
        .into_iter()
        .enumerate()
        .map(|(i, reason)| {
            EventRecord::once(
                now,
                if i == 1 { "Warning" } else { "Normal" },
                reason,
                format!("{reason} message"),
                (i == 0).then(|| "mnist-worker-0".to_owned()),
            )
        })
        .collect();
    for event in &events {
        store.append_event(&job.uid, event).expect("append");
        store.append_event(&other.uid, event).expect("append");
    }

    assert_eq!(store.events(&job.uid).expect("read"), events);
}

#[test]
fn an_event_alike_an_earlier_one_adds_to_its_series() {
    let temp = state_dir();
    let (mut store, uid) = store_with_job(&temp);
    let exited = |seconds| {
        EventRecord::once(
            at(seconds),
            "Normal",
            "ExitedWithCode",
            "Pod: default.mnist-worker-0 exited with code 1".to_owned(),
            None,
        )
    };
    let back_off = |seconds| {
        EventRecord::once(
            at(seconds),
            "Warning",
            "BackOff",
            "Back-off restarting failed container of pod mnist-worker-0".to_owned(),
            Some("mnist-worker-0".to_owned()),
        )
    };
    let started = warning("ScriptNotFound", "no script", 0);
    store.append_event(&uid, &started).expect("append");
    for seconds in [1, 11, 31, 71] {
        store.append_event(&uid, &exited(seconds)).expect("append");
        store
            .append_event(&uid, &back_off(seconds))
            .expect("append");
    }

    // One row each, counted, oldest last occurrence first; the order in which they came last.
    assert_eq!(
        store.events(&uid).expect("read"),
        [
            started,
            series(&exited(71), 4, 1),
            series(&back_off(71), 4, 1),
        ]
    );
    // Another exit code, type, object or job is another series.
    let code_2 = EventRecord {
        message: "Pod: default.mnist-worker-0 exited with code 2".to_owned(),
        ..exited(80)
    };
    let about_the_job = EventRecord {
        object: None,
        ..back_off(81)
    };
    let normal = EventRecord {
        type_: "Normal".to_owned(),
        ..back_off(82)
    };
    for event in [&code_2, &about_the_job, &normal] {
        store.append_event(&uid, event).expect("append");
    }
    let other = job_record("other", None);
    let _ = store.insert_job(&other).expect("insert");
    store.append_event(&other.uid, &exited(90)).expect("append");
    assert_eq!(store.events(&uid).expect("read").len(), 6);
    assert_eq!(store.events(&other.uid).expect("read"), [exited(90)]);
}

#[test]
fn the_tenth_different_message_within_ten_minutes_is_combined_with_the_later_ones() {
    let temp = state_dir();
    let (mut store, uid) = store_with_job(&temp);
    let lost = |pid: i64, seconds| {
        warning(
            "ReplicaLost",
            &format!("worker-0 (pid {pid}) ended unseen"),
            seconds,
        )
    };
    for pid in 1..=9 {
        store.append_event(&uid, &lost(pid, pid)).expect("append");
    }
    assert_eq!(store.events(&uid).expect("read").len(), 9, "each its own");
    // The tenth message, then an eleventh: one combined row, with the latest message.
    store.append_event(&uid, &lost(10, 100)).expect("append");
    store.append_event(&uid, &lost(11, 200)).expect("append");
    // A message that has its row keeps adding to it.
    store.append_event(&uid, &lost(3, 300)).expect("append");
    let combined = |pid, seconds| EventRecord {
        message: format!("{COMBINED}worker-0 (pid {pid}) ended unseen"),
        ..lost(pid, seconds)
    };
    let events = store.events(&uid).expect("read");
    assert_eq!(
        events[8..],
        [
            series(&combined(11, 200), 2, 100),
            series(&lost(3, 300), 2, 3)
        ]
    );
    assert_eq!(events.len(), 10);
    // While the combined row was seen within ten minutes, a new message goes on into it, even
    // when the rows of the others are older.
    store.append_event(&uid, &lost(12, 790)).expect("append");
    // Ten minutes after the last of the group, a new message is a row of its own again.
    store.append_event(&uid, &lost(13, 1_391)).expect("append");
    let events = store.events(&uid).expect("read");
    assert_eq!(
        events[9..],
        [series(&combined(12, 790), 3, 100), lost(13, 1_391)]
    );
}

#[test]
fn a_batch_of_changes_adds_to_the_series_too_and_a_reader_after_an_id_sees_the_new_count() {
    let temp = state_dir();
    let (mut store, uid) = store_with_job(&temp);
    let exited = |seconds| warning("ExitedWithCode", "exited with code 1", seconds);
    store.append_event(&uid, &exited(0)).expect("append");
    let seen = store
        .events_after(EventScope::default(), 0)
        .expect("read")
        .last()
        .expect("an event")
        .id;
    let batch = [exited(10), warning("BackOff", "back-off", 10), exited(20)];
    store
        .save(
            &uid,
            &JobChanges {
                events: &batch,
                ..JobChanges::default()
            },
        )
        .expect("save");
    let after: Vec<EventRecord> = store
        .events_after(EventScope::default(), seen)
        .expect("read")
        .into_iter()
        .map(|record| record.event)
        .collect();
    assert_eq!(after, [batch[1].clone(), series(&exited(20), 3, 0)]);
}

#[test]
fn events_recorded_before_version_8_read_as_one_occurrence_and_add_up_after() {
    let temp = state_dir();
    let path = temp.path().join(DATABASE_FILE);
    let conn = Connection::open(&path).expect("open");
    for migration in &schema::MIGRATIONS[..7] {
        conn.execute_batch(migration).expect("migrate to version 7");
    }
    conn.pragma_update(None, "user_version", 7)
        .expect("set user_version");
    let job = job_record("mnist", None);
    let mut old = Store {
        conn,
        state_dir: temp.path().to_owned(),
        path,
    };
    let _ = old.insert_job(&job).expect("insert");
    old.conn
        .execute(
            "INSERT INTO events (job_uid, time, type, reason, message, object)
             VALUES (?1, ?2, 'Warning', 'BackOff', 'back-off', NULL)",
            params![job.uid, timestamp_text(at(5))],
        )
        .expect("an event of version 7");
    drop(old);

    let mut store = Store::open(temp.path()).expect("open and migrate");
    assert_eq!(
        store.events(&job.uid).expect("read"),
        [warning("BackOff", "back-off", 5)]
    );
    store
        .append_event(&job.uid, &warning("BackOff", "back-off", 9))
        .expect("append");
    assert_eq!(
        store.events(&job.uid).expect("read"),
        [series(&warning("BackOff", "back-off", 9), 2, 5)]
    );
}
