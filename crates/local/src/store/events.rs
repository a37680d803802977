//! Events: what happened to a job, in order, like `kubectl describe` shows, kept as Kubernetes
//! keeps them: an event alike an earlier one of its job is no new row but one more occurrence of
//! that row's series (`count`, `first_time`, `time`: Kubernetes' `count`, `firstTimestamp` and
//! `lastTimestamp`).
//!
//! [`append`] decides as client-go's event correlator does (`tools/record/events_cache.go`),
//! simplified:
//!
//! - An event of the same type, reason, object and message as a row of its job adds to that row:
//!   its count goes up, its last time moves to the event's.
//! - Events of one *group* (the same job, type, reason and object) whose messages differ are
//!   rows of their own until the group has had [`SIMILAR_MESSAGES`] different messages within
//!   [`SIMILAR_WINDOW`]: the message that makes ten goes into the group's one *combined* row,
//!   whose message is [`COMBINED`] followed by the latest one's, and so does every new message
//!   after it while that row was last seen within the window. A message that has a row of its
//!   own keeps adding to it.
//!
//! A row that grows is written again under a new id, so that ids stay in the order of the last
//! occurrences: read in id order, the events are oldest last-seen first, and a reader that has
//! seen up to an id (`events -w`) is given the row again with its new count.

use std::path::Path;

use jiff::SignedDuration;
use rusqlite::{Connection, Row, params};

use super::codec::{corrupt, narrow, parse_timestamp, sqlite, sqlite_for_job, timestamp_text};
use super::{EventRecord, Store, StoreError};

/// How the message of a group's combined row begins, followed by the latest message: client-go's
/// words.
pub const COMBINED: &str = "(combined from similar events): ";

/// The number of different messages of a group, within [`SIMILAR_WINDOW`], from which on they
/// are combined (client-go's).
const SIMILAR_MESSAGES: usize = 10;

/// How recent the other messages of a group are to count toward [`SIMILAR_MESSAGES`], and the
/// group's combined row to go on taking new ones (client-go's: 10 minutes).
const SIMILAR_WINDOW: SignedDuration = SignedDuration::from_secs(600);

impl Store {
    /// Records an event of a job: a new row, or one more occurrence of an alike one (see the
    /// module's documentation).
    pub fn append_event(&mut self, job_uid: &str, event: &EventRecord) -> Result<(), StoreError> {
        append(&self.conn, &self.path, job_uid, event)
    }

    /// A job's events, each series once, oldest last occurrence first.
    pub fn events(&self, job_uid: &str) -> Result<Vec<EventRecord>, StoreError> {
        let failed = sqlite(&self.path, format!("read the events of job {job_uid}"));
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT id, time, COALESCE(first_time, time), count, type, reason, message, object
                 FROM events WHERE job_uid = ?1 ORDER BY id",
            )
            .map_err(&failed)?;
        let rows = statement
            .query_map([job_uid], |row| EventRow::read(row, 0))
            .map_err(&failed)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&failed)?;
        rows.into_iter()
            .map(|row| row.into_record(&self.path))
            .collect()
    }
}

/// Records `event` (one occurrence, or a series of `count`) in the job's events: as a new row, or
/// added to the row of its series.
pub(super) fn append(
    conn: &Connection,
    path: &Path,
    job_uid: &str,
    event: &EventRecord,
) -> Result<(), StoreError> {
    let failed = sqlite_for_job(
        path,
        format!("record a {} event of job {job_uid}", event.reason),
        job_uid,
    );
    let since = timestamp_text(event.time - SIMILAR_WINDOW);
    let group = conn
        .prepare_cached(
            "SELECT id, message, count, COALESCE(first_time, time), time, combined FROM events
             WHERE job_uid = ?1 AND reason = ?2 AND type = ?3 AND object IS ?4
               AND (message = ?5 OR combined = 1 OR time >= ?6)",
        )
        .and_then(|mut statement| {
            statement
                .query_map(
                    params![
                        job_uid,
                        event.reason,
                        event.type_,
                        event.object,
                        event.message,
                        since
                    ],
                    Series::read,
                )?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(&failed)?;
    let time = timestamp_text(event.time);
    let first_time = timestamp_text(event.first_time);
    let new = NewRow {
        time: &time,
        first_time: &first_time,
        count: i64::from(event.count),
        combined: false,
    };
    let row = match place(&group, &event.message, &since) {
        Place::Row(series) => {
            conn.prepare_cached("DELETE FROM events WHERE id = ?1")
                .and_then(|mut statement| statement.execute([series.id]))
                .map_err(&failed)?;
            NewRow {
                time: series.time.as_str().max(time.as_str()),
                first_time: series.first_time.as_str().min(first_time.as_str()),
                count: series
                    .count
                    .saturating_add(new.count)
                    .min(i64::from(u32::MAX)),
                combined: series.combined,
            }
        }
        Place::New { combined } => NewRow { combined, ..new },
    };
    let message = if row.combined {
        format!("{COMBINED}{}", event.message)
    } else {
        event.message.clone()
    };
    conn.prepare_cached(
        "INSERT INTO events (job_uid, time, first_time, count, type, reason, message, object,
                             combined)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )
    .and_then(|mut statement| {
        statement.execute(params![
            job_uid,
            row.time,
            row.first_time,
            row.count,
            event.type_,
            event.reason,
            message,
            event.object,
            row.combined,
        ])
    })
    .map_err(&failed)?;
    Ok(())
}

/// A row of an event's group, as [`append`] weighs it (times as stored: their text order is
/// their time order).
#[derive(Debug)]
struct Series {
    id: i64,
    message: String,
    count: i64,
    first_time: String,
    time: String,
    combined: bool,
}

impl Series {
    fn read(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Series {
            id: row.get(0)?,
            message: row.get(1)?,
            count: row.get(2)?,
            first_time: row.get(3)?,
            time: row.get(4)?,
            combined: row.get(5)?,
        })
    }
}

/// The row [`append`] writes.
#[derive(Debug, Clone, Copy)]
struct NewRow<'a> {
    time: &'a str,
    first_time: &'a str,
    count: i64,
    combined: bool,
}

/// Where an event goes among the rows of its group.
#[derive(Debug)]
enum Place<'a> {
    /// Into this row's series.
    Row(&'a Series),
    /// Into a new row: the group's combined row, or a row of its own.
    New {
        /// Whether the new row is the group's combined row.
        combined: bool,
    },
}

/// Where an event with `message` goes among the rows of its `group` (those with its message,
/// the combined one, and those last seen at or after `since`, the start of the window).
fn place<'a>(group: &'a [Series], message: &str, since: &str) -> Place<'a> {
    if let Some(same) = group
        .iter()
        .find(|series| !series.combined && series.message == message)
    {
        return Place::Row(same);
    }
    let combined = group.iter().find(|series| series.combined);
    let recent = group
        .iter()
        .filter(|series| !series.combined && series.time.as_str() >= since)
        .count();
    let combining = recent + 1 >= SIMILAR_MESSAGES
        || combined.is_some_and(|series| series.time.as_str() >= since);
    match combined {
        Some(series) if combining => Place::Row(series),
        _ => Place::New {
            combined: combining,
        },
    }
}

/// An `events` row as stored, before its values are checked: its columns from `at` on are
/// id, time, first time, count, type, reason, message and object.
pub(super) struct EventRow {
    id: i64,
    time: String,
    first_time: String,
    count: i64,
    type_: String,
    reason: String,
    message: String,
    object: Option<String>,
}

impl EventRow {
    /// Reads the columns from `at` on.
    pub(super) fn read(row: &Row<'_>, at: usize) -> rusqlite::Result<Self> {
        Ok(EventRow {
            id: row.get(at)?,
            time: row.get(at + 1)?,
            first_time: row.get(at + 2)?,
            count: row.get(at + 3)?,
            type_: row.get(at + 4)?,
            reason: row.get(at + 5)?,
            message: row.get(at + 6)?,
            object: row.get(at + 7)?,
        })
    }

    /// The row's id.
    pub(super) fn id(&self) -> i64 {
        self.id
    }

    /// The record, its values checked.
    pub(super) fn into_record(self, path: &Path) -> Result<EventRecord, StoreError> {
        let id = self.id;
        let time = |text: &str| {
            parse_timestamp(text)
                .map_err(|detail| corrupt(path, format!("time of event {id}"), detail))
        };
        Ok(EventRecord {
            time: time(&self.time)?,
            first_time: time(&self.first_time)?,
            count: narrow(self.count, "count")
                .map_err(|detail| corrupt(path, format!("count of event {id}"), detail))?,
            type_: self.type_,
            reason: self.reason,
            message: self.message,
            object: self.object,
        })
    }
}

#[cfg(test)]
mod tests;
