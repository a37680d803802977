//! When the dashboard's pages should be read again: [`follow`] watches the cluster's jobs (each
//! kind), their pods and the events, and bumps a counter at each change; the event streams
//! wait on it. It also bumps it every [`RESYNC`], so that what no watch sees (a watch RBAC
//! does not allow, a CRD installed later) still shows.

use std::fmt::Debug;
use std::time::Duration;

use futures_util::stream::{BoxStream, select_all};
use futures_util::{StreamExt, future};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DynamicObject};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use trainctl_api::JobKind;
use trainctl_engine::naming::JOB_NAME_LABEL;
use trainctl_operator::job::api_resource;

use crate::cluster::Cluster;

/// How often the pages are read again when no watch says anything.
pub const RESYNC: Duration = Duration::from_secs(10);

/// How long changes are let gather after one, before the next bump: a job's change comes with
/// its pods' and events'.
const SETTLE: Duration = Duration::from_millis(200);

/// Bumps `changes` at each change of the jobs, training pods and events of `namespace` (every
/// namespace when `None`), at most every [`SETTLE`], and at least every [`RESYNC`]. A watch
/// that fails (a CRD not installed, a verb RBAC refuses) is tried again with back-off. Runs
/// until aborted.
pub async fn follow(cluster: Cluster, namespace: Option<String>, changes: watch::Sender<u64>) {
    let client = cluster.client;
    let namespace = namespace.as_deref();
    let mut streams: Vec<BoxStream<'static, ()>> = JobKind::ALL
        .iter()
        .map(|&kind| {
            let resource = api_resource(kind);
            let jobs: Api<DynamicObject> = match namespace {
                Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
                None => Api::all_with(client.clone(), &resource),
            };
            touches(jobs, watcher::Config::default())
        })
        .collect();
    let pods: Api<Pod> = scoped(&client, namespace);
    streams.push(touches(
        pods,
        watcher::Config::default().labels(JOB_NAME_LABEL),
    ));
    let events: Api<Event> = scoped(&client, namespace);
    streams.push(touches(events, watcher::Config::default()));
    let mut touched = select_all(streams);
    let mut resync = tokio::time::interval(RESYNC);
    loop {
        tokio::select! {
            Some(()) = touched.next() => {}
            _ = resync.tick() => {}
        }
        changes.send_modify(|count| *count = count.wrapping_add(1));
        tokio::time::sleep(SETTLE).await;
    }
}

/// The API of `K` in `namespace`, or in every namespace.
fn scoped<K>(client: &kube::Client, namespace: Option<&str>) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    match namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    }
}

/// One item for each change a watch of `api` sees (a failed watch is retried with back-off,
/// and says nothing).
fn touches<K>(api: Api<K>, config: watcher::Config) -> BoxStream<'static, ()>
where
    K: kube::Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    watcher(api, config)
        .default_backoff()
        .filter_map(|event| future::ready(event.ok().map(drop)))
        .boxed()
}
