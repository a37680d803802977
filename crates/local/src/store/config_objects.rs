//! The ConfigMaps and Secrets a server was given (`trainctl submit` of a file that holds them),
//! as applied: a job submitted later that references one its own file does not hold is
//! recorded with it. Each is kept as JSON, with `metadata.namespace` set, keyed by kind,
//! namespace and name. A Secret's data stays in the database (0600, in the private state
//! directory): nothing here prints it, and an error never quotes it.

use jiff::Timestamp;
use rusqlite::{OptionalExtension, params};
use trainctl_api::manifest::Companion;

use super::codec::{corrupt, parse_timestamp, sqlite, timestamp_text};
use super::{Store, StoreError};
use crate::kubelet::references::CompanionKind;

/// A ConfigMap or Secret as stored.
#[derive(Clone, PartialEq)]
pub struct ConfigObjectRecord {
    /// Its namespace.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// When it was first applied (kept when it is applied again).
    pub created_at: Timestamp,
    /// The object, with `metadata.namespace` set.
    pub object: Companion,
}

impl std::fmt::Debug for ConfigObjectRecord {
    /// Names the object, never its data.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigObjectRecord")
            .field("kind", &CompanionKind::of(&self.object))
            .field("namespace", &self.namespace)
            .field("name", &self.name)
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Records `object` in `namespace` (its `metadata.namespace` set to it), replacing the one of
    /// the same kind and name (its creation time kept); whether it replaced one.
    pub fn apply_config_object(
        &mut self,
        namespace: &str,
        object: &Companion,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let kind = CompanionKind::of(object);
        let name = object.metadata().name.clone().unwrap_or_default();
        let mut object = object.clone();
        object.metadata_mut().namespace = Some(namespace.to_owned());
        let document = match &object {
            Companion::ConfigMap(map) => serde_json::to_string(map),
            Companion::Secret(secret) => serde_json::to_string(secret),
        }
        .map_err(|source| StoreError::Encode {
            path: self.path.clone(),
            what: format!("{kind} {namespace}/{name}"),
            source,
        })?;
        let existed = self.config_object(kind, namespace, &name)?.is_some();
        let failed = sqlite(&self.path, format!("record {kind} {namespace}/{name}"));
        self.conn
            .execute(
                "INSERT INTO config_objects (kind, namespace, name, created_at, document)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (kind, namespace, name) DO UPDATE SET document = excluded.document",
                params![
                    kind.to_string(),
                    namespace,
                    name,
                    timestamp_text(now),
                    document
                ],
            )
            .map_err(failed)?;
        Ok(existed)
    }

    /// The objects of `kind` in `namespace` (of every namespace when `None`), by namespace then
    /// name.
    pub fn config_objects(
        &self,
        kind: CompanionKind,
        namespace: Option<&str>,
    ) -> Result<Vec<ConfigObjectRecord>, StoreError> {
        let failed = sqlite(&self.path, format!("read the {kind}s"));
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT namespace, name, created_at, document FROM config_objects
                 WHERE kind = ?1 AND (?2 IS NULL OR namespace = ?2) ORDER BY namespace, name",
            )
            .map_err(&failed)?;
        let rows = statement
            .query_map(params![kind.to_string(), namespace], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })
            .map_err(&failed)?
            .collect::<Result<Vec<(String, String, String, String)>, _>>()
            .map_err(&failed)?;
        rows.into_iter()
            .map(|(namespace, name, created_at, document)| {
                self.config_object_record(kind, namespace, name, &created_at, &document)
            })
            .collect()
    }

    /// The object `kind` `namespace/name`, if recorded.
    pub fn config_object(
        &self,
        kind: CompanionKind,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ConfigObjectRecord>, StoreError> {
        let failed = sqlite(&self.path, format!("read {kind} {namespace}/{name}"));
        let row: Option<(String, String)> = self
            .conn
            .query_row(
                "SELECT created_at, document FROM config_objects
                 WHERE kind = ?1 AND namespace = ?2 AND name = ?3",
                params![kind.to_string(), namespace, name],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()
            .map_err(failed)?;
        row.map(|(created_at, document)| {
            self.config_object_record(
                kind,
                namespace.to_owned(),
                name.to_owned(),
                &created_at,
                &document,
            )
        })
        .transpose()
    }

    /// Removes the object `kind` `namespace/name`; whether it was there. The jobs recorded with
    /// it keep their copy.
    pub fn delete_config_object(
        &mut self,
        kind: CompanionKind,
        namespace: &str,
        name: &str,
    ) -> Result<bool, StoreError> {
        let failed = sqlite(&self.path, format!("delete {kind} {namespace}/{name}"));
        let removed = self
            .conn
            .execute(
                "DELETE FROM config_objects WHERE kind = ?1 AND namespace = ?2 AND name = ?3",
                params![kind.to_string(), namespace, name],
            )
            .map_err(failed)?;
        Ok(removed > 0)
    }

    /// Reads a row back. A document that cannot be read is reported by its position only: the
    /// parser's message may quote a value, which may be a Secret's.
    fn config_object_record(
        &self,
        kind: CompanionKind,
        namespace: String,
        name: String,
        created_at: &str,
        document: &str,
    ) -> Result<ConfigObjectRecord, StoreError> {
        let what = format!("{kind} {namespace}/{name}");
        let created_at =
            parse_timestamp(created_at).map_err(|detail| corrupt(&self.path, &what, detail))?;
        let object = match kind {
            CompanionKind::ConfigMap => serde_json::from_str(document).map(Companion::ConfigMap),
            CompanionKind::Secret => serde_json::from_str(document).map(Companion::Secret),
        }
        .map_err(|error| {
            let detail = format!(
                "not a {kind} (line {}, column {})",
                error.line(),
                error.column()
            );
            corrupt(&self.path, &what, detail)
        })?;
        Ok(ConfigObjectRecord {
            namespace,
            name,
            created_at,
            object,
        })
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    use serde_json::json;

    use super::*;
    use crate::store::fixtures::state_dir;

    fn config_map(name: &str, value: &str) -> Companion {
        let map: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": name}, "data": {"a": value}}))
                .expect("a ConfigMap");
        Companion::ConfigMap(map)
    }

    fn secret(name: &str, value: &str) -> Companion {
        let secret: Secret = serde_json::from_value(
            json!({"metadata": {"name": name}, "stringData": {"token": value}}),
        )
        .expect("a Secret");
        Companion::Secret(secret)
    }

    fn time(second: i64) -> Timestamp {
        Timestamp::from_second(second).expect("time")
    }

    fn names(records: Vec<ConfigObjectRecord>) -> Vec<(String, String)> {
        records
            .into_iter()
            .map(|record| (record.namespace, record.name))
            .collect()
    }

    /// A store with ConfigMaps `settings` in `team-a` (applied twice, at 1 then 2) and `team-b`,
    /// `other` in `team-a`, and a Secret `settings` in `team-a`.
    fn seeded(dir: &std::path::Path) -> Store {
        let mut store = Store::open(dir).expect("open");
        let apply = |store: &mut Store, namespace: &str, object: &Companion, at: i64| {
            store
                .apply_config_object(namespace, object, time(at))
                .expect("apply")
        };
        assert!(!apply(
            &mut store,
            "team-b",
            &config_map("settings", "1"),
            1
        ));
        assert!(!apply(
            &mut store,
            "team-a",
            &config_map("settings", "2"),
            1
        ));
        assert!(!apply(&mut store, "team-a", &config_map("other", "3"), 1));
        // A Secret of the same name is another object.
        assert!(!apply(
            &mut store,
            "team-a",
            &secret("settings", "s3cr3t"),
            1
        ));
        assert!(apply(&mut store, "team-a", &config_map("settings", "4"), 2));
        store
    }

    #[test]
    fn objects_are_applied_and_replaced_by_kind_namespace_and_name() {
        let dir = state_dir();
        let store = seeded(dir.path());
        let settings = store
            .config_object(CompanionKind::ConfigMap, "team-a", "settings")
            .expect("read")
            .expect("there");
        assert_eq!(
            settings.created_at,
            time(1),
            "applying again keeps the time"
        );
        let mut expected = config_map("settings", "4");
        expected.metadata_mut().namespace = Some("team-a".to_owned());
        assert_eq!(
            settings.object, expected,
            "replaced, with its namespace set"
        );
        assert_eq!(
            names(
                store
                    .config_objects(CompanionKind::ConfigMap, None)
                    .expect("list")
            ),
            [
                ("team-a".to_owned(), "other".to_owned()),
                ("team-a".to_owned(), "settings".to_owned()),
                ("team-b".to_owned(), "settings".to_owned()),
            ]
        );
        assert_eq!(
            names(
                store
                    .config_objects(CompanionKind::ConfigMap, Some("team-b"))
                    .expect("list")
            ),
            [("team-b".to_owned(), "settings".to_owned())]
        );
        let secrets = store
            .config_objects(CompanionKind::Secret, None)
            .expect("list");
        assert_eq!(secrets.len(), 1);
        let Companion::Secret(kept) = &secrets[0].object else {
            panic!("a Secret: {secrets:?}");
        };
        assert_eq!(
            kept.string_data.as_ref().and_then(|data| data.get("token")),
            Some(&"s3cr3t".to_owned())
        );
        assert!(
            !format!("{secrets:?}").contains("s3cr3t"),
            "a record's Debug names the object, never its data"
        );
        assert_eq!(
            store
                .config_object(CompanionKind::ConfigMap, "team-c", "settings")
                .expect("read"),
            None
        );
    }

    #[test]
    fn objects_are_deleted_by_kind_and_kept_on_disk() {
        let dir = state_dir();
        let mut store = seeded(dir.path());
        assert!(
            store
                .delete_config_object(CompanionKind::ConfigMap, "team-a", "settings")
                .expect("delete")
        );
        assert!(
            !store
                .delete_config_object(CompanionKind::ConfigMap, "team-a", "settings")
                .expect("delete")
        );
        assert!(
            store
                .config_object(CompanionKind::Secret, "team-a", "settings")
                .expect("read")
                .is_some(),
            "the Secret of the same name stays"
        );
        drop(store);
        let store = Store::open(dir.path()).expect("reopen");
        assert_eq!(
            names(
                store
                    .config_objects(CompanionKind::ConfigMap, None)
                    .expect("list")
            ),
            [
                ("team-a".to_owned(), "other".to_owned()),
                ("team-b".to_owned(), "settings".to_owned()),
            ],
            "kept on disk"
        );
    }

    #[test]
    fn an_unreadable_secret_is_reported_without_its_content() {
        let dir = state_dir();
        let store = Store::open(dir.path()).expect("open");
        store
            .conn
            .execute(
                "INSERT INTO config_objects (kind, namespace, name, created_at, document)
                 VALUES ('Secret', 'default', 'token', ?1, '{\"data\": \"s3cr3t\"}')",
                [timestamp_text(time(1))],
            )
            .expect("insert");
        let error = store
            .config_object(CompanionKind::Secret, "default", "token")
            .expect_err("not a Secret");
        let message = error.to_string();
        assert!(message.contains("Secret default/token"), "{message}");
        assert!(
            message.contains("not a Secret (line 1, column"),
            "{message}"
        );
        assert!(!message.contains("s3cr3t"), "{message}");
    }
}
