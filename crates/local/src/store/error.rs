//! [`StoreError`]: every failure of the state database, naming the file and the operation.

use std::path::PathBuf;

use trainctl_api::JobKind;

use crate::state_dir::StateDirError;

/// A failure of the state database.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The state directory cannot be used.
    #[error(transparent)]
    StateDir(#[from] StateDirError),
    /// The database file could not be created, or inspected.
    #[error("cannot open the state database {path}: {source}")]
    File {
        /// The database file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The database file is empty in a state directory that has been used: it was truncated.
    #[error(
        "the state database {path} is empty (0 bytes), yet its directory has been used (it holds \
         {found}): the database was probably truncated (a full disk, an interrupted copy), and \
         opening it would start an empty history and orphan the jobs' logs; restore it from a \
         backup, or, to start afresh, move it aside with its -wal and -shm files (mv {path} \
         {path}.empty)"
    )]
    Empty {
        /// The database file.
        path: PathBuf,
        /// An entry of the state directory besides the database's files.
        found: String,
    },
    /// The database could not be opened or configured.
    #[error(
        "cannot open the state database {path}: {source}{}",
        damaged_hint(source)
    )]
    Open {
        /// The database file.
        path: PathBuf,
        /// Why.
        source: rusqlite::Error,
    },
    /// The database was written by a newer trainctl.
    #[error(
        "the state database {path} has schema version {found}, but this trainctl knows versions up \
         to {known}: a newer trainctl wrote it; use that trainctl, or another --state-dir"
    )]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// The database's `user_version`.
        found: u32,
        /// The newest version this binary knows.
        known: u32,
    },
    /// A schema migration failed (and was rolled back).
    #[error("cannot migrate the state database {path} to schema version {version}: {source}")]
    Migrate {
        /// The database file.
        path: PathBuf,
        /// The version being applied.
        version: u32,
        /// Why.
        source: rusqlite::Error,
    },
    /// A query or a write failed (a write is rolled back as a whole).
    #[error(
        "cannot {operation} in the state database {path}: {source}{}",
        damaged_hint(source)
    )]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What was being done, e.g. `record job abc`.
        operation: String,
        /// Why.
        source: rusqlite::Error,
    },
    /// A value could not be encoded as JSON for the database.
    #[error("cannot encode {what} for the state database {path}: {source}")]
    Encode {
        /// The database file.
        path: PathBuf,
        /// What was being encoded, e.g. `the hold of job abc`.
        what: String,
        /// Why.
        source: serde_json::Error,
    },
    /// A stored value cannot be read back: the database was edited by hand or is damaged.
    #[error("the state database {path} holds an unreadable {what}: {detail}")]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// Which value, e.g. `object of job abc`.
        what: String,
        /// What is wrong with it.
        detail: String,
    },
    /// No job has this uid.
    #[error("the state database {path} has no job with uid {uid}")]
    NoSuchJob {
        /// The database file.
        path: PathBuf,
        /// The uid asked for.
        uid: String,
    },
    /// An unfinished job of the same namespace, kind and name is run by a live trainctl.
    #[error("{} \"{namespace}/{name}\" is already running (trainctl pid {owner_pid})", kind.singular())]
    JobExists {
        /// The job's namespace.
        namespace: String,
        /// The job's kind.
        kind: JobKind,
        /// The job's name.
        name: String,
        /// The pid of the trainctl process running it.
        owner_pid: i32,
    },
}

/// What to do about a damaged database, after SQLite's words for it ("database disk image is
/// malformed", "file is not a database"); nothing for another error.
fn damaged_hint(error: &rusqlite::Error) -> &'static str {
    match error.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase) => {
            "; the database is damaged: `trainctl repair` checks it and keeps what can still be \
             read (stop the server first)"
        }
        _ => "",
    }
}
