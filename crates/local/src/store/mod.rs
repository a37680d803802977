//! The state database of the local runtime: jobs and their status, replicas, events, and the
//! resources each running job holds (docs/architecture.md §4.1); for a server, the quotas,
//! ConfigMaps and Secrets it was given, and the claims' bindings.
//!
//! One `SQLite` file, `<state dir>/trainctl.db`, in WAL mode, shared by every trainctl process on
//! the machine: `trainctl run` records its job there so that `get` and `logs` still show it after
//! `run` has exited, and concurrent runs share the node's GPUs through [`Store::reserve`]. Every
//! write is one transaction (a runner's pass, [`Store::save`], is one too); a write that needs to read first takes the write lock up front
//! (`BEGIN IMMEDIATE`), so two processes never decide on the same stale view.
//!
//! A job's owner is the [`ProcessIdentity`](crate::process::identity::ProcessIdentity) of the
//! trainctl process running it. When that process is gone (crashed, killed), the job no longer
//! holds resources and a new run of the same name may replace it: nothing leaks, whatever way
//! trainctl ended.

mod changes;
mod claims;
mod codec;
mod config_objects;
mod error;
mod events;
mod holds;
mod jobs;
mod layout;
pub mod queries;
mod quotas;
mod records;
pub mod repair;
mod replicas;
pub mod schema;

#[cfg(test)]
pub(crate) mod fixtures;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use rusqlite::config::DbConfig;

pub use changes::{JobChanges, JobUpdate};
pub use claims::ClaimBinding;
pub use config_objects::ConfigObjectRecord;
pub use error::StoreError;
pub use events::COMBINED;
pub use jobs::Replaced;
pub use layout::Layout;
pub use quotas::QuotaRecord;
pub use records::{
    EventRecord, JobRecord, NEXT_START, ReplicaRecord, ReplicaState, UnknownReplicaState,
    replicas_reason,
};

/// The database file in the state directory.
pub const DATABASE_FILE: &str = "trainctl.db";

/// The write-ahead log is copied into the database once it holds this many pages (256 KiB).
///
/// Closing does not checkpoint (`SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`): a short-lived `trainctl run`
/// would otherwise pay two `fsync`s to checkpoint and two more to recreate the log next time. The
/// next process to open the database reads what the log holds to rebuild its index, so the log is
/// kept short.
const WAL_CHECKPOINT_PAGES: u32 = 64;

/// How long a write waits for another process's write to finish before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// An open state database.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    state_dir: PathBuf,
    path: PathBuf,
}

impl Store {
    /// Opens (creating when missing) the database in `state_dir`, and brings its schema up to
    /// date. The directory goes through [`crate::state_dir::prepare`] first (created 0700, or
    /// restricted to 0700, and refused when another user's); the database and its `-wal` and
    /// `-shm` files are 0600.
    pub fn open(state_dir: &Path) -> Result<Store, StoreError> {
        if let Some(restricted) = crate::state_dir::prepare(state_dir)? {
            tracing::warn!("{restricted}");
        }
        let path = state_dir.join(DATABASE_FILE);
        prepare_file(state_dir, &path)?;
        let open_error = |source| StoreError::Open {
            path: path.clone(),
            source,
        };
        let mut conn = Connection::open(&path).map_err(open_error)?;
        // The busy timeout first: switching to WAL needs a lock another process may hold.
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_error)?;
        enable_wal(&conn)
            .and_then(|()| conn.pragma_update(None, "synchronous", "NORMAL"))
            .and_then(|()| conn.pragma_update(None, "foreign_keys", "ON"))
            .and_then(|()| conn.pragma_update(None, "wal_autocheckpoint", WAL_CHECKPOINT_PAGES))
            .and_then(|()| conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true))
            .map_err(open_error)?;
        schema::migrate(&mut conn, &path)?;
        Ok(Store {
            conn,
            state_dir: state_dir.to_owned(),
            path,
        })
    }

    /// The database file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the state directory keeps what is not in this database.
    #[must_use]
    pub fn layout(&self) -> Layout<'_> {
        Layout(&self.state_dir)
    }

    /// [`Layout::logs_dir`].
    #[must_use]
    pub fn logs_dir(&self, job_uid: &str) -> PathBuf {
        self.layout().logs_dir(job_uid)
    }

    /// [`Layout::claims_dir`].
    #[must_use]
    pub fn claims_dir(&self) -> PathBuf {
        self.layout().claims_dir()
    }

    /// [`Layout::pods_dir`].
    #[must_use]
    pub fn pods_dir(&self, job_uid: &str) -> PathBuf {
        self.layout().pods_dir(job_uid)
    }

    /// [`Layout::tensorboard_dir`].
    #[must_use]
    pub fn tensorboard_dir(&self, job_uid: &str) -> PathBuf {
        self.layout().tensorboard_dir(job_uid)
    }

    /// [`Layout::staging_dir`].
    #[must_use]
    pub fn staging_dir(&self) -> PathBuf {
        self.layout().staging_dir()
    }
}

/// Makes the database file private before `SQLite` opens it: a missing one is created here with
/// mode 0600 (`SQLite` would create it 0644 less the umask, and gives its `-wal` and `-shm` files
/// the database file's mode); an existing one that others may read is restricted, with those
/// two. An empty one is refused unless its directory holds nothing else: a new directory's
/// database is empty until its first open is done, a used directory's was truncated.
fn prepare_file(state_dir: &Path, path: &Path) -> Result<(), StoreError> {
    let file_error = |source| StoreError::File {
        path: path.to_owned(),
        source,
    };
    match crate::state_dir::create_private(path) {
        Ok(_) => return Ok(()),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(file_error(error)),
    }
    let metadata = fs::metadata(path).map_err(file_error)?;
    if !metadata.is_file() {
        // `SQLite` says what is wrong with it.
        return Ok(());
    }
    for suffix in ["", "-wal", "-shm"] {
        crate::state_dir::restrict_file(&database_file(path, suffix)).map_err(file_error)?;
    }
    if metadata.len() == 0
        && let Some(found) = other_entry(state_dir).map_err(file_error)?
    {
        return Err(StoreError::Empty {
            path: path.to_owned(),
            found,
        });
    }
    Ok(())
}

/// The suffixes of a database's files: the database itself, then `SQLite`'s files beside it.
const DATABASE_SUFFIXES: [&str; 4] = ["", "-wal", "-shm", "-journal"];

/// `SQLite`'s file `<database><suffix>` (`-wal`, `-shm`, `-journal`).
fn database_file(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Moves the database `from` to `to` with `SQLite`'s files beside it, the database last.
fn move_database(from: &Path, to: &Path) -> io::Result<()> {
    for suffix in DATABASE_SUFFIXES.iter().rev() {
        let side = database_file(from, suffix);
        if suffix.is_empty() || side.exists() {
            fs::rename(side, database_file(to, suffix))?;
        }
    }
    Ok(())
}

/// Removes the database `path` and `SQLite`'s files beside it, those there are.
fn remove_database(path: &Path) {
    for suffix in DATABASE_SUFFIXES {
        let _ = fs::remove_file(database_file(path, suffix));
    }
}

/// An entry of `state_dir` other than the database's own files, if any.
fn other_entry(state_dir: &Path) -> io::Result<Option<String>> {
    let own = DATABASE_SUFFIXES.map(|suffix| format!("{DATABASE_FILE}{suffix}"));
    for entry in fs::read_dir(state_dir)? {
        let name = entry?.file_name();
        if !own.iter().any(|own| name == own.as_str()) {
            return Ok(Some(name.to_string_lossy().into_owned()));
        }
    }
    Ok(None)
}

/// Switches the database to WAL mode (a no-op once it is: the mode is kept in the file).
///
/// The switch needs an exclusive lock, taken from a shared one. When two processes open a new
/// database at once, both hold the shared lock and `SQLite` answers one of them `SQLITE_BUSY`
/// at once, without calling the busy handler (waiting could deadlock); that one retries, once
/// the other is done, until [`BUSY_TIMEOUT`].
fn enable_wal(conn: &Connection) -> rusqlite::Result<()> {
    const RETRY_AFTER: Duration = Duration::from_millis(2);
    let deadline = Instant::now() + BUSY_TIMEOUT;
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(rusqlite::Error::SqliteFailure(error, _))
                if error.code == rusqlite::ErrorCode::DatabaseBusy && Instant::now() < deadline =>
            {
                std::thread::sleep(RETRY_AFTER);
            }
            done => return done,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::store::fixtures::{self, state_dir};

    #[test]
    fn open_creates_a_private_state_dir_and_migrates_an_empty_database() {
        let temp = state_dir();
        let dir = temp.path().join("nested").join("state");
        let store = Store::open(&dir).expect("open");
        let mode = std::fs::metadata(&dir).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(store.path(), dir.join("trainctl.db"));
        assert_eq!(
            schema::user_version(&store.conn).expect("user_version"),
            schema::SCHEMA_VERSION
        );
        let journal: String = store
            .conn
            .pragma_query_value(None, "journal_mode", |row| row.get(0))
            .expect("journal_mode");
        assert_eq!(journal, "wal");
        let foreign_keys: bool = store
            .conn
            .pragma_query_value(None, "foreign_keys", |row| row.get(0))
            .expect("foreign_keys");
        assert!(foreign_keys);
    }

    #[test]
    fn reopening_a_migrated_database_keeps_its_data() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let record = crate::store::fixtures::job_record("mnist", None);
        let _ = store.insert_job(&record).expect("insert");
        drop(store);
        let store = Store::open(temp.path()).expect("reopen");
        assert_eq!(
            schema::user_version(&store.conn).expect("user_version"),
            schema::SCHEMA_VERSION
        );
        assert_eq!(store.job_by_uid(&record.uid).expect("read"), Some(record));
    }

    #[test]
    fn a_version_3_database_is_migrated_keeping_its_jobs_and_replicas() {
        let temp = state_dir();
        let path = temp.path().join(DATABASE_FILE);
        let conn = Connection::open(&path).expect("open");
        for migration in &schema::MIGRATIONS[..3] {
            conn.execute_batch(migration).expect("migrate to version 3");
        }
        conn.pragma_update(None, "user_version", 3)
            .expect("set user_version");
        let mut old = Store {
            conn,
            state_dir: temp.path().to_owned(),
            path,
        };
        let record = fixtures::job_record("mnist", None);
        let _ = old.insert_job(&record).expect("insert");
        let replicas = [
            fixtures::failed_replica(&record.uid, trainctl_api::ReplicaType::Worker, 0),
            fixtures::pending_replica(&record.uid, trainctl_api::ReplicaType::Worker, 1),
        ];
        for replica in &replicas {
            old.upsert_replica(replica).expect("write a replica");
        }
        drop(old);

        let store = Store::open(temp.path()).expect("open and migrate");
        assert_eq!(
            schema::user_version(&store.conn).expect("user_version"),
            schema::SCHEMA_VERSION
        );
        assert_eq!(
            store.job_by_uid(&record.uid).expect("read"),
            Some(record.clone())
        );
        assert_eq!(store.replicas(&record.uid).expect("read"), replicas);
    }

    #[test]
    fn opening_an_up_to_date_database_does_not_wait_for_a_writer() {
        let temp = state_dir();
        drop(Store::open(temp.path()).expect("create"));
        let writer = Connection::open(temp.path().join(DATABASE_FILE)).expect("open");
        writer
            .execute_batch("BEGIN IMMEDIATE")
            .expect("take the write lock");
        // A migration check under the write lock would wait for it, then fail as busy.
        let store = Store::open(temp.path()).expect("open while another process writes");
        assert_eq!(
            schema::user_version(&store.conn).expect("user_version"),
            schema::SCHEMA_VERSION
        );
        writer.execute_batch("ROLLBACK").expect("release");
    }

    #[test]
    fn concurrent_first_opens_all_succeed_and_migrate_once() {
        // One race in a few dozen used to lose the switch to WAL ("database is locked"): many
        // rounds, so that the test fails when the retry is gone.
        const ROUNDS: usize = 20;
        const OPENERS: usize = 8;
        for _ in 0..ROUNDS {
            let temp = state_dir();
            let start = std::sync::Barrier::new(OPENERS);
            std::thread::scope(|scope| {
                for _ in 0..OPENERS {
                    scope.spawn(|| {
                        start.wait();
                        Store::open(temp.path()).expect("open");
                    });
                }
            });
            let store = Store::open(temp.path()).expect("open");
            assert_eq!(
                schema::user_version(&store.conn).expect("user_version"),
                schema::SCHEMA_VERSION
            );
        }
    }

    #[test]
    fn database_from_a_newer_trainctl_is_refused() {
        let temp = state_dir();
        let store = Store::open(temp.path()).expect("open");
        let newer = schema::SCHEMA_VERSION + 1;
        store
            .conn
            .pragma_update(None, "user_version", newer)
            .expect("set user_version");
        drop(store);
        let error = Store::open(temp.path()).expect_err("a newer schema is refused");
        let path = temp.path().join("trainctl.db");
        assert!(
            matches!(&error, StoreError::TooNew { path: p, found, known }
                if *p == path && *found == newer && *known == newer - 1),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(
            message.contains(&format!("schema version {newer}")),
            "{message}"
        );
        assert!(
            message.contains(&format!("up to {}", newer - 1)),
            "{message}"
        );
    }

    #[test]
    fn unopenable_database_error_names_the_file() {
        let temp = state_dir();
        // A directory where the database file should be.
        std::fs::create_dir(temp.path().join("trainctl.db")).expect("mkdir");
        let error = Store::open(temp.path()).expect_err("cannot open a directory");
        let message = error.to_string();
        assert!(
            message.starts_with(&format!(
                "cannot open the state database {}: ",
                temp.path().join("trainctl.db").display()
            )),
            "{message}"
        );
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).expect("stat").permissions().mode() & 0o777
    }

    #[test]
    fn the_database_and_its_wal_and_shm_files_are_0600() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let _ = store
            .insert_job(&fixtures::job_record("mnist", None))
            .expect("insert");
        for name in ["trainctl.db", "trainctl.db-wal", "trainctl.db-shm"] {
            assert_eq!(mode(&temp.path().join(name)), 0o600, "{name}");
        }
    }

    #[test]
    fn a_database_others_may_read_is_restricted_with_its_wal_and_shm() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let _ = store
            .insert_job(&fixtures::job_record("mnist", None))
            .expect("insert");
        let names = ["trainctl.db", "trainctl.db-wal", "trainctl.db-shm"];
        for name in names {
            let path = temp.path().join(name);
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        }
        drop(Store::open(temp.path()).expect("reopen"));
        for name in names {
            assert_eq!(mode(&temp.path().join(name)), 0o600, "{name}");
        }
    }

    #[test]
    fn an_empty_database_in_a_used_state_dir_is_refused() {
        let temp = state_dir();
        let path = temp.path().join(DATABASE_FILE);
        std::fs::write(&path, "").expect("truncate");
        std::fs::create_dir(temp.path().join("logs")).expect("mkdir");
        let error = Store::open(temp.path()).expect_err("a truncated database is refused");
        assert!(
            matches!(&error, StoreError::Empty { path: p, found } if *p == path && found == "logs"),
            "{error:?}"
        );
        let path = path.display();
        assert_eq!(
            error.to_string(),
            format!(
                "the state database {path} is empty (0 bytes), yet its directory has been used \
                 (it holds logs): the database was probably truncated (a full disk, an \
                 interrupted copy), and opening it would start an empty history and orphan the \
                 jobs' logs; restore it from a backup, or, to start afresh, move it aside with its \
                 -wal and -shm files (mv {path} {path}.empty)"
            )
        );
        assert_eq!(
            std::fs::metadata(temp.path().join(DATABASE_FILE))
                .expect("stat")
                .len(),
            0,
            "the database is left as it was"
        );
    }

    #[test]
    fn an_empty_database_in_a_new_state_dir_is_opened() {
        // What a first open that died before writing anything leaves.
        let temp = state_dir();
        std::fs::write(temp.path().join(DATABASE_FILE), "").expect("create");
        std::fs::write(temp.path().join("trainctl.db-journal"), "").expect("create");
        let store = Store::open(temp.path()).expect("open");
        assert_eq!(
            schema::user_version(&store.conn).expect("user_version"),
            schema::SCHEMA_VERSION
        );
    }

    #[test]
    fn logs_dir_is_under_the_state_dir() {
        let temp = state_dir();
        let store = Store::open(temp.path()).expect("open");
        assert_eq!(store.logs_dir("abc"), temp.path().join("logs").join("abc"));
    }
}
