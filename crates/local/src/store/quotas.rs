//! The namespaces' `v1` `ResourceQuota`s, as applied: the server's admission reads them, `get
//! quota` lists them. The document is kept as JSON, as it was submitted (validated before).

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ResourceQuota;
use rusqlite::{OptionalExtension, params};

use super::codec::{corrupt, decode, encode, parse_timestamp, sqlite, timestamp_text};
use super::{Store, StoreError};

/// A quota as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaRecord {
    /// Its namespace.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// When it was first applied (kept when it is applied again).
    pub created_at: Timestamp,
    /// The document, with `metadata.namespace` set.
    pub quota: ResourceQuota,
}

impl Store {
    /// Records `quota` in `namespace`, replacing the one of the same name (its creation time
    /// kept); whether it replaced one.
    pub fn apply_quota(
        &mut self,
        namespace: &str,
        quota: &ResourceQuota,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let name = quota.metadata.name.clone().unwrap_or_default();
        let document = encode(&self.path, || format!("quota {namespace}/{name}"), quota)?;
        let failed = sqlite(&self.path, format!("record quota {namespace}/{name}"));
        let existed = self.quota(namespace, &name)?.is_some();
        self.conn
            .execute(
                "INSERT INTO resource_quotas (namespace, name, created_at, document)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (namespace, name) DO UPDATE SET document = excluded.document",
                params![namespace, name, timestamp_text(now), document],
            )
            .map_err(failed)?;
        Ok(existed)
    }

    /// The quotas of `namespace` (of every namespace when `None`), by namespace then name.
    pub fn quotas(&self, namespace: Option<&str>) -> Result<Vec<QuotaRecord>, StoreError> {
        let failed = sqlite(&self.path, "read the resource quotas".to_owned());
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT namespace, name, created_at, document FROM resource_quotas
                 WHERE ?1 IS NULL OR namespace = ?1 ORDER BY namespace, name",
            )
            .map_err(&failed)?;
        let rows = statement
            .query_map([namespace], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })
            .map_err(&failed)?
            .collect::<Result<Vec<(String, String, String, String)>, _>>()
            .map_err(&failed)?;
        rows.into_iter()
            .map(|(namespace, name, created_at, document)| {
                self.quota_record(namespace, name, &created_at, &document)
            })
            .collect()
    }

    /// The quota `namespace/name`, if recorded.
    pub fn quota(&self, namespace: &str, name: &str) -> Result<Option<QuotaRecord>, StoreError> {
        let failed = sqlite(&self.path, format!("read quota {namespace}/{name}"));
        let row: Option<(String, String)> = self
            .conn
            .query_row(
                "SELECT created_at, document FROM resource_quotas
                 WHERE namespace = ?1 AND name = ?2",
                params![namespace, name],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()
            .map_err(failed)?;
        row.map(|(created_at, document)| {
            self.quota_record(
                namespace.to_owned(),
                name.to_owned(),
                &created_at,
                &document,
            )
        })
        .transpose()
    }

    /// Removes the quota `namespace/name`; whether it was there.
    pub fn delete_quota(&mut self, namespace: &str, name: &str) -> Result<bool, StoreError> {
        let failed = sqlite(&self.path, format!("delete quota {namespace}/{name}"));
        let removed = self
            .conn
            .execute(
                "DELETE FROM resource_quotas WHERE namespace = ?1 AND name = ?2",
                params![namespace, name],
            )
            .map_err(failed)?;
        Ok(removed > 0)
    }

    fn quota_record(
        &self,
        namespace: String,
        name: String,
        created_at: &str,
        document: &str,
    ) -> Result<QuotaRecord, StoreError> {
        let what = format!("quota {namespace}/{name}");
        let created_at =
            parse_timestamp(created_at).map_err(|detail| corrupt(&self.path, &what, detail))?;
        let quota = decode(document).map_err(|detail| corrupt(&self.path, &what, detail))?;
        Ok(QuotaRecord {
            namespace,
            name,
            created_at,
            quota,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixtures::state_dir;

    fn quota(name: &str, gpus: &str) -> ResourceQuota {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "spec": {"hard": {"requests.nvidia.com/gpu": gpus}},
        }))
        .expect("a quota")
    }

    #[test]
    fn quotas_are_applied_listed_replaced_and_deleted() {
        let dir = state_dir();
        let mut store = Store::open(dir.path()).expect("open");
        let first = Timestamp::from_second(1_000).expect("time");
        assert!(
            !store
                .apply_quota("team-a", &quota("gpus", "2"), first)
                .expect("apply")
        );
        assert!(
            !store
                .apply_quota("team-b", &quota("gpus", "1"), first)
                .expect("apply")
        );
        let later = Timestamp::from_second(2_000).expect("time");
        assert!(
            store
                .apply_quota("team-a", &quota("gpus", "4"), later)
                .expect("apply")
        );
        let a = store.quota("team-a", "gpus").expect("read").expect("there");
        assert_eq!(
            a.created_at, first,
            "applying again keeps the creation time"
        );
        assert_eq!(a.quota, quota("gpus", "4"));
        let names: Vec<(String, String)> = store
            .quotas(None)
            .expect("list")
            .into_iter()
            .map(|q| (q.namespace, q.name))
            .collect();
        assert_eq!(
            names,
            [
                ("team-a".to_owned(), "gpus".to_owned()),
                ("team-b".to_owned(), "gpus".to_owned())
            ]
        );
        assert_eq!(store.quotas(Some("team-b")).expect("list").len(), 1);
        assert!(store.delete_quota("team-a", "gpus").expect("delete"));
        assert!(!store.delete_quota("team-a", "gpus").expect("delete"));
        drop(store);
        let store = Store::open(dir.path()).expect("reopen");
        assert_eq!(store.quotas(None).expect("list").len(), 1, "kept on disk");
    }
}
