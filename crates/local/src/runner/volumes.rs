//! A run's volumes: the claims' bindings read from the store, where the job's volumes go, what
//! is made before its replicas start, and what is removed once they have stopped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use trainctl_api::{ReplicaType, TrainingJob};

use crate::kubelet::volumes::ClaimPaths;
use crate::runner::launch::{PreparedReplica, VolumeSetup};
use crate::store::{Layout, Store, StoreError};

/// The claims bound to a directory of the user's, as the store had them.
#[derive(Debug, Default)]
pub(super) struct Bindings(BTreeMap<(String, String), PathBuf>);

impl Bindings {
    /// The bindings of `namespace`'s claims.
    pub(super) fn read(store: &Store, namespace: &str) -> Result<Bindings, StoreError> {
        let bindings = store
            .claim_bindings(Some(namespace))?
            .into_iter()
            .map(|binding| ((binding.namespace, binding.name), binding.path))
            .collect();
        Ok(Bindings(bindings))
    }
}

impl ClaimPaths for Bindings {
    fn bound(&self, namespace: &str, name: &str) -> Option<PathBuf> {
        self.0
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
    }
}

/// Where a job's volumes go, and its TensorBoard event files.
#[derive(Debug)]
pub(super) struct VolumePaths {
    claims_dir: PathBuf,
    pods_dir: PathBuf,
    staging: PathBuf,
    tensorboard: PathBuf,
}

impl VolumePaths {
    /// The job `uid`'s, in the state directory laid out as `layout`.
    pub(super) fn of(layout: Layout<'_>, uid: &str) -> VolumePaths {
        VolumePaths {
            claims_dir: layout.claims_dir(),
            pods_dir: layout.pods_dir(uid),
            staging: layout.staging_dir(),
            tensorboard: layout.tensorboard_dir(uid),
        }
    }

    /// The directory offered to the replicas for their TensorBoard event files.
    pub(super) fn tensorboard(&self) -> &Path {
        &self.tensorboard
    }

    /// The setup of the replicas' volumes, with these bindings.
    pub(super) fn setup<'a>(&'a self, bindings: &'a dyn ClaimPaths) -> VolumeSetup<'a> {
        VolumeSetup {
            bindings,
            claims_dir: &self.claims_dir,
            pods_dir: &self.pods_dir,
            staging: &self.staging,
        }
    }

    /// The job's own volumes' directory (ConfigMaps, Secrets, emptyDirs).
    pub(super) fn pods_dir(&self) -> &Path {
        &self.pods_dir
    }
}

/// Makes what the prepared replicas' volumes need, and the job's TensorBoard directory; the
/// message names the replica and the path.
pub(super) fn materialize<'a>(
    prepared: impl IntoIterator<Item = (String, &'a PreparedReplica)>,
    paths: &VolumePaths,
) -> Result<(), String> {
    std::fs::create_dir_all(&paths.tensorboard).map_err(|error| {
        format!(
            "cannot make the TensorBoard directory {}: {error}",
            paths.tensorboard.display()
        )
    })?;
    for (replica, prepared) in prepared {
        if prepared.launch.mounts.is_none() {
            continue;
        }
        std::fs::create_dir_all(&paths.staging)
            .and_then(|()| prepared.volumes.materialize())
            .map_err(|error| format!("{replica}: cannot make its volumes: {error}"))?;
    }
    Ok(())
}

/// The volumes each replica type's main container mounts, by name, in the pod's order.
pub(super) fn mounted(job: &TrainingJob) -> Vec<(ReplicaType, Vec<String>)> {
    let mut mounted = Vec::new();
    for (replica_type, spec) in job.replica_specs().iter() {
        let Some(pod) = spec.template.spec.as_ref() else {
            continue;
        };
        let Some(container) = job.kind().framework_container(&pod.containers) else {
            continue;
        };
        let names: Vec<String> = container
            .volume_mounts
            .iter()
            .flatten()
            .map(|mount| mount.name.clone())
            .fold(Vec::new(), |mut names, name| {
                if !names.contains(&name) {
                    names.push(name);
                }
                names
            });
        if !names.is_empty() {
            mounted.push((replica_type.clone(), names));
        }
    }
    mounted
}
