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
use std::marker::PhantomData;
use std::sync::{Arc, PoisonError, RwLock};

use kube::Resource;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;

/// The keys of the cached objects of kind `K`, by the uid of their controller.
pub struct Owners<K: Resource<DynamicType = ()>> {
    index: Arc<RwLock<Indexes>>,
    kind: PhantomData<fn() -> K>,
}

impl<K: Resource<DynamicType = ()>> Clone for Owners<K> {
    fn clone(&self) -> Self {
        Owners {
            index: Arc::clone(&self.index),
            kind: PhantomData,
        }
    }
}

impl<K: Resource<DynamicType = ()>> Default for Owners<K> {
    fn default() -> Self {
        Owners {
            index: Arc::default(),
            kind: PhantomData,
        }
    }
}

/// The index in use, and the one a re-list is building.
#[derive(Default)]
struct Indexes {
    current: Index,
    relisting: Option<Index>,
}

/// An object filed in the index: its namespace (empty for none) and its name.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Child {
    namespace: Arc<str>,
    name: Arc<str>,
}

/// Children by owner, and each child's owner (to move or remove it).
///
/// Each name, namespace and owner's uid is held once and shared, not as a whole `ObjectRef`
/// (four strings, a resource version and a uid among them) in both maps: with 10,000 pods and
/// 10,000 services that was 14 MiB, about 700 bytes a child, now about 300.
#[derive(Default)]
struct Index {
    by_owner: HashMap<Arc<str>, HashSet<Child>>,
    owner_of: HashMap<Child, Arc<str>>,
    namespaces: HashSet<Arc<str>>,
}

impl Index {
    /// Files the object named `name` in `namespace` under `owner` (none: under no one).
    fn put(&mut self, namespace: &str, name: &str, owner: Option<&str>) {
        let child = self.child(namespace, name);
        if self.owner_of.get(&child).map(AsRef::as_ref) == owner {
            return;
        }
        self.remove(&child);
        let Some(owner) = owner else {
            return;
        };
        let owner = match self.by_owner.get_key_value(owner) {
            Some((owner, _)) => Arc::clone(owner),
            None => Arc::from(owner),
        };
        self.by_owner
            .entry(Arc::clone(&owner))
            .or_default()
            .insert(child.clone());
        self.owner_of.insert(child, owner);
    }

    fn remove(&mut self, child: &Child) {
        let Some(owner) = self.owner_of.remove(child) else {
            return;
        };
        if let Some(children) = self.by_owner.get_mut(&owner) {
            children.remove(child);
            if children.is_empty() {
                self.by_owner.remove(&owner);
            }
        }
    }

    /// The child named so, sharing the name filed already and the namespace's one copy.
    fn child(&mut self, namespace: &str, name: &str) -> Child {
        let namespace = if let Some(namespace) = self.namespaces.get(namespace) {
            Arc::clone(namespace)
        } else {
            let namespace: Arc<str> = Arc::from(namespace);
            self.namespaces.insert(Arc::clone(&namespace));
            namespace
        };
        let probe = Child {
            namespace,
            name: Arc::from(name),
        };
        match self.owner_of.get_key_value(&probe) {
            Some((filed, _)) => filed.clone(),
            None => probe,
        }
    }
}

impl<K: Resource<DynamicType = ()>> Owners<K> {
    /// Follows one event of the watch whose store this index goes with.
    pub fn observe(&self, event: &watcher::Event<K>) {
        let mut indexes = self.index.write().unwrap_or_else(PoisonError::into_inner);
        match event {
            watcher::Event::Apply(object) => put(&mut indexes.current, object),
            watcher::Event::Delete(object) => {
                let meta = object.meta();
                let child = indexes.current.child(
                    meta.namespace.as_deref().unwrap_or_default(),
                    meta.name.as_deref().unwrap_or_default(),
                );
                indexes.current.remove(&child);
            }
            watcher::Event::Init => indexes.relisting = Some(Index::default()),
            watcher::Event::InitApply(object) => {
                if let Some(relisting) = indexes.relisting.as_mut() {
                    put(relisting, object);
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
            .map(|children| {
                children
                    .iter()
                    .map(|child| {
                        let key = ObjectRef::new(&child.name);
                        if child.namespace.is_empty() {
                            key
                        } else {
                            key.within(&child.namespace)
                        }
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Files `object` under its controller.
fn put<K: Resource>(index: &mut Index, object: &K) {
    let meta = object.meta();
    index.put(
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
        controller(object),
    );
}

/// The uid of the object's controller (the owner reference with `controller: true`).
fn controller<K: Resource>(object: &K) -> Option<&str> {
    object
        .meta()
        .owner_references
        .iter()
        .flatten()
        .find(|owner| owner.controller == Some(true))
        .map(|owner| owner.uid.as_str())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
    use kube::runtime::watcher::Event;

    use super::Owners;

    fn pod(name: &str, owner: Option<&str>, controller: bool) -> Pod {
        pod_in("ml", name, owner, controller)
    }

    fn pod_in(namespace: &str, name: &str, owner: Option<&str>, controller: bool) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some(namespace.to_owned()),
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
    fn the_same_name_in_two_namespaces_is_two_children() {
        let owners = Owners::default();
        owners.observe(&Event::Apply(pod_in("ml", "a-0", Some("a"), true)));
        owners.observe(&Event::Apply(pod_in("dev", "a-0", Some("a"), true)));
        let keys = |owners: &Owners<Pod>| {
            let mut keys: Vec<String> = owners
                .owned_by("a")
                .into_iter()
                .map(|key| format!("{}/{}", key.namespace.unwrap_or_default(), key.name))
                .collect();
            keys.sort();
            keys
        };
        assert_eq!(keys(&owners), ["dev/a-0", "ml/a-0"]);
        owners.observe(&Event::Delete(pod_in("dev", "a-0", Some("a"), true)));
        assert_eq!(keys(&owners), ["ml/a-0"]);
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
