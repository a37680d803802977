//! A local job's training progress, from the TensorBoard event files it writes: the latest step
//! and the last value of its main scalar (`loss`, Keras' `epoch_loss`...), for `get -o wide` and
//! `describe`.
//!
//! Event files are looked for where [`event_roots`] says; the first of those places that has a
//! scalar gives the progress.

use std::collections::HashMap;
use std::path::PathBuf;

use trainctl_events::{Places, Progress};
use trainctl_local::claims::event_roots;
use trainctl_local::store::{JobRecord, Store, StoreError};

/// The event files of the jobs asked about so far, kept between questions, so that `get -w`
/// reads only what was appended since it last looked.
#[derive(Debug, Default)]
pub struct Progresses {
    by_uid: HashMap<String, Places>,
}

impl Progresses {
    /// The progress of `record`'s job, when its event files have a scalar.
    pub fn of(
        &mut self,
        store: &Store,
        record: &JobRecord,
    ) -> Result<Option<Progress>, StoreError> {
        let places = self.by_uid.entry(record.uid.clone()).or_default();
        places.refresh(event_roots(store, record)?);
        Ok(places.latest())
    }
}

/// The progress in the event files under `roots` ([`event_roots`]), read once: for a job
/// described once.
pub fn read_once(roots: Vec<PathBuf>) -> Option<Progress> {
    let mut places = Places::default();
    places.refresh(roots);
    places.latest()
}
