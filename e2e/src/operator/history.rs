//! A [`History`]: every pod or service (or other namespaced kind) a namespace holds, watched
//! from before a test acts, through relists and API server restarts, so that the test can prove
//! that each was created once: one uid per name, none seen going.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt as _;
use k8s_openapi::NamespaceResourceScope;
use kube::api::{Api, PartialObjectMeta};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Client, Resource, ResourceExt as _};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use super::within_for;

/// What a [`History`] saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// Every uid each name ever had, in the order first seen.
    pub uids: BTreeMap<String, Vec<String>>,
    /// The objects there now, by name: their uid.
    pub live: BTreeMap<String, String>,
    /// The objects seen going (deleted, or missing from a relist), as `(name, uid)`.
    pub gone: Vec<(String, String)>,
}

impl Record {
    fn seen(&mut self, name: String, uid: String) {
        let uids = self.uids.entry(name).or_default();
        if !uids.contains(&uid) {
            uids.push(uid);
        }
    }

    /// Fails the test unless the objects there are exactly `expected`, none was ever seen
    /// going, and each name had a single uid: each was created once.
    pub fn assert_created_once(&self, what: &str, expected: &BTreeSet<String>) {
        let first = |names: Vec<&String>| names.into_iter().take(10).cloned().collect::<Vec<_>>();
        assert!(
            self.gone.is_empty(),
            "{what} went: {:?}",
            &self.gone[..self.gone.len().min(10)]
        );
        let twice: Vec<&String> = self
            .uids
            .iter()
            .filter(|(_, uids)| uids.len() > 1)
            .map(|(name, _)| name)
            .collect();
        assert!(
            twice.is_empty(),
            "{} {what} were re-created, e.g. {:?}",
            twice.len(),
            first(twice)
        );
        let live: BTreeSet<String> = self.live.keys().cloned().collect();
        let missing: Vec<&String> = expected.difference(&live).collect();
        let extra: Vec<&String> = live.difference(expected).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{what}: {} missing (e.g. {:?}), {} unexpected (e.g. {:?})",
            missing.len(),
            first(missing),
            extra.len(),
            first(extra)
        );
    }
}

/// How far a [`History`] has got.
#[derive(Debug, Clone, Copy, Default)]
struct Progress {
    listed: bool,
    live: usize,
}

/// Every object of kind `K` a namespace holds, watched (metadata only, through relists and
/// API server restarts) from before the test acts until it is dropped.
#[derive(Debug)]
pub struct History {
    what: &'static str,
    record: Arc<Mutex<Record>>,
    progress: watch::Receiver<Progress>,
    task: tokio::task::JoinHandle<()>,
}

impl History {
    /// Starts watching the `K`s of `namespace` (called `what` in failures) and waits for the
    /// first list.
    pub async fn start<K>(client: &Client, namespace: &str, what: &'static str) -> History
    where
        K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + Debug
            + Send
            + Sync
            + 'static,
    {
        let api: Api<PartialObjectMeta<K>> = Api::namespaced(client.clone(), namespace);
        let record = Arc::new(Mutex::new(Record::default()));
        let (report, progress) = watch::channel(Progress::default());
        let shared = Arc::clone(&record);
        let task = tokio::spawn(async move {
            let mut events =
                std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff());
            let mut relisted: Option<BTreeMap<String, String>> = None;
            while let Some(event) = events.next().await {
                let Ok(event) = event else { continue };
                let mut record = shared.lock().unwrap_or_else(PoisonError::into_inner);
                let key = |object: &PartialObjectMeta<K>| {
                    (object.name_any(), object.uid().unwrap_or_default())
                };
                match event {
                    watcher::Event::Init => relisted = Some(BTreeMap::new()),
                    watcher::Event::InitApply(object) => {
                        let (name, uid) = key(&object);
                        record.seen(name.clone(), uid.clone());
                        relisted.get_or_insert_default().insert(name, uid);
                    }
                    watcher::Event::InitDone => {
                        let listed = relisted.take().unwrap_or_default();
                        let went: Vec<(String, String)> = record
                            .live
                            .iter()
                            .filter(|(name, uid)| listed.get(*name) != Some(uid))
                            .map(|(name, uid)| (name.clone(), uid.clone()))
                            .collect();
                        record.gone.extend(went);
                        record.live = listed;
                    }
                    watcher::Event::Apply(object) => {
                        let (name, uid) = key(&object);
                        record.seen(name.clone(), uid.clone());
                        if let Some(old) = record.live.insert(name.clone(), uid.clone())
                            && old != uid
                        {
                            record.gone.push((name, old));
                        }
                    }
                    watcher::Event::Delete(object) => {
                        let (name, uid) = key(&object);
                        record.live.remove(&name);
                        record.gone.push((name, uid));
                    }
                }
                let live = record.live.len();
                drop(record);
                report.send_modify(|progress| {
                    progress.live = live;
                    progress.listed |= relisted.is_none();
                });
            }
        });
        let mut history = History {
            what,
            record,
            progress,
            task,
        };
        history
            .until(Duration::from_secs(30), "the first list", |_| true)
            .await;
        history
    }

    /// Waits at most `limit` (after the first list) until `condition` holds of the number of
    /// objects there.
    pub async fn until(&mut self, limit: Duration, what: &str, condition: impl Fn(usize) -> bool) {
        let what = format!("{}: {what}", self.what);
        within_for(
            limit,
            &what,
            self.progress
                .wait_for(|progress| progress.listed && condition(progress.live)),
        )
        .await
        .expect("the history's watch runs");
    }

    /// Waits at most `limit` until the object `name` there is the one of `uid`.
    pub async fn until_live(&mut self, limit: Duration, name: &str, uid: &str) {
        let what = format!("{}: {name} of uid {uid}", self.what);
        let record = Arc::clone(&self.record);
        let is_live = move || {
            record
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .live
                .get(name)
                .is_some_and(|live| live == uid)
        };
        within_for(limit, &what, async {
            while !is_live() {
                self.progress
                    .changed()
                    .await
                    .expect("the history's watch runs");
            }
        })
        .await;
    }

    /// How many objects are there now.
    #[must_use]
    pub fn live(&self) -> usize {
        self.progress.borrow().live
    }

    /// What it has seen so far.
    #[must_use]
    pub fn record(&self) -> Record {
        self.record
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for History {
    fn drop(&mut self) {
        self.task.abort();
    }
}
