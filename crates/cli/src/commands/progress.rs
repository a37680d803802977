//! A local job's training progress, from the TensorBoard event files it writes: the latest step
//! and the last value of its main scalar (`loss`, Keras' `epoch_loss`...), for `get -o wide` and
//! `describe`.
//!
//! Where event files are looked for: the job's own directory, `TRAINCTL_TENSORBOARD_DIR`
//! (`<state dir>/tensorboard/<uid>`), then, in each claim the job mounts (in name order), the
//! directory named after the job (Keras' `log_dir=/logs/<job name>`): never a whole claim,
//! which may be a dataset or shared by other jobs. The first that has a scalar gives the
//! progress.

use std::path::PathBuf;

use trainctl_events::{Progress, Runs};
use trainctl_local::store::{JobRecord, Store, StoreError};

/// The progress of `record`'s job, when its event files have a scalar.
pub(super) fn of(store: &Store, record: &JobRecord) -> Result<Option<Progress>, StoreError> {
    let mut roots = vec![store.tensorboard_dir(&record.uid)];
    for backing in super::volumes::backings(store, &record.job)?.into_values() {
        let own: PathBuf = backing.path().join(&record.name);
        if own.is_dir() {
            roots.push(own);
        }
    }
    Ok(roots.into_iter().find_map(|root| Runs::scan(root).latest()))
}
