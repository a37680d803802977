//! Claims as the commands manage them: `--volume [NAMESPACE/]CLAIM=PATH` read ([`VolumeBinding`])
//! and recorded ([`bind`]), and the jobs that still use a claim ([`users`]).
//!
//! A claim that a job which may still run mounts keeps its directory: `run`, `server` and
//! `submit` do not bind it elsewhere, and `trainctl volumes delete` neither removes nor unbinds
//! it, while that job has not finished; the job's data is never switched under it.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use trainctl_api::manifest::check_namespace;

use crate::kubelet::volumes::{claim_dir, claims_of};
use crate::store::{JobRecord, Store, StoreError};

/// A claim to bind to a directory of the user's, as `--volume [NAMESPACE/]CLAIM=PATH` and the
/// API's `volume` parameter say it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeBinding {
    /// The claim's namespace when given (`NAMESPACE/CLAIM`); else the command's.
    pub namespace: Option<String>,
    /// The claim's name (a `persistentVolumeClaim.claimName`).
    pub claim: String,
    /// The directory, absolute, its links resolved.
    pub path: PathBuf,
}

/// Why a `--volume` cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VolumeBindingError {
    /// It is not `[NAMESPACE/]CLAIM=PATH`.
    #[error("expected CLAIM=PATH or NAMESPACE/CLAIM=PATH")]
    Syntax,
    /// The namespace is not a DNS-1123 label (the message says why).
    #[error("{0}")]
    Namespace(String),
    /// The claim's name is not a DNS-1123 subdomain.
    #[error(
        "`{claim}` is not a valid claim name: {problem}; a claim's name is a DNS-1123 subdomain: \
         lowercase letters, digits, `-` and `.`, starting and ending with a letter or digit"
    )]
    Claim {
        /// The name given.
        claim: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The path is not an existing directory.
    #[error("{} is not a directory ({why})", path.display())]
    NotDirectory {
        /// The path given.
        path: PathBuf,
        /// What it is instead, or why it cannot be read.
        why: String,
    },
}

impl VolumeBinding {
    /// Reads `[NAMESPACE/]CLAIM=PATH`; PATH must be an existing directory (of this machine: the
    /// server's and the client's are the same), kept absolute with its links resolved.
    pub fn parse(text: &str) -> Result<VolumeBinding, VolumeBindingError> {
        let (name, path) = text
            .split_once('=')
            .filter(|(name, path)| !name.is_empty() && !path.is_empty())
            .ok_or(VolumeBindingError::Syntax)?;
        let (namespace, claim) = match name.split_once('/') {
            Some((namespace, claim)) => {
                check_namespace(namespace).map_err(VolumeBindingError::Namespace)?;
                (Some(namespace.to_owned()), claim)
            }
            None => (None, name),
        };
        check_claim_name(claim).map_err(|problem| VolumeBindingError::Claim {
            claim: claim.to_owned(),
            problem,
        })?;
        Ok(VolumeBinding {
            namespace,
            claim: claim.to_owned(),
            path: existing_directory(Path::new(path))?,
        })
    }

    /// The binding as [`VolumeBinding::parse`] reads it back: `NAMESPACE/CLAIM=PATH`, or
    /// `CLAIM=PATH`; `None` when the path is not UTF-8.
    #[must_use]
    pub fn text(&self) -> Option<String> {
        let path = self.path.to_str()?;
        Some(match &self.namespace {
            Some(namespace) => format!("{namespace}/{}={path}", self.claim),
            None => format!("{}={path}", self.claim),
        })
    }

    /// The claim to bind, in its own namespace when it names one, else in `namespace`.
    #[must_use]
    pub fn target(&self, namespace: &str) -> ClaimTarget {
        ClaimTarget {
            namespace: self
                .namespace
                .clone()
                .unwrap_or_else(|| namespace.to_owned()),
            claim: self.claim.clone(),
            path: self.path.clone(),
        }
    }
}

/// Checks a claim's name: a DNS-1123 subdomain (dot-separated labels, at most 253 characters),
/// so never a path (`..`, `/`) that would reach outside the claims' directory.
pub fn check_claim_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("it is empty".to_owned());
    }
    if name.len() > 253 {
        return Err(format!("{} characters, the limit is 253", name.len()));
    }
    for label in name.split('.') {
        let alphanumeric = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
        if label.is_empty() {
            return Err("it has an empty part between dots".to_owned());
        }
        if let Some(bad) = label
            .chars()
            .find(|&c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
        {
            return Err(format!("it holds `{}`", bad.escape_default()));
        }
        if !alphanumeric(label.chars().next()) || !alphanumeric(label.chars().last()) {
            return Err("a part starts or ends with `-`".to_owned());
        }
    }
    Ok(())
}

/// `path` absolute with its links resolved, when it is an existing directory.
fn existing_directory(path: &Path) -> Result<PathBuf, VolumeBindingError> {
    let not_directory = |why: String| VolumeBindingError::NotDirectory {
        path: path.to_owned(),
        why,
    };
    match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_dir() => {}
        Ok(_) => return Err(not_directory("it is a file".to_owned())),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Err(not_directory("it does not exist".to_owned()));
        }
        Err(error) => return Err(not_directory(error.to_string())),
    }
    std::fs::canonicalize(path).map_err(|error| not_directory(error.to_string()))
}

/// A claim of a namespace, and the directory to bind it to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimTarget {
    /// The claim's namespace.
    pub namespace: String,
    /// The claim's name.
    pub claim: String,
    /// The directory.
    pub path: PathBuf,
}

/// A claim [`bind`] bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    /// The claim's namespace.
    pub namespace: String,
    /// The claim's name.
    pub claim: String,
    /// Its directory now.
    pub path: PathBuf,
    /// The directory it was bound to before, when another.
    pub previous: Option<PathBuf>,
}

/// Why [`bind`] recorded nothing.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// A job that may still run mounts a claim whose directory would change.
    #[error(
        "claim {namespace}/{claim} is used by {job}, which has not finished: binding it to {} \
         would change the directory the job sees ({}); wait until the job has finished, or \
         delete the job first",
        path.display(),
        current.display()
    )]
    InUse {
        /// The claim's namespace.
        namespace: String,
        /// The claim's name.
        claim: String,
        /// The job, as [`user_label`] names it.
        job: String,
        /// The directory asked for.
        path: PathBuf,
        /// The directory the job sees.
        current: PathBuf,
    },
    /// The same claim was given two directories.
    #[error(
        "claim {namespace}/{claim} is given two directories, {} and {}; give it one",
        first.display(),
        second.display()
    )]
    Twice {
        /// The claim's namespace.
        namespace: String,
        /// The claim's name.
        claim: String,
        /// The first directory given.
        first: PathBuf,
        /// The other.
        second: PathBuf,
    },
    /// The state database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Binds each claim of `targets` to its directory, all or none: nothing is recorded when a
/// claim is given two directories, or when a job that may still run ([`users`]) mounts a claim
/// whose directory (its binding, else its own under [`Store::claims_dir`]) would change. A
/// binding that is already so is left as it is (with the time it was made).
pub fn bind(
    store: &mut Store,
    targets: &[ClaimTarget],
    now: Timestamp,
) -> Result<Vec<Bound>, BindError> {
    let mut wanted: BTreeMap<(&str, &str), &Path> = BTreeMap::new();
    for target in targets {
        let key = (target.namespace.as_str(), target.claim.as_str());
        if let Some(first) = wanted.insert(key, &target.path)
            && first != target.path
        {
            return Err(BindError::Twice {
                namespace: target.namespace.clone(),
                claim: target.claim.clone(),
                first: first.to_owned(),
                second: target.path.clone(),
            });
        }
    }
    let claims_dir = store.claims_dir();
    let mut changes = Vec::new();
    for ((namespace, claim), path) in wanted {
        let bound = store.claim_binding(namespace, claim)?.map(|b| b.path);
        if bound.as_deref() == Some(path) {
            continue;
        }
        let current = bound.clone().unwrap_or_else(|| {
            // Absolute, as the path asked for is, though the state directory may be relative.
            let own = claim_dir(&claims_dir, namespace, claim);
            std::path::absolute(&own).unwrap_or(own)
        });
        if current != path
            && let Some(user) = users(store, namespace, claim)?.first()
        {
            return Err(BindError::InUse {
                namespace: namespace.to_owned(),
                claim: claim.to_owned(),
                job: user_label(user),
                path: path.to_owned(),
                current,
            });
        }
        changes.push((namespace, claim, path));
    }
    let mut bound = Vec::new();
    for (namespace, claim, path) in changes {
        let previous = store.bind_claim(namespace, claim, path, now)?;
        bound.push(Bound {
            namespace: namespace.to_owned(),
            claim: claim.to_owned(),
            path: path.to_owned(),
            previous,
        });
    }
    Ok(bound)
}

/// The jobs of `namespace` that mount the claim `claim` and may still run: not finished, and
/// their trainctl process (a `run`, or the server) alive, or one of their replicas alive (a
/// server's replicas outlive a server that died, through the shim, until the next one takes
/// them over).
pub fn users(store: &Store, namespace: &str, claim: &str) -> Result<Vec<JobRecord>, StoreError> {
    let mut users = Vec::new();
    for record in store.jobs(Some(namespace), None)? {
        if record.finished || !claims_of(&record.job).contains(claim) {
            continue;
        }
        let alive = record.owner.is_some_and(|owner| owner.is_alive())
            || store
                .replicas(&record.uid)?
                .iter()
                .filter_map(|replica| replica.pid)
                .any(|pid| pid.is_alive());
        if alive {
            users.push(record);
        }
    }
    Ok(users)
}

/// The directory that backs `claim` of `namespace`: the one it is bound to, else its own under
/// the state directory, made absolute (the state directory may be given as a relative one).
pub fn directory(store: &Store, namespace: &str, claim: &str) -> Result<PathBuf, StoreError> {
    if let Some(binding) = store.claim_binding(namespace, claim)? {
        return Ok(binding.path);
    }
    let own = claim_dir(&store.claims_dir(), namespace, claim);
    Ok(std::path::absolute(&own).unwrap_or(own))
}

/// Where `record`'s job's TensorBoard event files are looked for, in order: the job's own
/// directory ([`Store::tensorboard_dir`], offered to its replicas in
/// `TRAINCTL_TENSORBOARD_DIR`), then, in each claim the job mounts (in name order), the
/// directory named after the job (Keras' `log_dir=/logs/<job name>`), where it exists: never a
/// whole claim, which may be a dataset or shared by other jobs.
pub fn event_roots(store: &Store, record: &JobRecord) -> Result<Vec<PathBuf>, StoreError> {
    let mut roots = vec![store.tensorboard_dir(&record.uid)];
    for claim in claims_of(&record.job) {
        let own = directory(store, &record.namespace, &claim)?.join(&record.name);
        if own.is_dir() {
            roots.push(own);
        }
    }
    Ok(roots)
}

/// A job as the claims' messages name it: `tfjob/mnist (Running)`.
#[must_use]
pub fn user_label(record: &JobRecord) -> String {
    format!(
        "{}/{} ({})",
        record.kind.singular(),
        record.name,
        record.state()
    )
}

#[cfg(test)]
mod tests;
