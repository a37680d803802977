//! The claims bound to a directory of the user's (`--volume CLAIM=PATH`): a job that mounts the
//! claim sees that directory. A claim bound to none has its own directory in the state
//! directory ([`Store::claims_dir`]). A binding stays until the claim is deleted, as a claim
//! stays bound to its volume on Kubernetes.

use std::path::{Path, PathBuf};

use jiff::Timestamp;
use rusqlite::{OptionalExtension, params};

use super::codec::{corrupt, parse_path, parse_timestamp, path_bytes, sqlite, timestamp_text};
use super::{Store, StoreError};

/// A claim bound to a directory of the user's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimBinding {
    /// The claim's namespace.
    pub namespace: String,
    /// The claim's name.
    pub name: String,
    /// The directory.
    pub path: PathBuf,
    /// When it was bound there.
    pub bound_at: Timestamp,
}

impl Store {
    /// Binds the claim `namespace/name` to `path` (replacing its binding); the directory it was
    /// bound to before, if another.
    pub fn bind_claim(
        &mut self,
        namespace: &str,
        name: &str,
        path: &Path,
        now: Timestamp,
    ) -> Result<Option<PathBuf>, StoreError> {
        let before = self
            .claim_binding(namespace, name)?
            .map(|binding| binding.path);
        let failed = sqlite(&self.path, format!("bind claim {namespace}/{name}"));
        self.conn
            .execute(
                "INSERT INTO claim_bindings (namespace, name, path, bound_at)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (namespace, name) DO UPDATE
                 SET path = excluded.path, bound_at = excluded.bound_at",
                params![namespace, name, path_bytes(path), timestamp_text(now)],
            )
            .map_err(failed)?;
        Ok(before.filter(|before| before != path))
    }

    /// The binding of the claim `namespace/name`, if it has one.
    pub fn claim_binding(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ClaimBinding>, StoreError> {
        let failed = sqlite(&self.path, format!("read claim {namespace}/{name}"));
        let row: Option<(Vec<u8>, String)> = self
            .conn
            .query_row(
                "SELECT path, bound_at FROM claim_bindings WHERE namespace = ?1 AND name = ?2",
                params![namespace, name],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()
            .map_err(failed)?;
        row.map(|(path, bound_at)| {
            self.binding(namespace.to_owned(), name.to_owned(), &path, &bound_at)
        })
        .transpose()
    }

    /// The bindings of `namespace` (of every namespace when `None`), by namespace then name.
    pub fn claim_bindings(&self, namespace: Option<&str>) -> Result<Vec<ClaimBinding>, StoreError> {
        let failed = sqlite(&self.path, "read the claims' bindings".to_owned());
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT namespace, name, path, bound_at FROM claim_bindings
                 WHERE ?1 IS NULL OR namespace = ?1 ORDER BY namespace, name",
            )
            .map_err(&failed)?;
        let rows = statement
            .query_map([namespace], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })
            .map_err(&failed)?
            .collect::<Result<Vec<(String, String, Vec<u8>, String)>, _>>()
            .map_err(&failed)?;
        rows.into_iter()
            .map(|(namespace, name, path, bound_at)| {
                self.binding(namespace, name, &path, &bound_at)
            })
            .collect()
    }

    /// Forgets the binding of the claim `namespace/name` (its directory is left as it is);
    /// whether it had one.
    pub fn unbind_claim(&mut self, namespace: &str, name: &str) -> Result<bool, StoreError> {
        let failed = sqlite(&self.path, format!("unbind claim {namespace}/{name}"));
        let removed = self
            .conn
            .execute(
                "DELETE FROM claim_bindings WHERE namespace = ?1 AND name = ?2",
                params![namespace, name],
            )
            .map_err(failed)?;
        Ok(removed > 0)
    }

    fn binding(
        &self,
        namespace: String,
        name: String,
        path: &[u8],
        bound_at: &str,
    ) -> Result<ClaimBinding, StoreError> {
        let bound_at = parse_timestamp(bound_at)
            .map_err(|detail| corrupt(&self.path, format!("claim {namespace}/{name}"), detail))?;
        Ok(ClaimBinding {
            namespace,
            name,
            path: parse_path(path),
            bound_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt as _;

    use super::*;
    use crate::store::fixtures::state_dir;

    #[test]
    fn a_binding_is_kept_replaced_and_forgotten() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let now = Timestamp::now();
        assert_eq!(
            store
                .bind_claim("ml", "data", Path::new("/srv/data"), now)
                .expect("bind"),
            None
        );
        assert_eq!(
            store
                .bind_claim("ml", "data", Path::new("/srv/data"), now)
                .expect("bind again"),
            None,
            "the same directory again is no change"
        );
        assert_eq!(
            store
                .bind_claim("ml", "data", Path::new("/srv/other"), now)
                .expect("rebind"),
            Some(PathBuf::from("/srv/data"))
        );
        store
            .bind_claim("default", "out", Path::new("/srv/out"), now)
            .expect("bind");
        let all: Vec<(String, String, PathBuf)> = store
            .claim_bindings(None)
            .expect("list")
            .into_iter()
            .map(|binding| (binding.namespace, binding.name, binding.path))
            .collect();
        assert_eq!(
            all,
            [
                (
                    "default".to_owned(),
                    "out".to_owned(),
                    PathBuf::from("/srv/out")
                ),
                (
                    "ml".to_owned(),
                    "data".to_owned(),
                    PathBuf::from("/srv/other")
                ),
            ]
        );
        assert_eq!(store.claim_bindings(Some("ml")).expect("list").len(), 1);
        assert!(store.unbind_claim("ml", "data").expect("unbind"));
        assert!(!store.unbind_claim("ml", "data").expect("unbind again"));
        assert_eq!(store.claim_binding("ml", "data").expect("read"), None);
    }

    #[test]
    fn a_bound_path_need_not_be_utf8() {
        let temp = state_dir();
        let mut store = Store::open(temp.path()).expect("open");
        let path = Path::new(OsStr::from_bytes(b"/srv/d\xffata"));
        store
            .bind_claim("ml", "data", path, Timestamp::now())
            .expect("bind");
        let binding = store
            .claim_binding("ml", "data")
            .expect("read")
            .expect("bound");
        assert_eq!(binding.path, path);
    }
}
