//! How values are written in columns, and read back with errors that say which value is bad.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use trainctl_api::manifest::Companion;

use super::StoreError;
use crate::process::identity::ProcessIdentity;

/// A timestamp as RFC 3339 with nanoseconds: fixed width, so text order is time order.
pub(super) fn timestamp_text(time: Timestamp) -> String {
    format!("{time:.9}")
}

/// Reads a column written by [`timestamp_text`].
pub(super) fn parse_timestamp(text: &str) -> Result<Timestamp, String> {
    text.parse()
        .map_err(|error| format!("`{text}` is not an RFC 3339 timestamp: {error}"))
}

/// An optional timestamp column.
pub(super) fn parse_optional_timestamp(text: Option<&str>) -> Result<Option<Timestamp>, String> {
    text.map(parse_timestamp).transpose()
}

/// A process identity as its two columns. `SQLite` integers are signed 64-bit; the start ticks are
/// stored bit for bit, so every `u64` reads back unchanged.
pub(super) fn identity_columns(identity: Option<ProcessIdentity>) -> (Option<i32>, Option<i64>) {
    match identity {
        Some(ProcessIdentity { pid, start_ticks }) => (Some(pid), Some(start_ticks as i64)),
        None => (None, None),
    }
}

/// Reads the two columns written by [`identity_columns`].
pub(super) fn parse_identity(
    pid: Option<i64>,
    start_ticks: Option<i64>,
) -> Result<Option<ProcessIdentity>, String> {
    match (pid, start_ticks) {
        (None, None) => Ok(None),
        (Some(pid), Some(start_ticks)) => Ok(Some(ProcessIdentity {
            pid: i32::try_from(pid).map_err(|_| format!("pid {pid} is out of range"))?,
            start_ticks: start_ticks as u64,
        })),
        _ => Err("a pid without start ticks, or start ticks without a pid".to_owned()),
    }
}

/// A path as its bytes: paths need not be UTF-8.
pub(super) fn path_bytes(path: &Path) -> &[u8] {
    path.as_os_str().as_bytes()
}

/// Reads a column written by [`path_bytes`].
pub(super) fn parse_path(bytes: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(bytes))
}

/// Reads an integer column into a narrower type.
pub(super) fn narrow<T: TryFrom<i64>>(value: i64, what: &str) -> Result<T, String> {
    T::try_from(value).map_err(|_| format!("{what} {value} is out of range"))
}

/// Encodes a value as JSON text.
pub(super) fn encode<T: Serialize + ?Sized>(
    path: &Path,
    what: impl FnOnce() -> String,
    value: &T,
) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|source| StoreError::Encode {
        path: path.to_owned(),
        what: what(),
        source,
    })
}

/// Decodes JSON text written by [`encode`].
pub(super) fn decode<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|error| error.to_string())
}

/// The error for a stored value that cannot be read back.
pub(super) fn corrupt(path: &Path, what: impl Into<String>, detail: String) -> StoreError {
    StoreError::Corrupt {
        path: path.to_owned(),
        what: what.into(),
        detail,
    }
}

/// The error for a failed query or write.
pub(super) fn sqlite(path: &Path, operation: String) -> impl Fn(rusqlite::Error) -> StoreError {
    move |source| StoreError::Sqlite {
        path: path.to_owned(),
        operation: operation.clone(),
        source,
    }
}

/// Like [`sqlite`], but a write refused because `uid` names no job becomes
/// [`StoreError::NoSuchJob`].
pub(super) fn sqlite_for_job(
    path: &Path,
    operation: String,
    uid: &str,
) -> impl Fn(rusqlite::Error) -> StoreError {
    let failed = sqlite(path, operation);
    move |source| {
        let missing_job = source.sqlite_error().is_some_and(|error| {
            error.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY
        });
        if missing_job {
            StoreError::NoSuchJob {
                path: path.to_owned(),
                uid: uid.to_owned(),
            }
        } else {
            failed(source)
        }
    }
}

/// A companion object as stored: its kind, then the object.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", content = "object")]
enum StoredCompanion {
    ConfigMap(ConfigMap),
    Secret(Secret),
}

/// The companions as JSON text.
pub(super) fn encode_companions(
    path: &Path,
    uid: &str,
    companions: &[Companion],
) -> Result<String, StoreError> {
    let stored: Vec<StoredCompanion> = companions
        .iter()
        .map(|companion| match companion {
            Companion::ConfigMap(map) => StoredCompanion::ConfigMap(map.clone()),
            Companion::Secret(secret) => StoredCompanion::Secret(secret.clone()),
        })
        .collect();
    encode(
        path,
        || format!("the ConfigMaps and Secrets of job {uid}"),
        &stored,
    )
}

/// Decodes text written by [`encode_companions`].
pub(super) fn decode_companions(text: &str) -> Result<Vec<Companion>, String> {
    let stored: Vec<StoredCompanion> = decode(text)?;
    Ok(stored
        .into_iter()
        .map(|companion| match companion {
            StoredCompanion::ConfigMap(map) => Companion::ConfigMap(map),
            StoredCompanion::Secret(secret) => Companion::Secret(secret),
        })
        .collect())
}
