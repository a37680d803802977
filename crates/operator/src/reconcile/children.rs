//! The jobs' children as the operator's watches last saw them: a cache of the Pods and the
//! Services, decoded into what [`observe`](super::observe) reads ([`CachedPod`],
//! [`CachedService`]), per kind and namespace scope, that reconciles read instead of listing
//! from the API server.
//!
//! ## Why a cache
//! Listing a job's pods from the API server at every reconcile is exact, but costly where it
//! counts: a job of 1,000 replicas is woken by each of its pods' status changes, and each wake
//! listed 1,000 whole Pods (megabytes of JSON for the API server to encode and the operator to
//! decode and hold, the object's `managedFields` included). The watches that wake the reconciles
//! receive every change anyway; kept, they answer the same question from memory. A cached Pod
//! keeps only its identity, owner references and deletion mark, the replica slot its labels
//! name, its containers' names and the parts of its status that are read.
//!
//! ## Reading our own writes
//! A cache lags the API server. A reconcile that reads it right after the previous one created
//! or deleted children could plan them again: a creation twice (refused by the API server as
//! `AlreadyExists`, so never two objects, but a wasted call per child), and worse, a pod deleted
//! for a restart counted into the restart ledger twice. So a reconcile that wrote waits, before
//! it returns, until the cache shows what it wrote ([`Children::await_written`]): each created
//! child present with the uid the API server gave it, each deleted one gone or marked for
//! deletion. The wait is bounded ([`READ_YOUR_WRITES`]); should the watch be down that long,
//! the next reconcile repeats at most idempotent calls.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use tokio::sync::watch;
use tokio::time::Instant;
use trainctl_api::TrainingJob;

use super::cached_meta::ChildLabels;
use super::cached_pod::CachedPod;
use super::cached_service::CachedService;
use super::owners::Owners;

/// How long a reconcile that wrote waits at most for the cache to show its writes.
pub const READ_YOUR_WRITES: Duration = Duration::from_secs(5);

/// How often the cache is looked at while waiting for it.
const POLL: Duration = Duration::from_millis(10);

/// The caches of one controller's children (one kind, one namespace scope).
#[derive(Clone)]
pub struct Children {
    /// The pods, as [`CachedPod`]s, slimmed ([`CachedPod::slim`]).
    pub pods: Store<CachedPod>,
    /// The services, as [`CachedService`]s, slimmed ([`CachedService::slim`]).
    pub services: Store<CachedService>,
    /// The pods' keys by the uid of their controller.
    pub pod_owners: Owners<CachedPod>,
    /// The services' keys by the uid of their controller.
    pub service_owners: Owners<CachedService>,
    /// How long [`Children::await_written`] waits at most.
    pub read_your_writes: Duration,
    /// Turn true once the pods' and the services' caches have had their first list.
    ready: [watch::Receiver<bool>; 2],
}

/// What one reconcile wrote, for [`Children::await_written`] to wait for.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Written {
    /// The job's namespace, where its children are.
    pub namespace: String,
    /// Pods created: name, and the uid the API server gave it (`None`: it existed already).
    pub created_pods: Vec<(String, Option<String>)>,
    /// Services created, as for pods.
    pub created_services: Vec<(String, Option<String>)>,
    /// Pods deleted, by name.
    pub deleted_pods: Vec<String>,
    /// Services deleted, by name.
    pub deleted_services: Vec<String>,
}

impl Written {
    /// Whether nothing was written.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.created_pods.is_empty()
            && self.created_services.is_empty()
            && self.deleted_pods.is_empty()
            && self.deleted_services.is_empty()
    }
}

impl Children {
    /// Caches of pods and services, with their owners' indexes, ready once both `ready` turn
    /// true (see [`first_list`]).
    #[must_use]
    pub fn new(
        (pods, pod_owners): (Store<CachedPod>, Owners<CachedPod>),
        (services, service_owners): (Store<CachedService>, Owners<CachedService>),
        ready: [watch::Receiver<bool>; 2],
        read_your_writes: Duration,
    ) -> Children {
        Children {
            pods,
            services,
            pod_owners,
            service_owners,
            read_your_writes,
            ready,
        }
    }

    /// Resolves once both caches have had their first list; never when the watches are gone.
    ///
    /// Not kube's `Store::wait_until_ready`: its one-shot channel keeps the waker of the last
    /// task that waited only, and every reconcile waits here.
    pub async fn wait_until_ready(&self) {
        for ready in &self.ready {
            if ready.clone().wait_for(|ready| *ready).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// The job's pods and services as cached: those in its namespace that it controls (a
    /// controller owner reference with its uid; a job without a uid controls what carries its
    /// name label). [`observe`](super::observe) then keeps those that stand for one of its slots.
    ///
    /// Found through the owners' indexes ([`owners`](super::owners)), not by scanning the caches.
    #[must_use]
    pub fn of(&self, job: &TrainingJob) -> (Vec<Arc<CachedPod>>, Vec<Arc<CachedService>>) {
        let Some(uid) = job.metadata().uid.as_deref() else {
            let pods = self
                .pods
                .state_filter(|pod| is_childs(job, &pod.metadata, &pod.labels));
            let services = self
                .services
                .state_filter(|service| is_childs(job, &service.metadata, &service.labels));
            return (pods, services);
        };
        let pods = self
            .pod_owners
            .owned_by(uid)
            .iter()
            .filter_map(|key| self.pods.get(key))
            .filter(|pod| is_childs(job, &pod.metadata, &pod.labels))
            .collect();
        let services = self
            .service_owners
            .owned_by(uid)
            .iter()
            .filter_map(|key| self.services.get(key))
            .filter(|service| is_childs(job, &service.metadata, &service.labels))
            .collect();
        (pods, services)
    }

    /// Waits until the cache shows what `written` says, or [`Children::read_your_writes`] has
    /// passed (logged: the next reconcile may repeat calls).
    pub async fn await_written(&self, written: &Written) {
        if written.is_empty() {
            return;
        }
        let deadline = Instant::now() + self.read_your_writes;
        loop {
            if self.shows(written) {
                return;
            }
            if Instant::now() >= deadline {
                tracing::debug!(
                    namespace = %written.namespace,
                    "the watch has not shown this reconcile's writes yet; going on"
                );
                return;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Whether the cache shows everything `written` says.
    fn shows(&self, written: &Written) -> bool {
        let namespace = written.namespace.as_str();
        // Looked up by key (a hash lookup), not by scanning the store: a 1,000-replica job's
        // reconcile looks up its 2,000 children at every poll.
        let pod = |name: &str| self.pods.get(&ObjectRef::new(name).within(namespace));
        let service = |name: &str| self.services.get(&ObjectRef::new(name).within(namespace));
        let created = |seen: Option<&ObjectMeta>, uid: &Option<String>| {
            seen.is_some_and(|meta| uid.is_none() || meta.uid == *uid)
        };
        let deleted =
            |seen: Option<&ObjectMeta>| seen.is_none_or(|meta| meta.deletion_timestamp.is_some());
        written
            .created_pods
            .iter()
            .all(|(name, uid)| created(pod(name).as_deref().map(|pod| &pod.metadata), uid))
            && written.created_services.iter().all(|(name, uid)| {
                created(
                    service(name).as_deref().map(|service| &service.metadata),
                    uid,
                )
            })
            && written
                .deleted_pods
                .iter()
                .all(|name| deleted(pod(name).as_deref().map(|pod| &pod.metadata)))
            && written
                .deleted_services
                .iter()
                .all(|name| deleted(service(name).as_deref().map(|service| &service.metadata)))
    }
}

/// What a watch's stream (after its reflector) tells `ready`: true at the end of its first
/// list, when its store holds every object.
pub fn first_list<K>(ready: watch::Sender<bool>) -> impl FnMut(&watcher::Event<K>) {
    move |event| {
        if matches!(event, watcher::Event::InitDone) {
            ready.send_replace(true);
        }
    }
}

/// Whether the object of `metadata` and `labels` is one of `job`'s children (see
/// [`Children::of`]).
fn is_childs(job: &TrainingJob, metadata: &ObjectMeta, labels: &ChildLabels) -> bool {
    if metadata.namespace.as_deref() != Some(job.namespace()) {
        return false;
    }
    match job.metadata().uid.as_deref() {
        Some(uid) => metadata
            .owner_references
            .iter()
            .flatten()
            .any(|owner| owner.controller == Some(true) && owner.uid == uid),
        None => labels.job_name.as_deref() == Some(job.name()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{TF_JOB, children_holding, job, owned_pod, owned_service};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    #[test]
    fn a_jobs_children_are_those_it_controls_in_its_namespace() {
        let job = job(TF_JOB);
        let mine = owned_pod(&job, "mnist-worker-0");
        let mut elsewhere = owned_pod(&job, "mnist-worker-1");
        elsewhere.metadata.namespace = Some("other".to_owned());
        let mut orphan = owned_pod(&job, "mnist-chief-0");
        orphan.metadata.owner_references.as_mut().expect("owned")[0].uid = "old".to_owned();
        let children = children_holding(
            vec![mine, elsewhere, orphan],
            vec![owned_service(&job, "mnist-worker-0")],
        );
        let (pods, services) = children.of(&job);
        let names = |metas: Vec<&ObjectMeta>| -> Vec<String> {
            metas.iter().filter_map(|meta| meta.name.clone()).collect()
        };
        assert_eq!(
            names(pods.iter().map(|pod| &pod.metadata).collect()),
            ["mnist-worker-0"]
        );
        assert_eq!(
            names(services.iter().map(|service| &service.metadata).collect()),
            ["mnist-worker-0"]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_reconcile_waits_until_the_cache_shows_its_writes() {
        let job = job(TF_JOB);
        let mut created = owned_pod(&job, "mnist-worker-0");
        created.metadata.uid = Some("new".to_owned());
        let mut deleting = owned_pod(&job, "mnist-worker-1");
        deleting.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        let children = children_holding(vec![created.clone(), deleting], vec![]);
        let shown = Written {
            namespace: "ml".to_owned(),
            created_pods: vec![("mnist-worker-0".to_owned(), Some("new".to_owned()))],
            deleted_pods: vec!["mnist-worker-1".to_owned(), "mnist-chief-0".to_owned()],
            ..Written::default()
        };
        assert!(children.shows(&shown));
        let started = Instant::now();
        children.await_written(&shown).await;
        assert_eq!(started.elapsed(), Duration::ZERO);

        // A pod of the same name but an older uid is not the one created; a service never
        // seen is not there: the wait gives up after its bound.
        let children = Children {
            read_your_writes: Duration::from_secs(5),
            ..children_holding(vec![owned_pod(&job, "mnist-worker-0")], vec![])
        };
        for unseen in [
            Written {
                namespace: "ml".to_owned(),
                created_pods: vec![("mnist-worker-0".to_owned(), Some("new".to_owned()))],
                ..Written::default()
            },
            Written {
                namespace: "ml".to_owned(),
                created_services: vec![("mnist-worker-0".to_owned(), None)],
                ..Written::default()
            },
            Written {
                namespace: "ml".to_owned(),
                deleted_pods: vec!["mnist-worker-0".to_owned()],
                ..Written::default()
            },
        ] {
            assert!(!children.shows(&unseen), "{unseen:?}");
            let started = Instant::now();
            children.await_written(&unseen).await;
            assert_eq!(started.elapsed(), Duration::from_secs(5), "{unseen:?}");
        }
    }
}
