//! A ConfigMap's or Secret's keys as the files of a volume, as the kubelet writes them: every
//! key (or the `items` named, at their `path`), each file with its item's `mode`, else the
//! volume's `defaultMode`; a missing object or key refused in the kubelet's words unless
//! `optional`.
//!
//! Modes: a ConfigMap's files are `0644` by default, as on Kubernetes; a Secret's are `0600` by
//! default (on Kubernetes `0644`, on a tmpfs only the pod sees; here the files are on the user's
//! disk), and what the manifest sets is honoured for both.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write as _};
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Component, Path, PathBuf};

use k8s_openapi::api::core::v1::{ConfigMapVolumeSource, KeyToPath, SecretVolumeSource};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use trainctl_api::manifest::Companion;
use trainctl_api::validation::{MAX_KEY, config_map_key};

/// The kubelet's default mode of a ConfigMap's files.
const CONFIG_MAP_MODE: u32 = 0o644;
/// The default mode of a Secret's files here.
const SECRET_MODE: u32 = 0o600;

/// One file of a projection.
#[derive(Clone, PartialEq, Eq)]
pub struct ProjectedFile {
    /// Its path in the volume, relative.
    pub path: PathBuf,
    /// Its content.
    pub bytes: Vec<u8>,
    /// Its permission bits.
    pub mode: u32,
}

impl std::fmt::Debug for ProjectedFile {
    /// The path, size and mode: never the content, which may be a Secret's.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProjectedFile")
            .field("path", &self.path)
            .field("bytes", &self.bytes.len())
            .field("mode", &format_args!("{:o}", self.mode))
            .finish()
    }
}

/// The files of one ConfigMap or Secret volume, and the directory they go to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Projection {
    /// The volume's directory.
    pub dir: PathBuf,
    /// Its files.
    pub files: Vec<ProjectedFile>,
}

impl Projection {
    /// Writes the files into the directory (made), each with its mode.
    pub fn write(&self) -> io::Result<()> {
        fs::create_dir_all(&self.dir)?;
        for file in &self.files {
            let path = self.dir.join(&file.path);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)?;
            }
            // Made with its mode (a Secret's file is never readable by others, even for a
            // moment), then set to it whatever the umask took away.
            let mut written = fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(file.mode)
                .open(&path)?;
            written.write_all(&file.bytes)?;
            written.set_permissions(fs::Permissions::from_mode(file.mode))?;
        }
        Ok(())
    }
}

/// The files of the ConfigMap volume `volume`; `None` when the object is missing and optional.
pub fn project_config_map(
    volume: &str,
    source: &ConfigMapVolumeSource,
    namespace: &str,
    companions: &[Companion],
) -> Result<Option<Vec<ProjectedFile>>, String> {
    let found = companions.iter().find_map(|companion| match companion {
        Companion::ConfigMap(map) if names(&map.metadata, &source.name, namespace) => Some(map),
        _ => None,
    });
    let Some(map) = found else {
        return missing(volume, "configmap", &source.name, source.optional);
    };
    let mut keys: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for (key, value) in map.data.iter().flatten() {
        keys.insert(key.clone(), value.clone().into_bytes());
    }
    for (key, value) in map.binary_data.iter().flatten() {
        keys.insert(key.clone(), value.0.clone());
    }
    check_keys(volume, "configmap", &source.name, &keys)?;
    let mode = mode_of(source.default_mode, CONFIG_MAP_MODE);
    files(
        volume,
        "configmap",
        &keys,
        source.items.as_deref(),
        mode,
        source.optional,
    )
    .map(Some)
}

/// The files of the Secret volume `volume`; `None` when the object is missing and optional.
pub fn project_secret(
    volume: &str,
    source: &SecretVolumeSource,
    namespace: &str,
    companions: &[Companion],
) -> Result<Option<Vec<ProjectedFile>>, String> {
    let name = source.secret_name.as_deref().unwrap_or_default();
    let found = companions.iter().find_map(|companion| match companion {
        Companion::Secret(secret) if names(&secret.metadata, name, namespace) => Some(secret),
        _ => None,
    });
    let Some(secret) = found else {
        return missing(volume, "secret", name, source.optional);
    };
    let mut keys: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for (key, value) in secret.data.iter().flatten() {
        keys.insert(key.clone(), value.0.clone());
    }
    // `stringData` is merged over `data` when a Secret is written.
    for (key, value) in secret.string_data.iter().flatten() {
        keys.insert(key.clone(), value.clone().into_bytes());
    }
    check_keys(volume, "secret", name, &keys)?;
    let mode = mode_of(source.default_mode, SECRET_MODE);
    files(
        volume,
        "secret",
        &keys,
        source.items.as_deref(),
        mode,
        source.optional,
    )
    .map(Some)
}

/// Whether `meta` names the object `name` of `namespace` (one without a namespace matches any).
fn names(meta: &ObjectMeta, name: &str, namespace: &str) -> bool {
    meta.name.as_deref() == Some(name) && meta.namespace.as_deref().is_none_or(|ns| ns == namespace)
}

/// Refuses an object with a key the API server would have refused (`IsConfigMapKey`): a key
/// names a file of the volume, and one like `../x` would be written outside it.
fn check_keys(
    volume: &str,
    kind: &str,
    name: &str,
    keys: &BTreeMap<String, Vec<u8>>,
) -> Result<(), String> {
    match keys.keys().find(|key| config_map_key(key).is_err()) {
        None => Ok(()),
        Some(key) => Err(format!(
            "volume \"{volume}\": {kind} \"{name}\" has the key `{key}`, which is not valid: a key \
             is at most {MAX_KEY} letters, digits, `-`, `_` and `.`, and is not `.` nor \
             starts with `..`"
        )),
    }
}

/// A missing object: nothing when optional, else the kubelet's `FailedMount` words.
fn missing(
    volume: &str,
    kind: &str,
    name: &str,
    optional: Option<bool>,
) -> Result<Option<Vec<ProjectedFile>>, String> {
    if optional == Some(true) {
        return Ok(None);
    }
    Err(format!(
        "MountVolume.SetUp failed for volume \"{volume}\" : {kind} \"{name}\" not found; give it in the same file as the job or submit it to `trainctl server` first, or mark the volume `optional: true`"
    ))
}

/// The permission bits of a mode as the manifest gives it (decimal in JSON, octal in YAML
/// `0644`, which YAML 1.1 reads as octal and the manifest loader keeps as its number).
fn mode_of(mode: Option<i32>, default: u32) -> u32 {
    mode.map_or(default, |mode| mode.cast_unsigned() & 0o777)
}

/// The files of `keys`: every key, or the `items` named.
fn files(
    volume: &str,
    kind: &str,
    keys: &BTreeMap<String, Vec<u8>>,
    items: Option<&[KeyToPath]>,
    mode: u32,
    optional: Option<bool>,
) -> Result<Vec<ProjectedFile>, String> {
    let Some(items) = items else {
        return Ok(keys
            .iter()
            .map(|(key, bytes)| ProjectedFile {
                path: PathBuf::from(key),
                bytes: bytes.clone(),
                mode,
            })
            .collect());
    };
    let mut files = Vec::new();
    for item in items {
        let path = Path::new(&item.path);
        if item.path.is_empty()
            || path.is_absolute()
            || path.components().any(|c| c == Component::ParentDir)
        {
            return Err(format!(
                "volume \"{volume}\": items path `{}` must be a relative path inside the volume",
                item.path
            ));
        }
        let Some(bytes) = keys.get(&item.key) else {
            if optional == Some(true) {
                continue;
            }
            return Err(format!(
                "MountVolume.SetUp failed for volume \"{volume}\" : {kind} references non-existent config key: {}",
                item.key
            ));
        };
        files.push(ProjectedFile {
            path: path.to_path_buf(),
            bytes: bytes.clone(),
            mode: mode_of(item.mode, mode),
        });
    }
    Ok(files)
}
