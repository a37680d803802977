//! The objects, in memory: one global `resourceVersion` that every change bumps, a bounded
//! history of changes that watches resume from, and a broadcast of each change to the open
//! watches.

mod change;
mod object;

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, watch};

pub use change::{Change, ChangeType};
use object::{Key, key, not_found, parse_continue, set_status, stamp_new, writable};

use crate::error::ApiError;
use crate::merge::merge_patch;
use crate::resources::Resource;
use crate::selector::{FieldSelector, LabelSelector};
use crate::target::Target;

/// The objects of one resource, and when they were created.
#[derive(Default)]
struct Collection {
    objects: BTreeMap<Key, Arc<Value>>,
    created_total: u64,
    first_created: Option<Duration>,
    last_created: Option<Duration>,
}

/// One page of a list.
#[derive(Debug)]
pub struct ListPage {
    /// The objects, by namespace and name.
    pub items: Vec<Arc<Value>>,
    /// The version to watch from after this list.
    pub resource_version: u64,
    /// Where the next page starts, if there is one.
    pub continue_token: Option<String>,
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFrom {
    /// `resourceVersion` unset or `0`: every existing object as `ADDED`, then the changes.
    Now,
    /// The changes after this version.
    Version(u64),
}

/// A watch, started.
pub struct WatchStart {
    /// The changes it begins with.
    pub first: Vec<Arc<Change>>,
    /// The changes that follow.
    pub changes: broadcast::Receiver<Arc<Change>>,
}

/// The in-memory API state.
pub struct Store {
    resource_version: u64,
    collections: BTreeMap<&'static Resource, Collection>,
    history: VecDeque<Arc<Change>>,
    history_limit: usize,
    /// A watch can resume from this version or any later one...
    oldest_resumable: u64,
    /// ... and, of these resources, from this one or any later one.
    oldest_resumable_of: BTreeMap<&'static Resource, u64>,
    changes: broadcast::Sender<Arc<Change>>,
    versions: watch::Sender<u64>,
    started: Instant,
}

/// How many changes an open watch may fall behind before it is closed (the client resumes it).
const WATCH_BACKLOG: usize = 16_384;

impl Store {
    /// An empty store that remembers `history_limit` changes for watches to resume from.
    #[must_use]
    pub fn new(history_limit: usize) -> Store {
        Store {
            resource_version: 1,
            collections: BTreeMap::new(),
            history: VecDeque::new(),
            history_limit,
            oldest_resumable: 1,
            oldest_resumable_of: BTreeMap::new(),
            changes: broadcast::channel(WATCH_BACKLOG).0,
            versions: watch::channel(1).0,
            started: Instant::now(),
        }
    }

    /// Hears the current `resourceVersion` each time it changes.
    #[must_use]
    pub fn versions(&self) -> watch::Receiver<u64> {
        self.versions.subscribe()
    }

    /// The object `target` names.
    pub fn get(&self, target: &Target) -> Result<Arc<Value>, ApiError> {
        let key = key(target)?;
        self.collection(target.resource)
            .and_then(|collection| collection.objects.get(&key))
            .cloned()
            .ok_or_else(|| not_found(target, &key.1))
    }

    /// A page of the objects of `target`'s collection that match the selectors, at most
    /// `limit` of them, after `continue_token`'s position.
    pub fn list(
        &self,
        target: &Target,
        labels: &LabelSelector,
        fields: &FieldSelector,
        limit: Option<usize>,
        continue_token: Option<&str>,
    ) -> Result<ListPage, ApiError> {
        let (resource_version, after) = match continue_token {
            Some(token) => {
                let (version, key) = parse_continue(token)?;
                (version, Some(key))
            }
            None => (self.resource_version, None),
        };
        let Some(collection) = self.collection(target.resource) else {
            return Ok(ListPage {
                items: Vec::new(),
                resource_version,
                continue_token: None,
            });
        };
        let start = match (&after, &target.namespace) {
            (Some(key), _) => Bound::Excluded(key.clone()),
            (None, Some(namespace)) => Bound::Included((namespace.clone(), String::new())),
            (None, None) => Bound::Unbounded,
        };
        let mut items = Vec::new();
        let mut last: Option<&Key> = None;
        let mut continue_token = None;
        for (key, object) in collection.objects.range((start, Bound::Unbounded)) {
            if target
                .namespace
                .as_ref()
                .is_some_and(|wanted| *wanted != key.0)
            {
                break;
            }
            if !(labels.matches(object) && fields.matches(object)) {
                continue;
            }
            if limit.is_some_and(|limit| items.len() == limit) {
                continue_token =
                    last.map(|(namespace, name)| format!("{resource_version}/{namespace}/{name}"));
                break;
            }
            items.push(Arc::clone(object));
            last = Some(key);
        }
        Ok(ListPage {
            items,
            resource_version,
            continue_token,
        })
    }

    /// Creates `object` in `target`'s collection (`POST`).
    pub fn create(&mut self, target: &Target, mut object: Value) -> Result<Arc<Value>, ApiError> {
        let Some(namespace) = target.namespace.clone() else {
            return Err(ApiError::MethodNotAllowed);
        };
        if !object.is_object() {
            return Err(ApiError::BadRequest("the body is not an object".to_owned()));
        }
        let name = object["metadata"]["name"]
            .as_str()
            .filter(|name| !name.is_empty())
            .ok_or_else(|| {
                ApiError::BadRequest("metadata.name: Required value: name is required".to_owned())
            })?
            .to_owned();
        if let Some(sent) = object["metadata"]["namespace"].as_str()
            && sent != namespace
        {
            return Err(ApiError::BadRequest(format!(
                "the namespace of the provided object ({sent}) does not match the namespace sent on the request ({namespace})"
            )));
        }
        let key = (namespace, name);
        if self
            .collection(target.resource)
            .is_some_and(|collection| collection.objects.contains_key(&key))
        {
            return Err(ApiError::AlreadyExists {
                plural: target.resource.plural,
                name: key.1,
            });
        }
        stamp_new(target.resource, &key, &mut object);
        let elapsed = self.started.elapsed();
        let collection = self.collections.entry(target.resource).or_default();
        collection.created_total += 1;
        collection.first_created.get_or_insert(elapsed);
        collection.last_created = Some(elapsed);
        Ok(self.commit(target.resource, key, ChangeType::Added, object))
    }

    /// Server-side apply (`PATCH` with `application/apply-patch+yaml`): creates the object, or
    /// merges the applied fields into it; on `/status`, the applied status replaces the stored
    /// one. Returns the object and whether it was created.
    pub fn apply(
        &mut self,
        target: &Target,
        applied: &Value,
    ) -> Result<(Arc<Value>, bool), ApiError> {
        let key = key(target)?;
        for field in ["apiVersion", "kind"] {
            if !applied[field].is_string() {
                return Err(ApiError::BadRequest(format!(
                    "{field} must be set in an applied configuration"
                )));
            }
        }
        if applied["metadata"]["name"]
            .as_str()
            .is_some_and(|name| name != key.1)
        {
            return Err(ApiError::BadRequest(
                "the name of the object does not match the name on the URL".to_owned(),
            ));
        }
        if target.status {
            let mut object = self.get(target)?.as_ref().clone();
            set_status(&mut object, applied.get("status").cloned());
            return Ok((self.update(target.resource, key, object), false));
        }
        let Ok(current) = self.get(target) else {
            let mut object = applied.clone();
            object["metadata"]["name"] = Value::String(key.1.clone());
            return Ok((self.create(target, object)?, true));
        };
        let mut object = current.as_ref().clone();
        merge_patch(&mut object, &writable(target.resource, applied));
        Ok((self.update(target.resource, key, object), false))
    }

    /// A JSON merge patch of the object, or of its status on `/status`.
    pub fn merge(&mut self, target: &Target, patch: &Value) -> Result<Arc<Value>, ApiError> {
        let key = key(target)?;
        let mut object = self.get(target)?.as_ref().clone();
        if target.status {
            let mut status = object.get("status").cloned().unwrap_or(Value::Null);
            merge_patch(&mut status, &patch["status"]);
            set_status(&mut object, Some(status));
        } else {
            merge_patch(&mut object, &writable(target.resource, patch));
        }
        Ok(self.update(target.resource, key, object))
    }

    /// Replaces the object, or its status on `/status` (`PUT`); a `resourceVersion` in the
    /// body must be the stored one.
    pub fn replace(&mut self, target: &Target, body: &Value) -> Result<Arc<Value>, ApiError> {
        let key = key(target)?;
        let current = self.get(target)?;
        if let Some(sent) = body["metadata"]["resourceVersion"].as_str()
            && sent != current["metadata"]["resourceVersion"]
        {
            return Err(ApiError::Conflict {
                plural: target.resource.plural,
                name: key.1,
            });
        }
        let mut object = current.as_ref().clone();
        if target.status {
            set_status(&mut object, body.get("status").cloned());
        } else {
            let mut replaced = writable(target.resource, body);
            for field in [
                "uid",
                "creationTimestamp",
                "generation",
                "namespace",
                "name",
            ] {
                replaced["metadata"][field] = current["metadata"][field].clone();
            }
            if target.resource.status_subresource {
                set_status(&mut replaced, current.get("status").cloned());
            }
            object = replaced;
        }
        Ok(self.update(target.resource, key, object))
    }

    /// Deletes the object at once (no grace period, no finalizers), then, as the garbage
    /// collector would in the background, every object it owns, transitively.
    pub fn delete(&mut self, target: &Target) -> Result<Arc<Value>, ApiError> {
        let key = key(target)?;
        let removed = self
            .collections
            .get_mut(target.resource)
            .and_then(|collection| collection.objects.remove(&key))
            .ok_or_else(|| not_found(target, &key.1))?;
        let uid = removed["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let deleted = self.commit(
            target.resource,
            key.clone(),
            ChangeType::Deleted,
            removed.as_ref().clone(),
        );
        let mut owners = vec![(key.0, uid)];
        while let Some((namespace, owner)) = owners.pop() {
            for (resource, key) in self.owned_by(&namespace, &owner) {
                if let Some(object) = self
                    .collections
                    .get_mut(resource)
                    .and_then(|collection| collection.objects.remove(&key))
                {
                    let uid = object["metadata"]["uid"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    self.commit(
                        resource,
                        key.clone(),
                        ChangeType::Deleted,
                        object.as_ref().clone(),
                    );
                    owners.push((key.0, uid));
                }
            }
        }
        Ok(deleted)
    }

    /// Starts a watch: the changes it begins with, and the receiver of those that follow.
    pub fn watch(&self, target: &Target, from: WatchFrom) -> Result<WatchStart, ApiError> {
        let first = match from {
            WatchFrom::Now => self
                .collection(target.resource)
                .map(|collection| {
                    collection
                        .objects
                        .values()
                        .map(|object| {
                            Arc::new(Change {
                                resource: target.resource,
                                type_: ChangeType::Added,
                                object: Arc::clone(object),
                                previous: None,
                            })
                        })
                        .collect()
                })
                .unwrap_or_default(),
            WatchFrom::Version(version) if version < self.oldest_resumable(target.resource) => {
                return Err(ApiError::Expired {
                    requested: version,
                    oldest: self.oldest_resumable(target.resource),
                });
            }
            WatchFrom::Version(version) => self
                .history
                .iter()
                .filter(|change| change.version() > version)
                .cloned()
                .collect(),
        };
        Ok(WatchStart {
            first,
            changes: self.changes.subscribe(),
        })
    }

    /// Forgets the history: a watch resuming from an earlier version gets `410 Gone`, as after
    /// an etcd compaction.
    pub fn forget_history(&mut self) {
        self.history.clear();
        self.oldest_resumable = self.resource_version;
    }

    /// Forgets the history of one resource, as when its watch cache starts afresh: a watch of
    /// it resuming from an earlier version gets `410 Gone`.
    pub fn forget_history_of(&mut self, resource: &'static Resource) {
        self.oldest_resumable_of
            .insert(resource, self.resource_version);
    }

    fn oldest_resumable(&self, resource: &'static Resource) -> u64 {
        self.oldest_resumable_of
            .get(resource)
            .map_or(self.oldest_resumable, |oldest| {
                (*oldest).max(self.oldest_resumable)
            })
    }

    /// The current `resourceVersion`.
    #[must_use]
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    /// Per resource: how many objects exist, how many were created in all, and when the first
    /// and the last were created (milliseconds since the server started).
    #[must_use]
    pub fn statistics(&self) -> Value {
        let millis = |at: Option<Duration>| at.map(|at| at.as_secs_f64() * 1000.0);
        let resources: Map<String, Value> = self
            .collections
            .iter()
            .map(|(resource, collection)| {
                (
                    resource.id(),
                    json!({
                        "count": collection.objects.len(),
                        "createdTotal": collection.created_total,
                        "firstCreatedMs": millis(collection.first_created),
                        "lastCreatedMs": millis(collection.last_created),
                    }),
                )
            })
            .collect();
        json!({"resourceVersion": self.resource_version, "resources": resources})
    }

    fn collection(&self, resource: &'static Resource) -> Option<&Collection> {
        self.collections.get(resource)
    }

    /// Stores a changed object, unless nothing changed (then nothing is bumped or sent, as
    /// the API server does for a no-op write).
    fn update(&mut self, resource: &'static Resource, key: Key, mut object: Value) -> Arc<Value> {
        let current = self
            .collections
            .get(resource)
            .and_then(|collection| collection.objects.get(&key))
            .cloned();
        if let Some(current) = current {
            if *current == object {
                return current;
            }
            if current.get("spec") != object.get("spec") {
                let generation = current["metadata"]["generation"].as_u64().unwrap_or(1);
                object["metadata"]["generation"] = json!(generation + 1);
            }
        }
        self.commit(resource, key, ChangeType::Modified, object)
    }

    /// Bumps the version, stores (or, for a deletion, has removed) the object, remembers the
    /// change and sends it to the watches.
    fn commit(
        &mut self,
        resource: &'static Resource,
        key: Key,
        type_: ChangeType,
        mut object: Value,
    ) -> Arc<Value> {
        self.resource_version += 1;
        object["metadata"]["resourceVersion"] = Value::String(self.resource_version.to_string());
        let object = Arc::new(object);
        let previous = if type_ == ChangeType::Deleted {
            None
        } else {
            self.collections
                .entry(resource)
                .or_default()
                .objects
                .insert(key, Arc::clone(&object))
        };
        let change = Arc::new(Change {
            resource,
            type_,
            object: Arc::clone(&object),
            previous,
        });
        self.history.push_back(Arc::clone(&change));
        while self.history.len() > self.history_limit {
            if let Some(forgotten) = self.history.pop_front() {
                self.oldest_resumable = forgotten.version();
            }
        }
        // No open watch is not an error.
        let _ = self.changes.send(change);
        self.versions.send_replace(self.resource_version);
        object
    }

    /// The objects of `namespace` with an owner reference to `uid`.
    fn owned_by(&self, namespace: &str, uid: &str) -> Vec<(&'static Resource, Key)> {
        let mut owned = Vec::new();
        for (resource, collection) in &self.collections {
            for ((object_namespace, name), object) in &collection.objects {
                let owners = object["metadata"]["ownerReferences"].as_array();
                if object_namespace == namespace
                    && owners.is_some_and(|owners| owners.iter().any(|owner| owner["uid"] == uid))
                {
                    owned.push((*resource, (object_namespace.clone(), name.clone())));
                }
            }
        }
        owned
    }
}
