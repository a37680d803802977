//! Where a state directory keeps what is not in its database, known without opening it.

use std::path::{Path, PathBuf};

/// The paths of a state directory's logs, volumes and event files.
#[derive(Debug, Clone, Copy)]
pub struct Layout<'a>(pub &'a Path);

impl Layout<'_> {
    /// The directory of a job's log files, `<state dir>/logs/<uid>` (created by the runtime, not
    /// here).
    #[must_use]
    pub fn logs_dir(self, job_uid: &str) -> PathBuf {
        self.0.join("logs").join(job_uid)
    }

    /// The directory of the claims bound to no directory of the user's,
    /// `<state dir>/volumes/<namespace>/<claim>` (made on first use, kept until deleted).
    #[must_use]
    pub fn claims_dir(self) -> PathBuf {
        self.0.join("volumes")
    }

    /// The directory of a job's ConfigMap, Secret and emptyDir volumes,
    /// `<state dir>/pods/<uid>/<replica>/<volume>`, removed with the job.
    #[must_use]
    pub fn pods_dir(self, job_uid: &str) -> PathBuf {
        self.0.join("pods").join(job_uid)
    }

    /// The directory offered to a job's replicas for their TensorBoard event files,
    /// `<state dir>/tensorboard/<uid>` (its path in [`TENSORBOARD_DIR_ENV`]); kept with the job,
    /// removed when it is deleted or replaced.
    ///
    /// [`TENSORBOARD_DIR_ENV`]: crate::runner::TENSORBOARD_DIR_ENV
    #[must_use]
    pub fn tensorboard_dir(self, job_uid: &str) -> PathBuf {
        self.0.join("tensorboard").join(job_uid)
    }

    /// The empty directory where a replica's mount namespace puts its new root together.
    #[must_use]
    pub fn staging_dir(self) -> PathBuf {
        self.0.join("mnt")
    }
}
