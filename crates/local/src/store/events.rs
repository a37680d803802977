//! Events: what happened to a job, in order, like `kubectl describe` shows.

use std::path::Path;

use rusqlite::{Connection, Row, params};

use super::codec::{corrupt, parse_timestamp, sqlite, sqlite_for_job, timestamp_text};
use super::{EventRecord, Store, StoreError};

impl Store {
    /// Appends an event to a job's events.
    pub fn append_event(&mut self, job_uid: &str, event: &EventRecord) -> Result<(), StoreError> {
        append(&self.conn, &self.path, job_uid, event)
    }

    /// A job's events, in the order they were appended.
    pub fn events(&self, job_uid: &str) -> Result<Vec<EventRecord>, StoreError> {
        let failed = sqlite(&self.path, format!("read the events of job {job_uid}"));
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT id, time, type, reason, message, object FROM events
                 WHERE job_uid = ?1 ORDER BY id",
            )
            .map_err(&failed)?;
        let rows = statement
            .query_map([job_uid], EventRow::read)
            .map_err(&failed)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&failed)?;
        rows.into_iter()
            .map(|row| row.into_record(&self.path))
            .collect()
    }
}

/// Appends one event row.
pub(super) fn append(
    conn: &Connection,
    path: &Path,
    job_uid: &str,
    event: &EventRecord,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO events (job_uid, time, type, reason, message, object)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )
    .and_then(|mut statement| {
        statement.execute(params![
            job_uid,
            timestamp_text(event.time),
            event.type_,
            event.reason,
            event.message,
            event.object,
        ])
    })
    .map_err(sqlite_for_job(
        path,
        format!("record a {} event of job {job_uid}", event.reason),
        job_uid,
    ))?;
    Ok(())
}

/// An `events` row as stored, before its values are checked.
struct EventRow {
    id: i64,
    time: String,
    type_: String,
    reason: String,
    message: String,
    object: Option<String>,
}

impl EventRow {
    fn read(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(EventRow {
            id: row.get(0)?,
            time: row.get(1)?,
            type_: row.get(2)?,
            reason: row.get(3)?,
            message: row.get(4)?,
            object: row.get(5)?,
        })
    }

    fn into_record(self, path: &Path) -> Result<EventRecord, StoreError> {
        Ok(EventRecord {
            time: parse_timestamp(&self.time)
                .map_err(|detail| corrupt(path, format!("time of event {}", self.id), detail))?,
            type_: self.type_,
            reason: self.reason,
            message: self.message,
            object: self.object,
        })
    }
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;

    use super::*;
    use crate::store::fixtures::{job_record, state_dir};

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
            .map(|(i, reason)| EventRecord {
                time: now,
                type_: if i == 1 { "Warning" } else { "Normal" }.to_owned(),
                reason: reason.to_owned(),
                message: format!("{reason} message"),
                object: (i == 0).then(|| "mnist-worker-0".to_owned()),
            })
            .collect();
        for event in &events {
            store.append_event(&job.uid, event).expect("append");
            store.append_event(&other.uid, event).expect("append");
        }

        assert_eq!(store.events(&job.uid).expect("read"), events);
    }
}
