//! A local job's training progress, from the TensorBoard event files it writes: the latest step
//! and the last value of its main scalar (`loss`, Keras' `epoch_loss`...), for `get -o wide` and
//! `describe`.
//!
//! Event files are looked for where [`event_roots`] says; the first of those places that has a
//! scalar gives the progress.

use trainctl_events::{Progress, Runs};
use trainctl_local::claims::event_roots;
use trainctl_local::store::{JobRecord, Store, StoreError};

/// The progress of `record`'s job, when its event files have a scalar.
pub(super) fn of(store: &Store, record: &JobRecord) -> Result<Option<Progress>, StoreError> {
    Ok(event_roots(store, record)?
        .into_iter()
        .find_map(|root| Runs::scan(root).latest()))
}
