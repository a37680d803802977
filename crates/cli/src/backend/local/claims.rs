//! What backs a claim on this machine: the directory it is bound to, else its own under the
//! state directory; for `describe` and `volumes`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use trainctl_api::TrainingJob;
use trainctl_local::kubelet::volumes::{claim_dir, claims_of};
use trainctl_local::store::{ClaimBinding, Store, StoreError};

use crate::view::volumes::ClaimBacking;

/// What backs each claim that `job` mounts on this machine, by claim.
pub fn backings(
    store: &Store,
    job: &TrainingJob,
) -> Result<BTreeMap<String, ClaimBacking>, StoreError> {
    let namespace = job.namespace();
    claims_of(job)
        .into_iter()
        .map(|claim| {
            let binding = store.claim_binding(namespace, &claim)?;
            let backing = backing(store, binding.as_ref(), namespace, &claim);
            Ok((claim, backing))
        })
        .collect()
}

/// The claim's directory: the one it is bound to, else its own.
pub fn backing(
    store: &Store,
    binding: Option<&ClaimBinding>,
    namespace: &str,
    claim: &str,
) -> ClaimBacking {
    match binding {
        Some(binding) => ClaimBacking::Bound(binding.path.clone()),
        None => ClaimBacking::Own(own_directory(store, namespace, claim)),
    }
}

/// The claim's own directory, absolute as a binding is (the state directory may be given as
/// a relative one).
pub fn own_directory(store: &Store, namespace: &str, claim: &str) -> PathBuf {
    let own = claim_dir(&store.claims_dir(), namespace, claim);
    std::path::absolute(&own).unwrap_or(own)
}
