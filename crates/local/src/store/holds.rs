//! Resource holds: what each running job has taken of the machine (GPUs), shared by every trainctl
//! process through the database.
//!
//! A hold counts only while its job is unfinished and its owner process is alive, so a trainctl
//! that crashed or was killed never keeps GPUs from the next run.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::codec::{corrupt, decode, encode, parse_identity, sqlite};
use super::{Store, StoreError, jobs};

impl Store {
    /// Reserves resources for a job, atomically with respect to every other trainctl process.
    ///
    /// In one write transaction: collects the holds of every other unfinished job whose owner is
    /// alive, passes them to `decide`, and stores what `decide` returns as this job's hold.
    /// `None` from `decide` (it does not fit now) stores nothing and keeps the job's previous hold.
    /// `decide` runs under the database's write lock, which every other trainctl waits for: keep
    /// it a quick, pure choice.
    pub fn reserve<T: Serialize + DeserializeOwned>(
        &mut self,
        uid: &str,
        decide: impl FnOnce(Vec<T>) -> Option<T>,
    ) -> Result<Option<T>, StoreError> {
        let operation = format!("reserve resources for job {uid}");
        let failed = sqlite(&self.path, operation);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&failed)?;
        let exists = tx
            .query_row("SELECT 1 FROM jobs WHERE uid = ?1", [uid], |_| Ok(()))
            .optional()
            .map_err(&failed)?
            .is_some();
        if !exists {
            return Err(StoreError::NoSuchJob {
                path: self.path.clone(),
                uid: uid.to_owned(),
            });
        }
        let rows = {
            let mut statement = tx
                .prepare_cached(
                    "SELECT uid, hold, owner_pid, owner_start_ticks FROM jobs
                     WHERE uid != ?1 AND finished = 0 AND hold IS NOT NULL",
                )
                .map_err(&failed)?;
            statement
                .query_map([uid], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, Option<i64>>(2)?,
                        row.get::<_, Option<i64>>(3)?,
                    ))
                })
                .map_err(&failed)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(&failed)?
        };
        let mut others = Vec::with_capacity(rows.len());
        for (other, hold, pid, start_ticks) in rows {
            let owner = parse_identity(pid, start_ticks)
                .map_err(|detail| corrupt(&self.path, format!("owner of job {other}"), detail))?;
            if owner.is_some_and(|owner| owner.is_alive()) {
                others.push(decode(&hold).map_err(|detail| {
                    corrupt(&self.path, format!("hold of job {other}"), detail)
                })?);
            }
        }
        let Some(hold) = decide(others) else {
            return Ok(None);
        };
        let text = encode(&self.path, || format!("the hold of job {uid}"), &hold)?;
        tx.execute(
            "UPDATE jobs SET hold = ?2 WHERE uid = ?1",
            params![uid, text],
        )
        .map_err(&failed)?;
        tx.commit().map_err(&failed)?;
        Ok(Some(hold))
    }

    /// Whether the job holds resources: it was admitted and has not given them back.
    pub fn holds_resources(&self, uid: &str) -> Result<bool, StoreError> {
        self.conn
            .prepare_cached("SELECT hold IS NOT NULL FROM jobs WHERE uid = ?1")
            .and_then(|mut statement| statement.query_row([uid], |row| row.get(0)).optional())
            .map_err(sqlite(
                &self.path,
                format!("read the resources of job {uid}"),
            ))?
            .ok_or_else(|| StoreError::NoSuchJob {
                path: self.path.clone(),
                uid: uid.to_owned(),
            })
    }

    /// Gives back everything a job holds.
    pub fn release(&mut self, uid: &str) -> Result<(), StoreError> {
        release(&self.conn, &self.path, uid)
    }
}

/// Gives back everything the job `uid` holds, on `conn` (or a transaction on it).
pub(super) fn release(conn: &Connection, path: &Path, uid: &str) -> Result<(), StoreError> {
    let changed = conn
        .prepare_cached("UPDATE jobs SET hold = NULL WHERE uid = ?1")
        .and_then(|mut statement| statement.execute([uid]))
        .map_err(sqlite(path, format!("release the resources of job {uid}")))?;
    jobs::found(path, uid, changed)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Barrier;

    use serde::Deserialize;

    use super::*;
    use crate::process::identity::ProcessIdentity;
    use crate::store::JobRecord;
    use crate::store::fixtures::{dead_process, job_record, state_dir};

    /// What a job holds in these tests: GPU indices.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    struct Gpus(BTreeSet<u32>);

    /// Picks the `wanted` lowest GPUs of `0..total` that nobody holds, or `None` when too few are
    /// free.
    fn lowest_free(total: u32, wanted: usize) -> impl FnOnce(Vec<Gpus>) -> Option<Gpus> {
        move |held| {
            let taken: BTreeSet<u32> = held.into_iter().flat_map(|gpus| gpus.0).collect();
            let free: BTreeSet<u32> = (0..total)
                .filter(|gpu| !taken.contains(gpu))
                .take(wanted)
                .collect();
            (free.len() == wanted).then_some(Gpus(free))
        }
    }

    fn insert(store: &mut Store, record: &JobRecord) {
        let _ = store.insert_job(record).expect("insert");
    }

    #[test]
    fn holds_of_running_jobs_never_overlap() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let first = job_record("first", Some(ProcessIdentity::current()));
        let second = job_record("second", Some(ProcessIdentity::current()));
        let third = job_record("third", Some(ProcessIdentity::current()));
        for record in [&first, &second, &third] {
            insert(&mut store, record);
        }

        let a = store
            .reserve(&first.uid, lowest_free(4, 2))
            .expect("reserve");
        let b = store
            .reserve(&second.uid, lowest_free(4, 2))
            .expect("reserve");
        let c = store
            .reserve(&third.uid, lowest_free(4, 1))
            .expect("reserve");

        assert_eq!(a, Some(Gpus([0, 1].into())));
        assert_eq!(b, Some(Gpus([2, 3].into())));
        assert_eq!(c, None, "no GPU is left");
    }

    #[test]
    fn decide_sees_only_the_holds_of_other_live_unfinished_jobs() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let live = job_record("live", Some(ProcessIdentity::current()));
        let crashed = job_record("crashed", Some(dead_process()));
        let finished = JobRecord {
            finished: true,
            ..job_record("finished", Some(ProcessIdentity::current()))
        };
        let ownerless = job_record("ownerless", None);
        let me = job_record("me", Some(ProcessIdentity::current()));
        for (gpu, record) in [&live, &crashed, &finished, &ownerless, &me]
            .into_iter()
            .enumerate()
        {
            insert(&mut store, record);
            let gpu = u32::try_from(gpu).expect("small");
            store
                .reserve(&record.uid, |_: Vec<Gpus>| Some(Gpus([gpu].into())))
                .expect("reserve");
        }

        let mut seen = None;
        store
            .reserve(&me.uid, |held: Vec<Gpus>| {
                seen = Some(held);
                None
            })
            .expect("reserve");

        assert_eq!(
            seen,
            Some(vec![Gpus([0].into())]),
            "only `live` holds anything"
        );
    }

    #[test]
    fn a_job_holds_resources_from_its_reservation_to_their_release() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let job = job_record("job", Some(ProcessIdentity::current()));
        insert(&mut store, &job);
        assert!(!store.holds_resources(&job.uid).expect("read"));
        let _ = store.reserve(&job.uid, lowest_free(1, 1)).expect("reserve");
        assert!(store.holds_resources(&job.uid).expect("read"));
        store.release(&job.uid).expect("release");
        assert!(!store.holds_resources(&job.uid).expect("read"));
        let error = store.holds_resources("nope").expect_err("unknown job");
        assert!(matches!(error, StoreError::NoSuchJob { .. }), "{error:?}");
    }

    #[test]
    fn released_hold_is_free_again() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let first = job_record("first", Some(ProcessIdentity::current()));
        let second = job_record("second", Some(ProcessIdentity::current()));
        insert(&mut store, &first);
        insert(&mut store, &second);
        let _ = store
            .reserve(&first.uid, lowest_free(1, 1))
            .expect("reserve");
        assert_eq!(
            store
                .reserve(&second.uid, lowest_free(1, 1))
                .expect("reserve"),
            None
        );

        store.release(&first.uid).expect("release");

        assert_eq!(
            store
                .reserve(&second.uid, lowest_free(1, 1))
                .expect("reserve"),
            Some(Gpus([0].into()))
        );
    }

    #[test]
    fn reserving_for_an_unknown_job_fails() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let error = store
            .reserve("nope", |_: Vec<Gpus>| Some(Gpus(BTreeSet::new())))
            .expect_err("unknown job");
        assert!(matches!(error, StoreError::NoSuchJob { .. }), "{error:?}");
        let error = store.release("nope").expect_err("unknown job");
        assert!(matches!(error, StoreError::NoSuchJob { .. }), "{error:?}");
    }

    #[test]
    fn concurrent_processes_never_get_the_same_gpu() {
        let temp = state_dir();
        let mut setup = Store::open(temp.path()).expect("open");
        let jobs = [
            job_record("first", Some(ProcessIdentity::current())),
            job_record("second", Some(ProcessIdentity::current())),
        ];
        for record in &jobs {
            insert(&mut setup, record);
        }
        drop(setup);

        let start = Barrier::new(jobs.len());
        let results: Vec<Option<Gpus>> = std::thread::scope(|scope| {
            let handles: Vec<_> = jobs
                .iter()
                .map(|record| {
                    let (start, dir) = (&start, temp.path());
                    scope.spawn(move || {
                        let mut store = Store::open(dir).expect("open");
                        start.wait();
                        store
                            .reserve(&record.uid, lowest_free(1, 1))
                            .expect("reserve")
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().expect("the thread does not panic"))
                .collect()
        });

        let winners: Vec<&Gpus> = results.iter().flatten().collect();
        assert_eq!(winners, [&Gpus([0].into())], "{results:?}");
    }
}
