//! Read-only queries across jobs, for the commands that look at the whole machine: what every
//! live job holds (`trainctl top node`), and the events of many jobs at once, from a point on
//! (`trainctl events`, and `events -w`, which asks again for what came after).

use std::path::Path;

use rusqlite::{Row, params};
use serde::de::DeserializeOwned;
use trainctl_api::JobKind;

use super::codec::{corrupt, decode, parse_identity, sqlite};
use super::events::EventRow;
use super::{EventRecord, Store, StoreError};

/// Which jobs' events [`Store::events_after`] reads; every field left `None` selects all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventScope<'a> {
    /// The jobs' namespace.
    pub namespace: Option<&'a str>,
    /// The jobs' kind.
    pub kind: Option<JobKind>,
    /// The jobs' name.
    pub name: Option<&'a str>,
}

/// An event with the job it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEventRecord {
    /// The event's row id: it grows with every event recorded (a series that grows is written
    /// again under a new id), so a reader that has seen up to an id asks for what came after it.
    pub id: i64,
    /// The job's uid.
    pub job_uid: String,
    /// The job's namespace.
    pub namespace: String,
    /// The job's kind.
    pub kind: JobKind,
    /// The job's name.
    pub name: String,
    /// The event.
    pub event: EventRecord,
}

impl Store {
    /// A number that changes whenever another connection (another process's, or another of
    /// this process's) commits to the database: SQLite's `PRAGMA data_version`. Cheap enough to
    /// ask a few times a second, to learn that something changed without reading what.
    pub fn data_version(&self) -> Result<i64, StoreError> {
        self.conn
            .pragma_query_value(None, "data_version", |row| row.get(0))
            .map_err(sqlite(&self.path, "read the data version".to_owned()))
    }

    /// What each unfinished job whose trainctl process is alive holds, by the job's uid: the
    /// holds that [`Store::reserve`] counts as taken. `T` is the hold's type, as reserved.
    pub fn live_holds<T: DeserializeOwned>(&self) -> Result<Vec<(String, T)>, StoreError> {
        let failed = sqlite(&self.path, "read the resources jobs hold".to_owned());
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT uid, hold, owner_pid, owner_start_ticks FROM jobs
                 WHERE finished = 0 AND hold IS NOT NULL ORDER BY created_at, name",
            )
            .map_err(&failed)?;
        let rows = statement
            .query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, Option<i64>>(2)?,
                    row.get::<_, Option<i64>>(3)?,
                ))
            })
            .map_err(&failed)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&failed)?;
        let mut holds = Vec::with_capacity(rows.len());
        for (uid, hold, pid, start_ticks) in rows {
            let owner = parse_identity(pid, start_ticks)
                .map_err(|detail| corrupt(&self.path, format!("owner of job {uid}"), detail))?;
            if owner.is_some_and(|owner| owner.is_alive()) {
                let hold = decode(&hold)
                    .map_err(|detail| corrupt(&self.path, format!("hold of job {uid}"), detail))?;
                holds.push((uid, hold));
            }
        }
        Ok(holds)
    }

    /// The events of the jobs in `scope` recorded after the event `after` (`0`: all of them),
    /// each series once, oldest last occurrence first.
    pub fn events_after(
        &self,
        scope: EventScope<'_>,
        after: i64,
    ) -> Result<Vec<JobEventRecord>, StoreError> {
        let failed = sqlite(&self.path, "read the events of jobs".to_owned());
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT events.id, events.time, COALESCE(events.first_time, events.time),
                        events.count, events.type, events.reason, events.message, events.object,
                        jobs.uid, jobs.namespace, jobs.kind, jobs.name
                 FROM events JOIN jobs ON jobs.uid = events.job_uid
                 WHERE events.id > ?1
                   AND (?2 IS NULL OR jobs.namespace = ?2)
                   AND (?3 IS NULL OR jobs.kind = ?3)
                   AND (?4 IS NULL OR jobs.name = ?4)
                 ORDER BY events.id",
            )
            .map_err(&failed)?;
        let rows = statement
            .query_map(
                params![
                    after,
                    scope.namespace,
                    scope.kind.map(JobKind::as_str),
                    scope.name
                ],
                JobEventRow::read,
            )
            .map_err(&failed)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&failed)?;
        rows.into_iter()
            .map(|row| row.into_record(&self.path))
            .collect()
    }
}

/// A row of [`Store::events_after`]'s query, before its values are checked.
struct JobEventRow {
    event: EventRow,
    job_uid: String,
    namespace: String,
    kind: String,
    name: String,
}

impl JobEventRow {
    fn read(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(JobEventRow {
            event: EventRow::read(row, 0)?,
            job_uid: row.get(8)?,
            namespace: row.get(9)?,
            kind: row.get(10)?,
            name: row.get(11)?,
        })
    }

    fn into_record(self, path: &Path) -> Result<JobEventRecord, StoreError> {
        let kind = self
            .kind
            .parse()
            .map_err(|error: trainctl_api::kind::UnknownKind| {
                corrupt(
                    path,
                    format!("kind of job {}", self.job_uid),
                    error.to_string(),
                )
            })?;
        Ok(JobEventRecord {
            id: self.event.id(),
            event: self.event.into_record(path)?,
            job_uid: self.job_uid,
            namespace: self.namespace,
            kind,
            name: self.name,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::process::identity::ProcessIdentity;
    use crate::store::JobRecord;
    use crate::store::fixtures::{dead_process, event, job_record, pytorch_record, state_dir};

    /// A hold as these tests reserve it.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    struct Gpus(Vec<u32>);

    #[test]
    fn live_holds_are_those_of_unfinished_jobs_whose_owner_lives() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let live = job_record("live", Some(ProcessIdentity::current()));
        let crashed = job_record("crashed", Some(dead_process()));
        let finished = JobRecord {
            finished: true,
            ..job_record("finished", Some(ProcessIdentity::current()))
        };
        let waiting = job_record("waiting", Some(ProcessIdentity::current()));
        for (gpu, record) in [&live, &crashed, &finished].into_iter().enumerate() {
            let _ = store.insert_job(record).expect("insert");
            let gpu = u32::try_from(gpu).expect("small");
            store
                .reserve(&record.uid, |_: Vec<Gpus>| Some(Gpus(vec![gpu])))
                .expect("reserve");
        }
        let _ = store.insert_job(&waiting).expect("insert");

        let holds: Vec<(String, Gpus)> = store.live_holds().expect("read");

        assert_eq!(holds, [(live.uid, Gpus(vec![0]))]);
    }

    #[test]
    fn events_after_selects_by_job_and_continues_after_an_id() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let tf = job_record("mnist", None);
        let torch = pytorch_record("mnist");
        let other = job_record("other", None);
        for record in [&tf, &torch, &other] {
            let _ = store.insert_job(record).expect("insert");
        }
        store
            .append_event(&tf.uid, &event("First"))
            .expect("append");
        store
            .append_event(&torch.uid, &event("Second"))
            .expect("append");
        store
            .append_event(&other.uid, &event("Third"))
            .expect("append");

        let reasons = |events: &[JobEventRecord]| -> Vec<String> {
            events.iter().map(|e| e.event.reason.clone()).collect()
        };
        let all = store.events_after(EventScope::default(), 0).expect("read");
        assert_eq!(reasons(&all), ["First", "Second", "Third"]);
        assert_eq!(
            (all[1].kind, all[1].name.as_str(), all[1].namespace.as_str()),
            (JobKind::PyTorchJob, "mnist", "default")
        );
        let named = EventScope {
            name: Some("mnist"),
            ..EventScope::default()
        };
        assert_eq!(
            reasons(&store.events_after(named, 0).expect("read")),
            ["First", "Second"]
        );
        let one_kind = EventScope {
            kind: Some(JobKind::TFJob),
            ..named
        };
        assert_eq!(
            reasons(&store.events_after(one_kind, 0).expect("read")),
            ["First"]
        );
        let elsewhere = EventScope {
            namespace: Some("team-a"),
            ..EventScope::default()
        };
        assert!(store.events_after(elsewhere, 0).expect("read").is_empty());
        assert_eq!(
            reasons(
                &store
                    .events_after(EventScope::default(), all[0].id)
                    .expect("read")
            ),
            ["Second", "Third"]
        );
    }
}
