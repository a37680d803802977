//! Jobs: recording, replacing, updating, finding and deleting them, and the space kept for
//! their outcome (`reserve`).

mod reserve;

use std::path::Path;

use jiff::Timestamp;
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};
use trainctl_api::{JobKind, TrainingJob, jax, mpi, mxnet, paddle, pytorch, tensorflow, xgboost};

use super::codec::{
    corrupt, decode, decode_companions, encode, encode_companions, identity_columns, narrow,
    parse_identity, parse_timestamp, sqlite, timestamp_text,
};
use super::{JobRecord, Store, StoreError};
use crate::process::identity::ProcessIdentity;

/// The job that [`Store::insert_job`] replaced, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use = "the replaced job's logs directory is the caller's to delete"]
pub struct Replaced {
    /// The uid of the finished or abandoned job of the same namespace, kind and name that the new
    /// one replaced. Its replicas and events are gone; its logs directory is the caller's to
    /// delete.
    pub uid: Option<String>,
}

/// The columns read into a [`JobRecord`], in [`JobRow::read`]'s order.
const JOB_COLUMNS: &str = "uid, namespace, name, kind, object, retired_restarts, owner_pid, \
                           owner_start_ticks, created_at, updated_at, finished, companions";

impl Store {
    /// Records a new job. An existing job of the same namespace, kind and name is replaced when it
    /// is finished or no live trainctl runs it; otherwise the new job is refused with
    /// [`StoreError::JobExists`]. The space kept for the outcome of jobs is made sure of before
    /// the job runs ([`Store::keep_reserve`]; a disk too full for it is no error here).
    pub fn insert_job(&mut self, record: &JobRecord) -> Result<Replaced, StoreError> {
        let object = encode(&self.path, || format!("job {}", record.uid), &record.job)?;
        let companions = encode_companions(&self.path, &record.uid, &record.companions)?;
        let operation = format!(
            "record {} {}/{}",
            record.kind.singular(),
            record.namespace,
            record.name
        );
        let failed = sqlite(&self.path, operation);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&failed)?;
        let existing = tx
            .query_row(
                "SELECT uid, finished, owner_pid, owner_start_ticks FROM jobs
                 WHERE namespace = ?1 AND kind = ?2 AND name = ?3",
                params![record.namespace, record.kind.as_str(), record.name],
                |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, bool>(1)?,
                        row.get::<_, Option<i64>>(2)?,
                        row.get::<_, Option<i64>>(3)?,
                    ))
                },
            )
            .optional()
            .map_err(&failed)?;
        let mut replaced = Replaced::default();
        if let Some((uid, finished, pid, start_ticks)) = existing {
            let owner = parse_identity(pid, start_ticks)
                .map_err(|detail| corrupt(&self.path, format!("owner of job {uid}"), detail))?;
            if let Some(owner) = owner.filter(|owner| !finished && owner.is_alive()) {
                return Err(StoreError::JobExists {
                    namespace: record.namespace.clone(),
                    kind: record.kind,
                    name: record.name.clone(),
                    owner_pid: owner.pid,
                });
            }
            tx.execute("DELETE FROM jobs WHERE uid = ?1", [&uid])
                .map_err(&failed)?;
            replaced.uid = Some(uid);
        }
        let (owner_pid, owner_start_ticks) = identity_columns(record.owner);
        tx.execute(
            "INSERT INTO jobs (uid, namespace, name, kind, object, retired_restarts, owner_pid,
                               owner_start_ticks, created_at, updated_at, finished, companions)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                record.uid,
                record.namespace,
                record.name,
                record.kind.as_str(),
                object,
                record.retired_restarts,
                owner_pid,
                owner_start_ticks,
                timestamp_text(record.created_at),
                timestamp_text(record.updated_at),
                record.finished,
                companions,
            ],
        )
        .map_err(&failed)?;
        tx.commit().map_err(&failed)?;
        // Best effort: the final write makes room without it, or waits for room.
        let _ = self.keep_reserve();
        Ok(replaced)
    }

    /// Records a job's new object (with its status), retired restarts and whether it finished.
    pub fn update_job(
        &mut self,
        uid: &str,
        job: &TrainingJob,
        retired_restarts: u32,
        finished: bool,
    ) -> Result<(), StoreError> {
        update(&self.conn, &self.path, uid, job, retired_restarts, finished)
    }

    /// Records which trainctl process runs a job (`None`: none does).
    pub fn set_owner(
        &mut self,
        uid: &str,
        owner: Option<ProcessIdentity>,
    ) -> Result<(), StoreError> {
        let (owner_pid, owner_start_ticks) = identity_columns(owner);
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE jobs SET owner_pid = ?2, owner_start_ticks = ?3, updated_at = ?4
                 WHERE uid = ?1",
            )
            .and_then(|mut statement| {
                statement.execute(params![
                    uid,
                    owner_pid,
                    owner_start_ticks,
                    timestamp_text(Timestamp::now())
                ])
            })
            .map_err(sqlite(&self.path, format!("set the owner of job {uid}")))?;
        found(&self.path, uid, changed)
    }

    /// The jobs of this namespace and name: one per kind when `kind` is `None`.
    pub fn job(
        &self,
        namespace: &str,
        kind: Option<JobKind>,
        name: &str,
    ) -> Result<Vec<JobRecord>, StoreError> {
        let operation = format!("read job {namespace}/{name}");
        self.query_jobs(
            &operation,
            "WHERE namespace = ?1 AND name = ?2 AND (?3 IS NULL OR kind = ?3)
             ORDER BY created_at, kind",
            params![namespace, name, kind.map(JobKind::as_str)],
        )
    }

    /// The job with this uid, if any.
    pub fn job_by_uid(&self, uid: &str) -> Result<Option<JobRecord>, StoreError> {
        let operation = format!("read job {uid}");
        let mut jobs = self.query_jobs(&operation, "WHERE uid = ?1", params![uid])?;
        Ok(jobs.pop())
    }

    /// The jobs of a namespace (all when `None`) and kind (all when `None`), oldest first, then
    /// by name.
    pub fn jobs(
        &self,
        namespace: Option<&str>,
        kind: Option<JobKind>,
    ) -> Result<Vec<JobRecord>, StoreError> {
        self.query_jobs(
            "list jobs",
            "WHERE (?1 IS NULL OR namespace = ?1) AND (?2 IS NULL OR kind = ?2)
             ORDER BY created_at, name, kind",
            params![namespace, kind.map(JobKind::as_str)],
        )
    }

    /// Deletes a job with its replicas and events; returns whether there was one. Its logs
    /// directory is the caller's to delete.
    pub fn delete_job(&mut self, uid: &str) -> Result<bool, StoreError> {
        let deleted = self
            .conn
            .execute("DELETE FROM jobs WHERE uid = ?1", [uid])
            .map_err(sqlite(&self.path, format!("delete job {uid}")))?;
        Ok(deleted > 0)
    }

    fn query_jobs(
        &self,
        operation: &str,
        filter: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<JobRecord>, StoreError> {
        let failed = sqlite(&self.path, operation.to_owned());
        let mut statement = self
            .conn
            .prepare_cached(&format!("SELECT {JOB_COLUMNS} FROM jobs {filter}"))
            .map_err(&failed)?;
        let rows = statement
            .query_map(params, JobRow::read)
            .map_err(&failed)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&failed)?;
        rows.into_iter()
            .map(|row| row.into_record(&self.path))
            .collect()
    }
}

/// Writes a job's new object, retired restarts and whether it finished.
pub(super) fn update(
    conn: &Connection,
    path: &Path,
    uid: &str,
    job: &TrainingJob,
    retired_restarts: u32,
    finished: bool,
) -> Result<(), StoreError> {
    let object = encode(path, || format!("job {uid}"), job)?;
    let changed = conn
        .prepare_cached(
            "UPDATE jobs SET object = ?2, retired_restarts = ?3, finished = ?4, updated_at = ?5
             WHERE uid = ?1",
        )
        .and_then(|mut statement| {
            statement.execute(params![
                uid,
                object,
                retired_restarts,
                finished,
                timestamp_text(Timestamp::now())
            ])
        })
        .map_err(sqlite(path, format!("update job {uid}")))?;
    found(path, uid, changed)
}

/// `Ok` when a write changed a row, [`StoreError::NoSuchJob`] otherwise.
pub(super) fn found(path: &Path, uid: &str, changed: usize) -> Result<(), StoreError> {
    if changed == 0 {
        return Err(StoreError::NoSuchJob {
            path: path.to_owned(),
            uid: uid.to_owned(),
        });
    }
    Ok(())
}

/// A `jobs` row as stored, before its values are checked.
struct JobRow {
    uid: String,
    namespace: String,
    name: String,
    kind: String,
    object: String,
    retired_restarts: i64,
    owner_pid: Option<i64>,
    owner_start_ticks: Option<i64>,
    created_at: String,
    updated_at: String,
    finished: bool,
    companions: String,
}

impl JobRow {
    fn read(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(JobRow {
            uid: row.get(0)?,
            namespace: row.get(1)?,
            name: row.get(2)?,
            kind: row.get(3)?,
            object: row.get(4)?,
            retired_restarts: row.get(5)?,
            owner_pid: row.get(6)?,
            owner_start_ticks: row.get(7)?,
            created_at: row.get(8)?,
            updated_at: row.get(9)?,
            finished: row.get(10)?,
            companions: row.get(11)?,
        })
    }

    fn into_record(self, path: &Path) -> Result<JobRecord, StoreError> {
        let uid = self.uid;
        let bad = |field: &str| {
            let what = format!("{field} of job {uid}");
            move |detail: String| corrupt(path, what, detail)
        };
        let kind: JobKind = self
            .kind
            .parse()
            .map_err(|error: trainctl_api::kind::UnknownKind| bad("kind")(error.to_string()))?;
        Ok(JobRecord {
            job: decode_job(kind, &self.object).map_err(bad("object"))?,
            retired_restarts: narrow(self.retired_restarts, "retired restarts")
                .map_err(bad("retired restarts"))?,
            owner: parse_identity(self.owner_pid, self.owner_start_ticks).map_err(bad("owner"))?,
            created_at: parse_timestamp(&self.created_at).map_err(bad("creation time"))?,
            updated_at: parse_timestamp(&self.updated_at).map_err(bad("update time"))?,
            companions: decode_companions(&self.companions).map_err(bad("companions"))?,
            namespace: self.namespace,
            name: self.name,
            kind,
            finished: self.finished,
            uid,
        })
    }
}

/// Reads a job object; the `kind` column says which type it is.
fn decode_job(kind: JobKind, object: &str) -> Result<TrainingJob, String> {
    Ok(match kind {
        JobKind::TFJob => TrainingJob::TF(decode::<tensorflow::TFJob>(object)?),
        JobKind::PyTorchJob => TrainingJob::PyTorch(decode::<pytorch::PyTorchJob>(object)?),
        JobKind::XGBoostJob => TrainingJob::XGBoost(decode::<xgboost::XGBoostJob>(object)?),
        JobKind::PaddleJob => TrainingJob::Paddle(decode::<paddle::PaddleJob>(object)?),
        JobKind::JAXJob => TrainingJob::Jax(decode::<jax::JAXJob>(object)?),
        JobKind::MPIJob => TrainingJob::Mpi(decode::<mpi::MPIJob>(object)?),
        JobKind::MXJob => TrainingJob::MXNet(decode::<mxnet::MXJob>(object)?),
    })
}

#[cfg(test)]
mod tests;
