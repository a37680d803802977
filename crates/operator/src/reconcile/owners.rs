//! An index of cached children by the uid of their controller, kept beside a watch's store.
//!
//! A reconcile reads its job's children from the caches ([`children`](super::children)). Finding
//! them by scanning a cache costs a look at every pod of every job of the kind, at every reconcile:
//! with a hundred jobs, each woken many times while its pods start, that is millions of
//! owner-reference comparisons, the largest part of the operator's CPU (taken from the API
//! server it may share a machine with). The index answers with the keys of the job's own
//! children, which are then read from the store by key.
//!
//! It follows the watch's events as the store does: a change adds or moves a key, a deletion
//! removes it, and a re-list builds a new index that replaces the old one when the list is
//! complete (as the store swaps in its new state then).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, PoisonError, RwLock};

use kube::Resource;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;

/// The keys of the cached objects of kind `K`, by the uid of their controller.
pub struct Owners<K: Resource<DynamicType = ()>> {
    index: Arc<RwLock<Indexes<K>>>,
}

impl<K: Resource<DynamicType = ()>> Clone for Owners<K> {
    fn clone(&self) -> Self {
        Owners {
            index: Arc::clone(&self.index),
        }
    }
}

impl<K: Resource<DynamicType = ()>> Default for Owners<K> {
    fn default() -> Self {
        Owners {
            index: Arc::default(),
        }
    }
}

/// The index in use, and the one a re-list is building.
struct Indexes<K: Resource<DynamicType = ()>> {
    current: Index<K>,
    relisting: Option<Index<K>>,
}

impl<K: Resource<DynamicType = ()>> Default for Indexes<K> {
    fn default() -> Self {
        Indexes {
            current: Index::default(),
            relisting: None,
        }
    }
}

/// Keys by owner, and each key's owner (to move or remove it).
struct Index<K: Resource<DynamicType = ()>> {
    by_owner: HashMap<String, HashSet<ObjectRef<K>>>,
    owner_of: HashMap<ObjectRef<K>, String>,
}

impl<K: Resource<DynamicType = ()>> Default for Index<K> {
    fn default() -> Self {
        Index {
            by_owner: HashMap::new(),
            owner_of: HashMap::new(),
        }
    }
}

impl<K: Resource<DynamicType = ()>> Index<K> {
    /// Files `key` under `owner` (none: under no one).
    fn put(&mut self, key: ObjectRef<K>, owner: Option<String>) {
        if self.owner_of.get(&key) == owner.as_ref() {
            return;
        }
        self.remove(&key);
        if let Some(owner) = owner {
            self.by_owner
                .entry(owner.clone())
                .or_default()
                .insert(key.clone());
            self.owner_of.insert(key, owner);
        }
    }

    fn remove(&mut self, key: &ObjectRef<K>) {
        let Some(owner) = self.owner_of.remove(key) else {
            return;
        };
        if let Some(keys) = self.by_owner.get_mut(&owner) {
            keys.remove(key);
            if keys.is_empty() {
                self.by_owner.remove(&owner);
            }
        }
    }
}

impl<K: Resource<DynamicType = ()>> Owners<K> {
    /// Follows one event of the watch whose store this index goes with.
    pub fn observe(&self, event: &watcher::Event<K>) {
        let mut indexes = self.index.write().unwrap_or_else(PoisonError::into_inner);
        match event {
            watcher::Event::Apply(object) => indexes.current.put(key(object), controller(object)),
            watcher::Event::Delete(object) => indexes.current.remove(&key(object)),
            watcher::Event::Init => indexes.relisting = Some(Index::default()),
            watcher::Event::InitApply(object) => {
                if let Some(relisting) = indexes.relisting.as_mut() {
                    relisting.put(key(object), controller(object));
                }
            }
            watcher::Event::InitDone => {
                if let Some(relisted) = indexes.relisting.take() {
                    indexes.current = relisted;
                }
            }
        }
    }

    /// The keys of the objects whose controller has `uid`.
    #[must_use]
    pub fn owned_by(&self, uid: &str) -> Vec<ObjectRef<K>> {
        let indexes = self.index.read().unwrap_or_else(PoisonError::into_inner);
        indexes
            .current
            .by_owner
            .get(uid)
            .map(|keys| keys.iter().cloned().collect())
            .unwrap_or_default()
    }
}

fn key<K: Resource<DynamicType = ()>>(object: &K) -> ObjectRef<K> {
    ObjectRef::from_obj(object)
}

/// The uid of the object's controller (the owner reference with `controller: true`).
fn controller<K: Resource>(object: &K) -> Option<String> {
    object
        .meta()
        .owner_references
        .iter()
        .flatten()
        .find(|owner| owner.controller == Some(true))
        .map(|owner| owner.uid.clone())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
    use kube::runtime::watcher::Event;

    use super::Owners;

    fn pod(name: &str, owner: Option<&str>, controller: bool) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some("ml".to_owned()),
                owner_references: owner.map(|uid| {
                    vec![OwnerReference {
                        uid: uid.to_owned(),
                        controller: Some(controller),
                        ..OwnerReference::default()
                    }]
                }),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }
    }

    fn names(owners: &Owners<Pod>, uid: &str) -> Vec<String> {
        let mut names: Vec<String> = owners
            .owned_by(uid)
            .into_iter()
            .map(|key| key.name)
            .collect();
        names.sort();
        names
    }

    #[test]
    fn changes_and_deletions_move_keys_between_owners() {
        let owners = Owners::default();
        owners.observe(&Event::Apply(pod("a-0", Some("a"), true)));
        owners.observe(&Event::Apply(pod("a-1", Some("a"), true)));
        owners.observe(&Event::Apply(pod("b-0", Some("b"), true)));
        // An owner that is not the controller does not count.
        owners.observe(&Event::Apply(pod("c-0", Some("a"), false)));
        assert_eq!(names(&owners, "a"), ["a-0", "a-1"]);
        assert_eq!(names(&owners, "b"), ["b-0"]);

        // Adopted by another controller, orphaned, deleted.
        owners.observe(&Event::Apply(pod("a-1", Some("b"), true)));
        owners.observe(&Event::Apply(pod("b-0", None, false)));
        owners.observe(&Event::Delete(pod("a-0", Some("a"), true)));
        assert_eq!(names(&owners, "a"), Vec::<String>::new());
        assert_eq!(names(&owners, "b"), ["a-1"]);
    }

    #[test]
    fn a_relist_replaces_the_index_once_complete() {
        let owners = Owners::default();
        owners.observe(&Event::Apply(pod("gone", Some("a"), true)));
        owners.observe(&Event::Init);
        owners.observe(&Event::InitApply(pod("new", Some("a"), true)));
        // Until the list is complete, the old index answers (as the store does).
        assert_eq!(names(&owners, "a"), ["gone"]);
        owners.observe(&Event::InitDone);
        assert_eq!(names(&owners, "a"), ["new"]);
    }
}
