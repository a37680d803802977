//! Space kept for the outcome of jobs: a file of [`RESERVE_SIZE`] bytes beside the database,
//! [`RESERVE_FILE`]. A replica that fills the disk must not cost its job its outcome: a run whose
//! final write finds the disk full deletes the file, which makes room for that write (a few
//! pages of the database), and keeps the space again once the disk has it
//! ([`Store::keep_reserve`], also done as each job is recorded).
//!
//! The file holds bytes that do not compress ([`crate::state_dir::keep_reserve`]).

use std::io;
use std::path::PathBuf;

use super::{Store, StoreError};
use crate::state_dir::{keep_reserve, release_reserve};

/// The file that keeps space for the outcome of jobs, in the state directory.
pub const RESERVE_FILE: &str = "trainctl.db.reserve";

/// How much space is kept: a final write takes a few pages (4 KiB each) per replica and event;
/// 1 MiB holds hundreds of them, and what the write-ahead log adds.
pub const RESERVE_SIZE: u64 = 1 << 20;

impl Store {
    /// The file that keeps space for the outcome of jobs.
    #[must_use]
    pub fn reserve_path(&self) -> PathBuf {
        self.state_dir.join(RESERVE_FILE)
    }

    /// Makes the reserve file hold [`RESERVE_SIZE`] bytes, writing what it lacks (mode 0600). On
    /// a full disk, what could be written stays kept.
    pub fn keep_reserve(&self) -> io::Result<()> {
        keep_reserve(&self.reserve_path(), RESERVE_SIZE)
    }

    /// Deletes the reserve file, giving its space to the write that needs it; whether there was
    /// one to delete.
    pub fn release_reserve(&self) -> io::Result<bool> {
        release_reserve(&self.reserve_path())
    }
}

impl StoreError {
    /// Whether a write failed because the disk was full (`SQLITE_FULL`): one that may succeed
    /// once space is freed.
    #[must_use]
    pub fn is_disk_full(&self) -> bool {
        matches!(
            self,
            StoreError::Sqlite { source, .. }
                if source.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull)
        )
    }
}

#[cfg(test)]
impl Store {
    /// Lets the database grow by no page more when `full` (else by as many as it likes): then a
    /// write that needs a new page fails as on a full disk.
    pub(crate) fn fill_up(&self, full: bool) {
        let pages: u32 = if full {
            self.conn
                .pragma_query_value(None, "page_count", |row| row.get(0))
                .expect("page_count")
        } else {
            u32::MAX - 1
        };
        self.conn
            .pragma_update(None, "max_page_count", pages)
            .expect("max_page_count");
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;
    use crate::store::fixtures::{event, job_record, state_dir};
    use crate::store::{JobChanges, ReplicaRecord};

    #[test]
    fn recording_a_job_keeps_the_reserve_which_is_released_then_kept_again() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let path = temp.path().join(RESERVE_FILE);
        assert!(!path.exists(), "made as a job is recorded");
        let _ = store
            .insert_job(&job_record("mnist", None))
            .expect("insert");
        let metadata = fs::metadata(&path).expect("the reserve");
        assert_eq!(
            (metadata.len(), metadata.permissions().mode() & 0o777),
            (RESERVE_SIZE, 0o600)
        );
        assert!(store.release_reserve().expect("release"));
        assert!(!path.exists());
        assert!(!store.release_reserve().expect("nothing to release"));
        // A reserve cut short (the disk was full) is completed.
        fs::write(&path, b"short").expect("write");
        store.keep_reserve().expect("keep");
        let kept = fs::read(&path).expect("read");
        assert_eq!(kept.len() as u64, RESERVE_SIZE);
        assert_eq!(&kept[..5], b"short");
    }

    #[test]
    fn a_write_refused_for_space_is_a_full_disk_and_others_are_not() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let record = job_record("mnist", None);
        let _ = store.insert_job(&record).expect("insert");
        // The database may not grow: what needs a new page is refused as SQLITE_FULL.
        store.fill_up(true);
        let mut big = event("Big");
        big.message = "x".repeat(64 * 1024);
        let changes = JobChanges {
            events: std::slice::from_ref(&big),
            ..JobChanges::default()
        };
        let full = store.save(&record.uid, &changes).expect_err("no page left");
        assert!(full.is_disk_full(), "{full:?}");
        let replicas: [ReplicaRecord; 0] = [];
        let missing = store
            .save(
                "no-such-job",
                &JobChanges {
                    replicas: &replicas,
                    release: true,
                    ..JobChanges::default()
                },
            )
            .expect_err("an unknown job");
        assert!(!missing.is_disk_full(), "{missing:?}");
    }
}
