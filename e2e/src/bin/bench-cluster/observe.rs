//! What the driver watches: the namespace's Pods, Services and Events (metadata only) and its
//! TFJobs, each change timed by the driver's clock from `t0`.

use std::collections::{BTreeMap, BTreeSet};
use std::pin::Pin;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use futures_util::stream::{self, Stream, StreamExt as _};
use k8s_openapi::api::core::v1::{Event as CoreEvent, Pod, Service};
use kube::api::{Api, DynamicObject, PartialObjectMeta};
use kube::core::NamespaceResourceScope;
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event};
use kube::{Client, Resource, ResourceExt as _};
use serde::de::DeserializeOwned;
use trainctl_api::JobKind;
use trainctl_operator::job;

/// One watched change.
#[derive(Debug)]
enum Seen {
    /// A pod exists (added or changed).
    Pod(String),
    /// A service exists.
    Service(String),
    /// A TFJob exists, with or without `Running=True`.
    Job { name: String, running: bool },
    /// An Event object exists (the subjects' events about the jobs and their children).
    Event(String),
    /// Anything else: a deletion.
    Other,
    /// A watch's initial list is complete.
    Synced,
    /// A watch failed (it retries with a back-off).
    Failed(String),
}

/// The watches of a namespace, merged.
pub struct Watches {
    stream: Pin<Box<dyn Stream<Item = Seen> + Send>>,
}

/// When a subject is done.
#[derive(Debug, Clone, Copy)]
pub struct Expected {
    /// Pods, and as many Services.
    pub objects: usize,
    /// Jobs that must be `Running` (0 for the floor).
    pub running_jobs: usize,
}

/// How long to wait.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// From `t0` until done.
    pub timeout: Duration,
    /// Quiet time after done that counts as settled.
    pub settle: Duration,
}

/// At most this long is waited for the quiet time after done.
const SETTLE_LIMIT: Duration = Duration::from_secs(120);

/// The timeline of one measurement; every time is from `t0`.
#[derive(Debug, Default)]
pub struct Observed {
    /// When each pod was first seen.
    pub pods: BTreeMap<String, Duration>,
    /// When each service was first seen.
    pub services: BTreeMap<String, Duration>,
    /// When each job was first seen `Running`.
    pub running: BTreeMap<String, Duration>,
    /// The Event objects seen.
    pub events: BTreeSet<String>,
    /// When everything expected was there; `None` on a timeout.
    pub done: Option<Duration>,
    /// When the quiet time after done began (the last change watched); `None` if it never came.
    pub settled: Option<Duration>,
    /// Watch failures (each retried).
    pub watch_errors: Vec<String>,
}

impl Watches {
    /// Starts the watches and waits until each has listed what exists.
    pub async fn start(client: &Client, namespace: &str) -> Result<Watches> {
        let jobs: Api<DynamicObject> = Api::namespaced_with(
            client.clone(),
            namespace,
            &job::api_resource(JobKind::TFJob),
        );
        let streams: Vec<Pin<Box<dyn Stream<Item = Seen> + Send>>> = vec![
            meta::<Pod>(client, namespace, Seen::Pod),
            meta::<Service>(client, namespace, Seen::Service),
            meta::<CoreEvent>(client, namespace, Seen::Event),
            Box::pin(
                watcher::watcher(jobs, watcher::Config::default())
                    .default_backoff()
                    .map(|event| {
                        seen(event, |job| Seen::Job {
                            running: is_running(&job),
                            name: job.name_any(),
                        })
                    }),
            ),
        ];
        let watches = streams.len();
        let mut stream = Box::pin(stream::select_all(streams));
        let mut synced = 0;
        while synced < watches {
            let next = tokio::time::timeout(Duration::from_secs(60), stream.next())
                .await
                .context("the watches did not list within 60 s")?;
            match next.context("the watches ended")? {
                Seen::Synced => synced += 1,
                Seen::Failed(error) => eprintln!("    watch: {error}"),
                _ => {}
            }
        }
        Ok(Watches { stream })
    }

    /// Watches from `t0` until `expected` is there (or `limits.timeout` passed), then until
    /// nothing changed for `limits.settle`.
    pub async fn observe(&mut self, t0: Instant, expected: &Expected, limits: Limits) -> Observed {
        let mut observed = Observed::default();
        let deadline = t0 + limits.timeout;
        while observed.done.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(Some(seen)) = tokio::time::timeout(left, self.stream.next()).await else {
                return observed;
            };
            observed.record(t0, seen);
            if observed.pods.len() >= expected.objects
                && observed.services.len() >= expected.objects
                && observed.running.len() >= expected.running_jobs
            {
                observed.done = Some(t0.elapsed());
            }
        }
        let mut last_change = Instant::now();
        let settle_deadline = last_change + SETTLE_LIMIT;
        while Instant::now() < settle_deadline {
            match tokio::time::timeout(limits.settle, self.stream.next()).await {
                Err(_) => {
                    observed.settled = Some(last_change - t0);
                    break;
                }
                Ok(Some(seen)) => {
                    last_change = Instant::now();
                    observed.record(t0, seen);
                }
                Ok(None) => break,
            }
        }
        observed
    }
}

impl Observed {
    fn record(&mut self, t0: Instant, seen: Seen) {
        let now = t0.elapsed();
        match seen {
            Seen::Pod(name) => {
                self.pods.entry(name).or_insert(now);
            }
            Seen::Service(name) => {
                self.services.entry(name).or_insert(now);
            }
            Seen::Job {
                name,
                running: true,
            } => {
                self.running.entry(name).or_insert(now);
            }
            Seen::Event(name) => {
                self.events.insert(name);
            }
            Seen::Failed(error) => self.watch_errors.push(error),
            Seen::Job { .. } | Seen::Other | Seen::Synced => {}
        }
    }

    /// The earliest and the latest of `times`.
    pub fn span(times: &BTreeMap<String, Duration>) -> Option<(Duration, Duration)> {
        Some((*times.values().min()?, *times.values().max()?))
    }

    /// The jobs seen `Running`.
    pub fn running_jobs(&self) -> BTreeSet<&str> {
        self.running.keys().map(String::as_str).collect()
    }
}

/// A metadata-only watch of `K`, each object's name made into a [`Seen`].
fn meta<K>(
    client: &Client,
    namespace: &str,
    make: fn(String) -> Seen,
) -> Pin<Box<dyn Stream<Item = Seen> + Send>>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let api: Api<PartialObjectMeta<K>> = Api::namespaced(client.clone(), namespace);
    Box::pin(
        watcher::watcher(api, watcher::Config::default())
            .default_backoff()
            .map(move |event| seen(event, |object| make(object.name_any()))),
    )
}

/// A watcher's event as a [`Seen`]: objects through `make`, deletions as [`Seen::Other`].
fn seen<K>(event: Result<Event<K>, watcher::Error>, make: impl Fn(K) -> Seen) -> Seen {
    match event {
        Ok(Event::Apply(object) | Event::InitApply(object)) => make(object),
        Ok(Event::Delete(_) | Event::Init) => Seen::Other,
        Ok(Event::InitDone) => Seen::Synced,
        Err(error) => Seen::Failed(error.to_string()),
    }
}

/// Whether the job has the condition `Running` with status `True`.
fn is_running(job: &DynamicObject) -> bool {
    job.data
        .pointer("/status/conditions")
        .and_then(|conditions| conditions.as_array())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|condition| condition["type"] == "Running" && condition["status"] == "True")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_job_runs_when_its_running_condition_is_true() {
        let job = |status: &str| -> DynamicObject {
            serde_json::from_value(json!({
                "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "a"},
                "status": {"conditions": [
                    {"type": "Created", "status": "True"},
                    {"type": "Running", "status": status},
                ]},
            }))
            .expect("a job")
        };
        assert!(is_running(&job("True")));
        assert!(!is_running(&job("False")));
    }

    #[test]
    fn only_the_first_sight_of_an_object_counts() {
        let t0 = Instant::now();
        let mut observed = Observed::default();
        observed.record(t0, Seen::Pod("a".to_owned()));
        let first = observed.pods["a"];
        std::thread::sleep(Duration::from_millis(5));
        observed.record(t0, Seen::Pod("a".to_owned()));
        assert_eq!(observed.pods["a"], first);
        assert_eq!(Observed::span(&observed.pods), Some((first, first)));
    }
}
