//! Replicas: one row per replica slot of a job, rewritten as its process changes.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{Connection, Row, params};
use trainctl_api::ReplicaType;

use super::codec::{
    corrupt, decode, encode, identity_columns, narrow, parse_identity, parse_optional_timestamp,
    parse_path, path_bytes, sqlite, sqlite_for_job, timestamp_text,
};
use super::{ReplicaRecord, Store, StoreError};

impl Store {
    /// Records a replica, replacing the previous record of the same slot.
    pub fn upsert_replica(&mut self, replica: &ReplicaRecord) -> Result<(), StoreError> {
        upsert(&self.conn, &self.path, replica)
    }

    /// The replicas of a job, by replica type (in [`ReplicaType`]'s order) and index.
    pub fn replicas(&self, job_uid: &str) -> Result<Vec<ReplicaRecord>, StoreError> {
        let failed = sqlite(&self.path, format!("read the replicas of job {job_uid}"));
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT job_uid, replica_type, idx, state, pid, pid_start_ticks, port, gpus,
                        restarts, exit_code, reason, started_at, finished_at, log_path,
                        pod_restarts
                 FROM replicas WHERE job_uid = ?1",
            )
            .map_err(&failed)?;
        let rows = statement
            .query_map([job_uid], ReplicaRow::read)
            .map_err(&failed)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&failed)?;
        let mut replicas = rows
            .into_iter()
            .map(|row| row.into_record(&self.path))
            .collect::<Result<Vec<_>, _>>()?;
        replicas.sort_by(|a, b| (&a.replica_type, a.index).cmp(&(&b.replica_type, b.index)));
        Ok(replicas)
    }

    /// The replicas of every job, by job uid, each job's in [`Store::replicas`]' order: one
    /// query, for the views of every job at once.
    pub fn all_replicas(&self) -> Result<HashMap<String, Vec<ReplicaRecord>>, StoreError> {
        let failed = sqlite(&self.path, "read the replicas of every job".to_owned());
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT job_uid, replica_type, idx, state, pid, pid_start_ticks, port, gpus,
                        restarts, exit_code, reason, started_at, finished_at, log_path,
                        pod_restarts
                 FROM replicas",
            )
            .map_err(&failed)?;
        let rows = statement
            .query_map([], ReplicaRow::read)
            .map_err(&failed)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&failed)?;
        let mut by_job: HashMap<String, Vec<ReplicaRecord>> = HashMap::new();
        for row in rows {
            let record = row.into_record(&self.path)?;
            by_job
                .entry(record.job_uid.clone())
                .or_default()
                .push(record);
        }
        for replicas in by_job.values_mut() {
            replicas.sort_by(|a, b| (&a.replica_type, a.index).cmp(&(&b.replica_type, b.index)));
        }
        Ok(by_job)
    }
}

/// A `replicas` row as stored, before its values are checked.
struct ReplicaRow {
    job_uid: String,
    replica_type: String,
    index: i64,
    state: String,
    pid: Option<i64>,
    pid_start_ticks: Option<i64>,
    port: Option<i64>,
    gpus: String,
    restarts: i64,
    exit_code: Option<i64>,
    reason: Option<String>,
    started_at: Option<String>,
    finished_at: Option<String>,
    log_path: Vec<u8>,
    pod_restarts: i64,
}

impl ReplicaRow {
    fn read(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(ReplicaRow {
            job_uid: row.get(0)?,
            replica_type: row.get(1)?,
            index: row.get(2)?,
            state: row.get(3)?,
            pid: row.get(4)?,
            pid_start_ticks: row.get(5)?,
            port: row.get(6)?,
            gpus: row.get(7)?,
            restarts: row.get(8)?,
            exit_code: row.get(9)?,
            reason: row.get(10)?,
            started_at: row.get(11)?,
            finished_at: row.get(12)?,
            log_path: row.get(13)?,
            pod_restarts: row.get(14)?,
        })
    }

    fn into_record(self, path: &Path) -> Result<ReplicaRecord, StoreError> {
        let slot = format!(
            "replica {}-{} of job {}",
            self.replica_type, self.index, self.job_uid
        );
        let bad = |field: &str| {
            let what = format!("{field} of {slot}");
            move |detail: String| corrupt(path, what, detail)
        };
        Ok(ReplicaRecord {
            index: narrow(self.index, "index").map_err(bad("index"))?,
            state: self
                .state
                .parse()
                .map_err(|error: super::UnknownReplicaState| bad("state")(error.to_string()))?,
            pid: parse_identity(self.pid, self.pid_start_ticks).map_err(bad("pid"))?,
            port: self
                .port
                .map(|port| narrow(port, "port"))
                .transpose()
                .map_err(bad("port"))?,
            gpus: decode(&self.gpus).map_err(bad("GPUs"))?,
            restarts: narrow(self.restarts, "restarts").map_err(bad("restarts"))?,
            pod_restarts: narrow(self.pod_restarts, "pod restarts").map_err(bad("pod restarts"))?,
            exit_code: self
                .exit_code
                .map(|code| narrow(code, "exit code"))
                .transpose()
                .map_err(bad("exit code"))?,
            started_at: parse_optional_timestamp(self.started_at.as_deref())
                .map_err(bad("start time"))?,
            finished_at: parse_optional_timestamp(self.finished_at.as_deref())
                .map_err(bad("finish time"))?,
            log_path: parse_path(&self.log_path),
            replica_type: ReplicaType::parse(&self.replica_type),
            reason: self.reason,
            job_uid: self.job_uid,
        })
    }
}

/// Writes one replica's row, inserting it or rewriting the slot's.
const UPSERT: &str = "
    INSERT INTO replicas (job_uid, replica_type, idx, state, pid, pid_start_ticks, port, gpus,
                          restarts, exit_code, reason, started_at, finished_at, log_path,
                          pod_restarts)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
    ON CONFLICT (job_uid, replica_type, idx) DO UPDATE SET
        state = excluded.state, pid = excluded.pid, pid_start_ticks = excluded.pid_start_ticks,
        port = excluded.port, gpus = excluded.gpus, restarts = excluded.restarts,
        exit_code = excluded.exit_code, reason = excluded.reason,
        started_at = excluded.started_at, finished_at = excluded.finished_at,
        log_path = excluded.log_path, pod_restarts = excluded.pod_restarts";

/// Inserts or replaces one replica's row.
pub(super) fn upsert(
    conn: &Connection,
    path: &Path,
    replica: &ReplicaRecord,
) -> Result<(), StoreError> {
    let slot = format!("{} of job {}", replica.name(), replica.job_uid);
    let gpus = encode(
        path,
        || format!("the GPUs of replica {slot}"),
        &replica.gpus,
    )?;
    let (pid, pid_start_ticks) = identity_columns(replica.pid);
    conn.prepare_cached(UPSERT)
        .and_then(|mut statement| {
            statement.execute(params![
                replica.job_uid,
                replica.replica_type.as_str(),
                replica.index,
                replica.state.as_str(),
                pid,
                pid_start_ticks,
                replica.port,
                gpus,
                replica.restarts,
                replica.exit_code,
                replica.reason,
                replica.started_at.map(timestamp_text),
                replica.finished_at.map(timestamp_text),
                path_bytes(&replica.log_path),
                replica.pod_restarts,
            ])
        })
        .map_err(sqlite_for_job(
            path,
            format!("record replica {slot}"),
            &replica.job_uid,
        ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixtures::{failed_replica, job_record, pending_replica, state_dir};

    #[test]
    fn upsert_replica_rewrites_the_same_slot() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let job = job_record("mnist", None);
        let _ = store.insert_job(&job).expect("insert");
        let first = pending_replica(&job.uid, ReplicaType::Worker, 0);
        store.upsert_replica(&first).expect("insert");

        let failed = failed_replica(&job.uid, ReplicaType::Worker, 0);
        store.upsert_replica(&failed).expect("update");

        assert_eq!(store.replicas(&job.uid).expect("read"), vec![failed]);
    }

    #[test]
    fn all_replicas_are_each_jobs_replicas_in_order() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let (first, second) = (job_record("first", None), job_record("second", None));
        for job in [&first, &second] {
            let _ = store.insert_job(job).expect("insert");
        }
        for (job, replica_type, index) in [
            (&first, ReplicaType::Worker, 1),
            (&second, ReplicaType::Worker, 0),
            (&first, ReplicaType::Chief, 0),
            (&first, ReplicaType::Worker, 0),
        ] {
            store
                .upsert_replica(&pending_replica(&job.uid, replica_type, index))
                .expect("insert");
        }

        let all = store.all_replicas().expect("read");
        assert_eq!(all.len(), 2);
        for job in [&first, &second] {
            assert_eq!(all[&job.uid], store.replicas(&job.uid).expect("read"));
        }
        assert_eq!(all[&first.uid].len(), 3);
    }

    #[test]
    fn replicas_are_ordered_by_replica_type_then_index() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let job = job_record("mnist", None);
        let _ = store.insert_job(&job).expect("insert");
        // Inserted in an order that is neither the type order nor alphabetical.
        for (replica_type, index) in [
            (ReplicaType::Worker, 10),
            (ReplicaType::PS, 0),
            (ReplicaType::Worker, 2),
            (ReplicaType::Chief, 0),
            (ReplicaType::Evaluator, 0),
        ] {
            store
                .upsert_replica(&pending_replica(&job.uid, replica_type, index))
                .expect("insert");
        }

        let slots: Vec<(ReplicaType, i32)> = store
            .replicas(&job.uid)
            .expect("read")
            .into_iter()
            .map(|replica| (replica.replica_type, replica.index))
            .collect();

        assert_eq!(
            slots,
            [
                (ReplicaType::Chief, 0),
                (ReplicaType::PS, 0),
                (ReplicaType::Worker, 2),
                (ReplicaType::Worker, 10),
                (ReplicaType::Evaluator, 0),
            ]
        );
    }

    #[test]
    fn a_replica_write_builds_no_temporary_table() {
        // SQLite checks `IN` with more than two values through a temporary table: schema
        // version 3's check of the state had every replica write build one and drop it.
        let temp = state_dir();
        let store = Store::open(temp.path()).expect("open");
        let opcodes: Vec<String> = store
            .conn
            .prepare(&format!("EXPLAIN {UPSERT}"))
            .and_then(|mut statement| {
                let unbound =
                    std::iter::repeat_n(rusqlite::types::Null, statement.parameter_count());
                statement
                    .query_map(rusqlite::params_from_iter(unbound), |row| row.get(1))?
                    .collect::<Result<_, _>>()
            })
            .expect("explain the write");
        assert!(opcodes.iter().any(|op| op == "OpenWrite"), "{opcodes:?}");
        assert!(
            !opcodes.iter().any(|op| op == "OpenEphemeral"),
            "{opcodes:?}"
        );
    }

    #[test]
    fn the_schema_refuses_a_state_it_does_not_know() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let job = job_record("mnist", None);
        let _ = store.insert_job(&job).expect("insert");
        for state in ["Pending", "Running", "Succeeded", "Failed", "Stopped"] {
            store
                .conn
                .execute(
                    "INSERT INTO replicas (job_uid, replica_type, idx, state, log_path)
                     VALUES (?1, 'Worker', 0, ?2, x'')
                     ON CONFLICT DO UPDATE SET state = excluded.state",
                    params![job.uid, state],
                )
                .unwrap_or_else(|error| panic!("{state}: {error}"));
        }
        let error = store
            .conn
            .execute(
                "UPDATE replicas SET state = 'Crashed' WHERE job_uid = ?1",
                [&job.uid],
            )
            .expect_err("an unknown state is refused");
        assert!(
            error.to_string().starts_with("CHECK constraint failed"),
            "{error}"
        );
    }

    #[test]
    fn log_path_need_not_be_utf8() {
        use std::os::unix::ffi::OsStrExt;

        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let job = job_record("mnist", None);
        let _ = store.insert_job(&job).expect("insert");
        let replica = ReplicaRecord {
            log_path: std::ffi::OsStr::from_bytes(b"/state/\xff.log").into(),
            ..pending_replica(&job.uid, ReplicaType::Worker, 0)
        };
        store.upsert_replica(&replica).expect("insert");

        assert_eq!(store.replicas(&job.uid).expect("read"), vec![replica]);
    }
}
