//! A replica's volumes on this machine: what backs each volume its container mounts, and where.
//!
//! [`plan`] reads the pod's `volumes` and the main container's `volumeMounts` and decides, without
//! touching the machine, what each mount point shows:
//!
//! - `persistentVolumeClaim`: the claim's directory, shared by every replica and every job that
//!   mounts the claim (a `ReadWriteMany` claim): the directory it is bound to (`--volume
//!   CLAIM=PATH`), else `volumes/<namespace>/<claim>` in the state directory, made on first use;
//! - `configMap` and `secret`: the object's keys as files (`items`, `defaultMode`, `optional`),
//!   written into the replica's own directory of the job's ([`projection`]), mounted read-only as
//!   the kubelet does; a Secret's files are `0600` unless the manifest says otherwise;
//! - `emptyDir`: a directory of the replica's, fresh for each admission of the job and removed
//!   with the job; `medium: Memory` is a tmpfs of the replica's mount namespace (`sizeLimit` its
//!   size), fresh at each start;
//! - `hostPath`: the path itself (`type` checked, `DirectoryOrCreate` and `FileOrCreate` made);
//! - any other type (NFS, CSI, projected, ...): an empty directory of the replica's, with a
//!   warning naming the volume.
//!
//! [`ReplicaVolumes::materialize`] then makes what the plan needs on disk; the
//! [`mounts`](crate::process::mounts) helper mounts it in the replica's private mount namespace.

pub mod projection;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::io;
use std::os::unix::fs::FileTypeExt as _;
use std::path::{Component, Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, HostPathVolumeSource, PodSpec, Volume};
use serde::{Deserialize, Serialize};
use trainctl_api::TrainingJob;
use trainctl_api::expansion::expand;
use trainctl_api::manifest::Companion;
use trainctl_api::quantity;

use projection::{Projection, project_config_map, project_secret};

/// One mount of a replica's mount namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    /// Where the replica sees it (the container's `mountPath`), absolute.
    pub target: PathBuf,
    /// What it shows.
    pub source: MountSource,
    /// Whether writes fail with `EROFS`.
    pub read_only: bool,
}

/// What a mount shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MountSource {
    /// A file or directory of this machine, bound at the target.
    Bind(PathBuf),
    /// A path inside a volume's directory (a `subPath`), bound at the target once reached from
    /// that directory without leaving it: a symbolic link in the volume that points out of it is
    /// refused, as the kubelet refuses it since CVE-2017-1002101.
    Beneath {
        /// The volume's directory.
        root: PathBuf,
        /// The path inside it, relative and without `..`.
        sub_path: PathBuf,
    },
    /// A fresh tmpfs of this size in bytes (unbounded: half the memory, the kernel's default).
    Tmpfs(Option<u64>),
    /// The tmpfs mounted before at this target: a volume in memory that the container mounts
    /// again shows the same files.
    SameAs(PathBuf),
}

/// What backs one volume, for `describe` and `trainctl volumes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backing {
    /// A claim's directory.
    Claim {
        /// The claim's name.
        claim: String,
        /// Its directory.
        path: PathBuf,
    },
    /// A ConfigMap's or Secret's keys, as files in this directory.
    Projected {
        /// `ConfigMap` or `Secret`.
        kind: &'static str,
        /// The object's name.
        name: String,
        /// The files' directory.
        path: PathBuf,
    },
    /// An `emptyDir` on disk.
    EmptyDir(PathBuf),
    /// An `emptyDir` with `medium: Memory`.
    Memory,
    /// A `hostPath`.
    HostPath(PathBuf),
    /// A type this machine does not offer, replaced by an empty directory.
    Unsupported {
        /// The volume's type, as the manifest names it (`nfs`, `csi`, ...).
        kind: &'static str,
        /// The empty directory in its place.
        path: PathBuf,
    },
}

/// Where a replica's volumes live on this machine.
#[derive(Debug, Clone, Copy)]
pub struct VolumeDirs<'a> {
    /// The claims' directories, `<claims>/<namespace>/<claim>`.
    pub claims: &'a Path,
    /// The replica's own directory (ConfigMaps, Secrets, emptyDirs), removed with the job.
    pub replica: &'a Path,
}

/// What a replica's volumes are backed by, and what must be made before it starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplicaVolumes {
    /// The mounts, parents before what they hold.
    pub mounts: Vec<Mount>,
    /// Each mounted volume's name and backing, in the pod's order.
    pub backings: Vec<(String, Backing)>,
    /// What this machine does instead of a volume it does not offer, one line each.
    pub warnings: Vec<String>,
    /// Directories to make (claims, emptyDirs, `DirectoryOrCreate`).
    dirs: Vec<PathBuf>,
    /// Directories to make where nothing is, each a volume's directory and a path inside it
    /// (subPaths: one may name a file of the volume).
    sub_paths: Vec<(PathBuf, PathBuf)>,
    /// Files to make empty when missing (`FileOrCreate`).
    files: Vec<PathBuf>,
    /// The ConfigMaps' and Secrets' files.
    projections: Vec<Projection>,
    /// The replica's own directory, made afresh.
    replica_dir: Option<PathBuf>,
}

/// Where a claim's directory is: the one it is bound to, else its own under `claims`.
pub trait ClaimPaths {
    /// The directory the claim `name` of `namespace` is bound to, if any.
    fn bound(&self, namespace: &str, name: &str) -> Option<PathBuf>;
}

impl ClaimPaths for () {
    fn bound(&self, _: &str, _: &str) -> Option<PathBuf> {
        None
    }
}

/// The directory of the claim `name` of `namespace` under `claims` when it is bound to none.
#[must_use]
pub fn claim_dir(claims: &Path, namespace: &str, name: &str) -> PathBuf {
    claims.join(namespace).join(name)
}

/// The claims a job's replicas mount (`persistentVolumeClaim.claimName`), sorted.
#[must_use]
pub fn claims_of(job: &TrainingJob) -> BTreeSet<String> {
    job.replica_specs()
        .values()
        .filter_map(|spec| spec.template.spec.as_ref())
        .flat_map(|spec| spec.volumes.iter().flatten())
        .filter_map(|volume| volume.persistent_volume_claim.as_ref())
        .map(|claim| claim.claim_name.clone())
        .collect()
}

/// What the pod needs to run a replica's volumes.
#[derive(Clone, Copy)]
pub struct VolumeContext<'a> {
    /// The pod's namespace.
    pub namespace: &'a str,
    /// The ConfigMaps and Secrets the replica may read.
    pub companions: &'a [Companion],
    /// Where the claims are bound.
    pub claims: &'a dyn ClaimPaths,
    /// Where the volumes live.
    pub dirs: VolumeDirs<'a>,
}

/// Plans the volumes `container` mounts from `spec`, its `subPathExpr`s expanded against `env`;
/// the error says which mount or volume cannot be had and why, in the kubelet's words where it
/// has some.
pub fn plan(
    spec: &PodSpec,
    container: &Container,
    env: &[(String, String)],
    context: &VolumeContext<'_>,
) -> Result<ReplicaVolumes, String> {
    let mut planned = ReplicaVolumes::default();
    let volumes = spec.volumes.as_deref().unwrap_or_default();
    let mounts = container.volume_mounts.as_deref().unwrap_or_default();
    let mut mounted = BTreeSet::new();
    // Each mount with its volume's name, to know a volume in memory mounted again.
    let mut named = Vec::new();
    for mount in mounts {
        let Some(volume) = volumes.iter().find(|volume| volume.name == mount.name) else {
            return Err(format!(
                "volumeMounts: `{}` names no volume of the pod; add it to `volumes`",
                mount.name
            ));
        };
        let target = mount_path(&mount.mount_path)?;
        let backing = if mounted.insert(volume.name.clone()) {
            let backing = planned.back(volume, context)?;
            planned
                .backings
                .push((volume.name.clone(), backing.clone()));
            backing
        } else {
            planned
                .backings
                .iter()
                .find(|(name, _)| *name == volume.name)
                .map_or(Backing::Memory, |(_, backing)| backing.clone())
        };
        let sub_path = sub_path(mount, env)?;
        let source = match (&backing, &sub_path) {
            (Backing::Memory, Some(_)) => {
                return Err(format!(
                    "volume `{}`: a subPath of an emptyDir with `medium: Memory` is not supported locally",
                    volume.name
                ));
            }
            (Backing::Memory, None) => MountSource::Tmpfs(memory_size(volume)?),
            (backing, None) => MountSource::Bind(backing_path(backing).to_path_buf()),
            (backing, Some(sub_path)) => {
                let root = backing_path(backing).to_path_buf();
                // The kubelet makes a missing subPath a directory; a projection's keys are files.
                if !matches!(backing, Backing::Projected { .. }) {
                    planned.sub_paths.push((root.clone(), sub_path.clone()));
                }
                MountSource::Beneath {
                    root,
                    sub_path: sub_path.clone(),
                }
            }
        };
        let read_only = mount.read_only == Some(true)
            || matches!(backing, Backing::Projected { .. })
            || volume
                .persistent_volume_claim
                .as_ref()
                .is_some_and(|claim| claim.read_only == Some(true));
        named.push((
            volume.name.as_str(),
            Mount {
                target,
                source,
                read_only,
            },
        ));
    }
    // Parents before what they hold, as the kubelet's runtime sorts them.
    named.sort_by_key(|(_, mount)| mount.target.components().count());
    let mut in_memory: Vec<(&str, PathBuf)> = Vec::new();
    for (volume, mut mount) in named {
        if let MountSource::Tmpfs(_) = mount.source {
            match in_memory.iter().find(|(name, _)| *name == volume) {
                Some((_, first)) => mount.source = MountSource::SameAs(first.clone()),
                None => in_memory.push((volume, mount.target.clone())),
            }
        }
        planned.mounts.push(mount);
    }
    Ok(planned)
}

/// The path a backing shows (every backing but [`Backing::Memory`] has one).
fn backing_path(backing: &Backing) -> &Path {
    match backing {
        Backing::Claim { path, .. }
        | Backing::Projected { path, .. }
        | Backing::EmptyDir(path)
        | Backing::HostPath(path)
        | Backing::Unsupported { path, .. } => path,
        Backing::Memory => Path::new("/"),
    }
}

impl ReplicaVolumes {
    /// Decides what backs `volume`, noting what must be made.
    fn back(&mut self, volume: &Volume, context: &VolumeContext<'_>) -> Result<Backing, String> {
        let own = || context.dirs.replica.join(&volume.name);
        let replica_dir = || context.dirs.replica.to_path_buf();
        if let Some(claim) = &volume.persistent_volume_claim {
            let name = &claim.claim_name;
            let path = match context.claims.bound(context.namespace, name) {
                // A directory of the user's is never made: a dataset whose disk is not mounted
                // must not become an empty directory the job trains on.
                Some(bound) if !bound.is_dir() => {
                    return Err(format!(
                        "volume `{}`: claim {name} is bound to {}, which is not a directory now \
                         (mount it again, or bind the claim elsewhere with --volume)",
                        volume.name,
                        bound.display()
                    ));
                }
                Some(bound) => bound,
                None => {
                    let own = claim_dir(context.dirs.claims, context.namespace, name);
                    self.dirs.push(own.clone());
                    own
                }
            };
            return Ok(Backing::Claim {
                claim: name.clone(),
                path,
            });
        }
        if let Some(host) = &volume.host_path {
            return self.host_path(&volume.name, host);
        }
        if let Some(empty) = &volume.empty_dir {
            if empty.medium.as_deref() == Some("Memory") {
                return Ok(Backing::Memory);
            }
            self.replica_dir = Some(replica_dir());
            self.dirs.push(own());
            return Ok(Backing::EmptyDir(own()));
        }
        let projected = if let Some(source) = &volume.config_map {
            project_config_map(&volume.name, source, context.namespace, context.companions)?
                .map(|files| ("ConfigMap", source.name.clone(), files))
        } else if let Some(source) = &volume.secret {
            let name = source.secret_name.clone().unwrap_or_default();
            project_secret(&volume.name, source, context.namespace, context.companions)?
                .map(|files| ("Secret", name, files))
        } else {
            let kind = volume_kind(volume);
            self.warnings.push(format!(
                "volume `{}` ({kind}) is not available on this machine: an empty directory is mounted in its place",
                volume.name
            ));
            self.replica_dir = Some(replica_dir());
            self.dirs.push(own());
            return Ok(Backing::Unsupported { kind, path: own() });
        };
        let (kind, name, files) = projected.unwrap_or_else(|| {
            // An optional object that is missing: an empty directory, as the kubelet mounts.
            let name = volume
                .config_map
                .as_ref()
                .map(|source| source.name.clone())
                .or_else(|| volume.secret.as_ref()?.secret_name.clone())
                .unwrap_or_default();
            let kind = if volume.config_map.is_some() {
                "ConfigMap"
            } else {
                "Secret"
            };
            (kind, name, Vec::new())
        });
        self.replica_dir = Some(replica_dir());
        self.projections.push(Projection { dir: own(), files });
        Ok(Backing::Projected {
            kind,
            name,
            path: own(),
        })
    }

    /// A `hostPath` volume: the path, checked against its `type` (made for the `...OrCreate`
    /// types).
    fn host_path(&mut self, volume: &str, host: &HostPathVolumeSource) -> Result<Backing, String> {
        let path = PathBuf::from(&host.path);
        if !path.is_absolute() {
            return Err(format!(
                "volume `{volume}`: hostPath `{}` is not an absolute path",
                host.path
            ));
        }
        let kind = host.type_.as_deref().unwrap_or_default();
        let wrong = |expected: &str| {
            Err(format!(
                "volume `{volume}`: hostPath type check failed: {} is not {expected}",
                host.path
            ))
        };
        match kind {
            "DirectoryOrCreate" => self.dirs.push(path.clone()),
            "FileOrCreate" => self.files.push(path.clone()),
            "Directory" if !path.is_dir() => return wrong("a directory"),
            "File" if !path.is_file() => return wrong("a file"),
            "Socket" | "CharDevice" | "BlockDevice" if !is_of_type(&path, kind) => {
                return wrong(&format!("a {kind}"));
            }
            "" | "Directory" | "File" | "Socket" | "CharDevice" | "BlockDevice" => {}
            other => {
                return Err(format!(
                    "volume `{volume}`: hostPath type `{other}` is not one of DirectoryOrCreate, Directory, FileOrCreate, File, Socket, CharDevice, BlockDevice"
                ));
            }
        }
        Ok(Backing::HostPath(path))
    }

    /// Makes what the volumes need: the replica's own directory afresh (ConfigMaps' and Secrets'
    /// files written, emptyDirs empty), claims' directories, subPaths and `...OrCreate` host
    /// paths when missing.
    pub fn materialize(&self) -> io::Result<()> {
        if let Some(dir) = &self.replica_dir {
            match std::fs::remove_dir_all(dir) {
                Err(error) if error.kind() != io::ErrorKind::NotFound => return Err(error),
                _ => {}
            }
            std::fs::create_dir_all(dir)?;
        }
        for dir in &self.dirs {
            std::fs::create_dir_all(dir).map_err(|error| {
                io::Error::new(error.kind(), format!("{}: {error}", dir.display()))
            })?;
        }
        for (root, sub_path) in &self.sub_paths {
            make_beneath(root, sub_path)?;
        }
        for file in &self.files {
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)
                .map_err(|error| {
                    io::Error::new(error.kind(), format!("{}: {error}", file.display()))
                })?;
        }
        for projection in &self.projections {
            projection.write()?;
        }
        Ok(())
    }
}

/// Makes the directories of `sub_path` missing under `root`, one at a time, never through a
/// symbolic link: where one is found, the rest is left to the mount, which follows it only if
/// it stays in the volume.
fn make_beneath(root: &Path, sub_path: &Path) -> io::Result<()> {
    let mut path = root.to_path_buf();
    for component in sub_path.components() {
        path.push(component);
        match std::fs::symlink_metadata(&path) {
            Ok(found) if found.file_type().is_symlink() => return Ok(()),
            Ok(_) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                match std::fs::create_dir(&path) {
                    Err(error) if error.kind() != io::ErrorKind::AlreadyExists => {
                        return Err(io::Error::new(
                            error.kind(),
                            format!("{}: {error}", path.display()),
                        ));
                    }
                    _ => {}
                }
            }
            Err(error) => {
                return Err(io::Error::new(
                    error.kind(),
                    format!("{}: {error}", path.display()),
                ));
            }
        }
    }
    Ok(())
}

/// Whether `path` is a file of the `hostPath` type `kind` (`Socket`, `CharDevice` or
/// `BlockDevice`), links followed.
fn is_of_type(path: &Path, kind: &str) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    let file_type = meta.file_type();
    match kind {
        "Socket" => file_type.is_socket(),
        "CharDevice" => file_type.is_char_device(),
        "BlockDevice" => file_type.is_block_device(),
        _ => false,
    }
}

/// A `mountPath`, which must be absolute and plain (no `..`), and not the root itself (the
/// replica's root is put together from this machine's, and container runtimes refuse a mount
/// over `/` too).
fn mount_path(path: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(path);
    if !path.is_absolute() || path.components().any(|c| c == Component::ParentDir) {
        return Err(format!(
            "volumeMounts: mountPath `{}` must be an absolute path without `..`",
            path.display()
        ));
    }
    if path.parent().is_none() {
        return Err(format!(
            "volumeMounts: mountPath `{}` is the root of the filesystem: mount the volume at a \
             directory under it",
            path.display()
        ));
    }
    Ok(path)
}

/// A mount's `subPath` (or `subPathExpr`, expanded against `env`), which must be relative and
/// stay inside the volume.
fn sub_path(
    mount: &k8s_openapi::api::core::v1::VolumeMount,
    env: &[(String, String)],
) -> Result<Option<PathBuf>, String> {
    let text = match (&mount.sub_path, &mount.sub_path_expr) {
        (Some(path), _) if !path.is_empty() => path.clone(),
        (_, Some(expression)) if !expression.is_empty() => {
            let lookup = |name: &str| {
                env.iter()
                    .rev()
                    .find(|(defined, _)| defined == name)
                    .map(|(_, value)| value.clone())
            };
            expand(expression, lookup)
                .map_err(|error| format!("volumeMounts `{}`: subPathExpr {error}", mount.name))?
        }
        _ => return Ok(None),
    };
    let path = PathBuf::from(&text);
    if path.is_absolute() || path.components().any(|c| c == Component::ParentDir) {
        return Err(format!(
            "volumeMounts `{}`: subPath `{text}` must be a relative path inside the volume",
            mount.name
        ));
    }
    Ok(Some(path))
}

/// The size of an `emptyDir` in memory: its `sizeLimit`.
fn memory_size(volume: &Volume) -> Result<Option<u64>, String> {
    let Some(limit) = volume
        .empty_dir
        .as_ref()
        .and_then(|dir| dir.size_limit.as_ref())
    else {
        return Ok(None);
    };
    quantity::to_units(limit)
        .map(Some)
        .map_err(|error| format!("volume `{}`: sizeLimit: {error}", volume.name))
}

/// The name of a volume's type as the manifest writes it.
fn volume_kind(volume: &Volume) -> &'static str {
    let kinds: [(&'static str, bool); 14] = [
        ("nfs", volume.nfs.is_some()),
        ("csi", volume.csi.is_some()),
        ("projected", volume.projected.is_some()),
        ("ephemeral", volume.ephemeral.is_some()),
        ("iscsi", volume.iscsi.is_some()),
        ("cephfs", volume.cephfs.is_some()),
        ("rbd", volume.rbd.is_some()),
        ("glusterfs", volume.glusterfs.is_some()),
        ("downwardAPI", volume.downward_api.is_some()),
        (
            "awsElasticBlockStore",
            volume.aws_elastic_block_store.is_some(),
        ),
        ("gcePersistentDisk", volume.gce_persistent_disk.is_some()),
        ("azureDisk", volume.azure_disk.is_some()),
        ("azureFile", volume.azure_file.is_some()),
        ("fc", volume.fc.is_some()),
    ];
    kinds
        .into_iter()
        .find(|(_, set)| *set)
        .map_or("an unknown type", |(kind, _)| kind)
}
