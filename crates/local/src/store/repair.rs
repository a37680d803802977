//! Repair of a damaged state database: what can still be read is copied into a new database, and
//! the damaged file is kept beside it for a post-mortem.
//!
//! A damaged page (a disk's bad sector, a file copied while written, a truncated write) makes
//! every query that walks through it fail with "database disk image is malformed". Each table is
//! read from its start until the damage, then from its end backwards until the damage again, so
//! only the rows held in damaged pages are lost; rows whose job is lost go with it (their
//! foreign keys), so that what is kept is consistent. The new database has the current schema
//! and the same version: a database of another version is refused, to be opened first by the
//! trainctl that wrote it.

use std::path::{Path, PathBuf};

use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags, params_from_iter};

use super::error::StoreError;
use super::schema::{self, SCHEMA_VERSION};
use super::{DATABASE_FILE, Store, move_database, remove_database};

/// What [`check`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// `PRAGMA integrity_check` says `ok`.
    Sound,
    /// It found problems: the first ones, as SQLite words them.
    Damaged(Vec<String>),
}

/// What [`repair`] kept of each table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repaired {
    /// The problems the damaged database had (its first ones).
    pub problems: Vec<String>,
    /// Each table with the rows kept, and whether reading it met damage.
    pub tables: Vec<(String, usize, bool)>,
    /// Rows dropped because what they belonged to was lost (a job's replicas and events).
    pub orphans: usize,
    /// Where the damaged database was moved.
    pub damaged: PathBuf,
}

/// The most problems kept from `PRAGMA integrity_check`.
const PROBLEMS: usize = 10;

/// How thoroughly [`check`] looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Thoroughness {
    /// `PRAGMA quick_check`: every page read, without matching the indexes to their tables
    /// (what a server does at its start).
    Quick,
    /// `PRAGMA integrity_check`: everything.
    Whole,
}

/// Checks the state database of `state_dir`, reading it only. A missing database is sound (it
/// is made when first opened).
pub fn check(state_dir: &Path, how: Thoroughness) -> Result<Health, StoreError> {
    let path = state_dir.join(DATABASE_FILE);
    if !path.exists() {
        return Ok(Health::Sound);
    }
    let conn = open_damaged(&path)?;
    Ok(integrity(&conn, how))
}

/// The first problems the check reports, or its error.
fn integrity(conn: &Connection, how: Thoroughness) -> Health {
    let pragma = match how {
        Thoroughness::Quick => "quick_check",
        Thoroughness::Whole => "integrity_check",
    };
    let problems = conn
        .prepare(&format!("PRAGMA {pragma}({PROBLEMS})"))
        .and_then(|mut statement| {
            statement
                .query_map([], |row| row.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<String>>>()
        })
        .unwrap_or_else(|error| vec![error.to_string()]);
    if problems == ["ok"] {
        Health::Sound
    } else {
        Health::Damaged(problems)
    }
}

/// Opens the database at `path` to read it only.
fn open_damaged(path: &Path) -> Result<Connection, StoreError> {
    if !path.exists() {
        return Err(StoreError::File {
            path: path.to_owned(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        });
    }
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(|source| {
        StoreError::Open {
            path: path.to_owned(),
            source,
        }
    })
}

/// Copies what can be read of the damaged state database of `state_dir` into a new one, which
/// takes its place; the damaged file (and its `-wal`) is kept as `trainctl.db.damaged-<time>`.
/// `None` when the database is sound. No server or run may use the database meanwhile.
pub fn repair(state_dir: &Path, now: jiff::Timestamp) -> Result<Option<Repaired>, StoreError> {
    let path = state_dir.join(DATABASE_FILE);
    let damaged = open_damaged(&path)?;
    let Health::Damaged(problems) = integrity(&damaged, Thoroughness::Whole) else {
        return Ok(None);
    };
    let sqlite = |operation: &str| {
        let operation = operation.to_owned();
        let path = path.clone();
        move |source| StoreError::Sqlite {
            path,
            operation,
            source,
        }
    };
    // Without its first page (the header and the schema), nothing of the file can be read.
    let version = schema::user_version(&damaged).map_err(|error| StoreError::Corrupt {
        path: path.clone(),
        what: "first page (its header and schema)".to_owned(),
        detail: format!(
            "{error}: nothing of it can be read without that page; restore a backup, or move it \
             aside to start afresh (mv {path} {path}.damaged, with its -wal and -shm files)",
            path = path.display()
        ),
    })?;
    if version != SCHEMA_VERSION {
        return Err(StoreError::Corrupt {
            path: path.clone(),
            what: "schema version".to_owned(),
            detail: format!(
                "{version}, where this trainctl repairs version {SCHEMA_VERSION} only: repair it \
                 with the trainctl that wrote it"
            ),
        });
    }
    let fresh_path = state_dir.join(format!("{DATABASE_FILE}.repairing"));
    remove_database(&fresh_path);
    let mut fresh = Connection::open(&fresh_path).map_err(|source| StoreError::Open {
        path: fresh_path.clone(),
        source,
    })?;
    schema::migrate(&mut fresh, &fresh_path)?;
    let tables = tables(&fresh).map_err(sqlite("list the tables"))?;
    let mut kept = Vec::new();
    for table in &tables {
        let (rows, met_damage) = copy_table(&damaged, &fresh, table);
        kept.push((table.clone(), rows, met_damage));
    }
    let orphans = drop_orphans(&fresh, &tables).map_err(sqlite("drop rows whose job was lost"))?;
    drop(fresh);
    drop(damaged);
    let kept_as = state_dir.join(format!("{DATABASE_FILE}.damaged-{}", now.as_second()));
    move_database(&path, &kept_as).map_err(|source| StoreError::File {
        path: path.clone(),
        source,
    })?;
    move_database(&fresh_path, &path).map_err(|source| StoreError::File {
        path: path.clone(),
        source,
    })?;
    // The new database opens as any other (WAL, checks).
    Store::open(state_dir)?;
    Ok(Some(Repaired {
        problems,
        tables: kept,
        orphans,
        damaged: kept_as,
    }))
}

/// The tables of the current schema, parents first (as they were created).
fn tables(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut statement = conn.prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
         ORDER BY rowid",
    )?;
    statement
        .query_map([], |row| row.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()
}

/// Copies the rows of `table` that can be read: from its start, then from its end backwards,
/// each until a read fails. The rows copied, and whether a read failed.
fn copy_table(damaged: &Connection, fresh: &Connection, table: &str) -> (usize, bool) {
    let order = order_key(fresh, table);
    let mut copied = 0;
    let mut met_damage = false;
    for direction in ["ASC", "DESC"] {
        let read = format!("SELECT * FROM \"{table}\" ORDER BY {order} {direction}");
        match copy_rows(damaged, fresh, table, &read) {
            Ok(rows) => {
                copied += rows;
                // Read whole from the start: nothing is left for the other direction.
                if direction == "ASC" {
                    break;
                }
            }
            Err(rows) => {
                copied += rows;
                met_damage = true;
            }
        }
    }
    (copied, met_damage)
}

/// The key `table` is stored in order of: its rowid, or its primary key's columns.
fn order_key(conn: &Connection, table: &str) -> String {
    let without_rowid = conn
        .query_row(
            "SELECT sql LIKE '%WITHOUT ROWID%' FROM sqlite_schema WHERE name = ?1",
            [table],
            |row| row.get::<_, bool>(0),
        )
        .unwrap_or(false);
    if !without_rowid {
        return "rowid".to_owned();
    }
    let mut key: Vec<(i64, String)> = conn
        .prepare(&format!("PRAGMA table_info(\"{table}\")"))
        .and_then(|mut statement| {
            statement
                .query_map([], |row| Ok((row.get::<_, i64>("pk")?, row.get("name")?)))?
                .collect()
        })
        .unwrap_or_default();
    key.retain(|(position, _)| *position > 0);
    key.sort();
    let columns: Vec<String> = key
        .into_iter()
        .map(|(_, name)| format!("\"{name}\""))
        .collect();
    if columns.is_empty() {
        "1".to_owned()
    } else {
        columns.join(", ")
    }
}

/// Copies the rows `read` gives into `table` of `fresh` (a row already there is kept) until a
/// read fails: the rows newly copied, `Err` when a read failed.
fn copy_rows(
    damaged: &Connection,
    fresh: &Connection,
    table: &str,
    read: &str,
) -> Result<usize, usize> {
    let mut copied = 0;
    let Ok(mut statement) = damaged.prepare(read) else {
        return Err(0);
    };
    let columns = statement.column_count();
    let placeholders = vec!["?"; columns].join(", ");
    let insert = format!("INSERT OR IGNORE INTO \"{table}\" VALUES ({placeholders})");
    let Ok(mut rows) = statement.query([]) else {
        return Err(0);
    };
    loop {
        let row = match rows.next() {
            Ok(Some(row)) => row,
            Ok(None) => return Ok(copied),
            Err(_) => return Err(copied),
        };
        let values: rusqlite::Result<Vec<Value>> = (0..columns).map(|at| row.get(at)).collect();
        let Ok(values) = values else {
            return Err(copied);
        };
        // A row the new schema refuses (a damaged value) is left out.
        if let Ok(inserted) = fresh.execute(&insert, params_from_iter(values)) {
            copied += inserted;
        }
    }
}

/// Deletes the rows whose foreign key names a row that was lost; how many.
fn drop_orphans(conn: &Connection, tables: &[String]) -> rusqlite::Result<usize> {
    let mut dropped = 0;
    for table in tables {
        let keys: Vec<(String, String, String)> = conn
            .prepare(&format!("PRAGMA foreign_key_list(\"{table}\")"))?
            .query_map([], |row| {
                Ok((row.get("table")?, row.get("from")?, row.get("to")?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        for (parent, from, to) in keys {
            dropped += conn.execute(
                &format!(
                    "DELETE FROM \"{table}\" WHERE \"{from}\" NOT IN (SELECT \"{to}\" FROM \"{parent}\")"
                ),
                [],
            )?;
        }
    }
    Ok(dropped)
}

#[cfg(test)]
mod tests {
    use std::io::{Seek as _, SeekFrom, Write as _};

    use super::*;
    use crate::store::fixtures;

    /// A state directory holding `jobs` jobs, checkpointed into the database file.
    fn with_jobs(jobs: usize) -> (tempfile::TempDir, Vec<String>) {
        let temp = fixtures::state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let mut uids = Vec::new();
        for at in 0..jobs {
            let record = fixtures::job_record(&format!("job-{at}"), None);
            uids.push(record.uid.clone());
            let _ = store.insert_job(&record).expect("insert");
        }
        store
            .conn
            .pragma_update(None, "wal_checkpoint", "TRUNCATE")
            .expect("checkpoint");
        drop(store);
        (temp, uids)
    }

    /// Overwrites page `page` (1 is the first) of the database with garbage.
    fn damage_page(state_dir: &Path, page: u64) {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(state_dir.join(DATABASE_FILE))
            .expect("open the file");
        file.seek(SeekFrom::Start((page - 1) * 4096)).expect("seek");
        file.write_all(&[0xA5; 4096]).expect("write garbage");
    }

    #[test]
    fn a_sound_database_is_left_as_it_is() {
        let (temp, _) = with_jobs(3);
        assert_eq!(
            check(temp.path(), Thoroughness::Whole).expect("checks"),
            Health::Sound
        );
        assert_eq!(
            repair(temp.path(), jiff::Timestamp::UNIX_EPOCH).expect("repairs"),
            None
        );
    }

    #[test]
    fn a_lost_first_page_is_said_to_be_past_repair_and_nothing_is_moved() {
        let (temp, _) = with_jobs(3);
        damage_page(temp.path(), 1);
        let error = repair(temp.path(), jiff::Timestamp::UNIX_EPOCH).expect_err("past repair");
        let path = temp.path().join(DATABASE_FILE);
        assert!(
            error.to_string().starts_with(&format!(
                "the state database {} holds an unreadable first page (its header and schema): ",
                path.display()
            )) && error.to_string().ends_with(&format!(
                "restore a backup, or move it aside to start afresh (mv {p} {p}.damaged, with its \
                 -wal and -shm files)",
                p = path.display()
            )),
            "{error}"
        );
        assert!(path.exists());
    }

    #[test]
    fn a_damaged_page_loses_only_its_rows_and_the_damaged_file_is_kept() {
        let (temp, uids) = with_jobs(300);
        let pages = std::fs::metadata(temp.path().join(DATABASE_FILE))
            .expect("size")
            .len()
            / 4096;
        assert!(pages > 40, "{pages} pages");
        damage_page(temp.path(), pages / 2);
        let Health::Damaged(problems) = check(temp.path(), Thoroughness::Quick).expect("checks")
        else {
            panic!("the damage is not seen");
        };
        assert!(!problems.is_empty());

        let repaired = repair(temp.path(), jiff::Timestamp::UNIX_EPOCH)
            .expect("repairs")
            .expect("it was damaged");
        assert_eq!(
            repaired.damaged,
            temp.path().join(format!("{DATABASE_FILE}.damaged-0"))
        );
        assert!(repaired.damaged.exists());
        assert_eq!(
            check(temp.path(), Thoroughness::Whole).expect("checks"),
            Health::Sound
        );
        let store = Store::open(temp.path()).expect("the new database opens");
        let kept = uids
            .iter()
            .filter(|uid| store.job_by_uid(uid).ok().flatten().is_some())
            .count();
        let (_, jobs_kept, met_damage) = repaired
            .tables
            .iter()
            .find(|(name, _, _)| name == "jobs")
            .expect("the jobs table");
        assert_eq!(kept, *jobs_kept);
        assert!(met_damage, "{repaired:?}");
        // The page held a few jobs (measured: 4 of 300); every other one is kept.
        assert!(
            (280..300).contains(&kept),
            "{kept} of 300 kept: {repaired:?}"
        );
    }
}
