//! What the driver watches: the namespace's Pods (with their phase), Services and Events
//! (metadata only) and its TFJobs, each change timed by the driver's clock from `t0`.

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

/// Which of a job's pods a lag is from.
#[derive(Debug, Clone, Copy)]
pub enum Which {
    /// The first pod reported `Running`.
    First,
    /// The last pod reported `Running`.
    Last,
}

/// One watched change.
#[derive(Debug)]
enum Seen {
    /// A pod exists (added or changed): its name, its job's (the label the operators set), and
    /// whether it is reported `Running`.
    Pod {
        name: String,
        job: Option<String>,
        running: bool,
    },
    /// A service exists.
    Service(String),
    /// A TFJob exists, with or without `Running=True`.
    Job { name: String, running: bool },
    /// An Event object exists (the subjects' events about the jobs and their children).
    Event(String),
    /// An object was deleted.
    Deleted,
    /// Anything else.
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
    /// Pods that must be reported `Running` (0 for the floor, whose times end at its creations).
    pub running_pods: usize,
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
    /// When each pod was first seen `Running`.
    pub pods_running: BTreeMap<String, Duration>,
    /// Each pod's job.
    pub pod_jobs: BTreeMap<String, String>,
    /// When each service was first seen.
    pub services: BTreeMap<String, Duration>,
    /// When each job was first seen `Running`.
    pub running: BTreeMap<String, Duration>,
    /// The Event objects seen.
    pub events: BTreeSet<String>,
    /// Deletions of watched objects.
    pub deletions: usize,
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
            Box::pin(
                watcher::watcher(
                    Api::<Pod>::namespaced(client.clone(), namespace),
                    watcher::Config::default(),
                )
                .default_backoff()
                .map(|event| seen(event, pod_seen)),
            ),
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
        let done = self
            .until(&mut observed, t0, t0 + limits.timeout, |observed| {
                observed.has(expected)
            })
            .await;
        if done {
            self.settle(&mut observed, t0, limits.settle).await;
        }
        observed
    }

    /// Records what is watched into `observed` until `done` holds (then sets `observed.done`
    /// and returns true) or `deadline` passes.
    pub async fn until(
        &mut self,
        observed: &mut Observed,
        t0: Instant,
        deadline: Instant,
        done: impl Fn(&Observed) -> bool,
    ) -> bool {
        while !done(observed) {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(Some(seen)) = tokio::time::timeout(left, self.stream.next()).await else {
                return false;
            };
            observed.record(t0, seen);
        }
        observed.done = Some(t0.elapsed());
        true
    }

    /// Records what is watched into `observed` until nothing changed for `settle` (at most
    /// [`SETTLE_LIMIT`]), and when that quiet time began.
    pub async fn settle(&mut self, observed: &mut Observed, t0: Instant, settle: Duration) {
        let mut last_change = Instant::now();
        let settle_deadline = last_change + SETTLE_LIMIT;
        while Instant::now() < settle_deadline {
            match tokio::time::timeout(settle, self.stream.next()).await {
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
    }
}

impl Observed {
    fn record(&mut self, t0: Instant, seen: Seen) {
        let now = t0.elapsed();
        match seen {
            Seen::Pod { name, job, running } => {
                if running {
                    self.pods_running.entry(name.clone()).or_insert(now);
                }
                if let Some(job) = job {
                    self.pod_jobs.entry(name.clone()).or_insert(job);
                }
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
            Seen::Deleted => self.deletions += 1,
            Seen::Failed(error) => self.watch_errors.push(error),
            Seen::Job { .. } | Seen::Other | Seen::Synced => {}
        }
    }

    /// Whether everything `expected` is there.
    pub fn has(&self, expected: &Expected) -> bool {
        self.pods.len() >= expected.objects
            && self.services.len() >= expected.objects
            && self.running.len() >= expected.running_jobs
            && self.pods_running.len() >= expected.running_pods
    }

    /// For each job seen `Running`, how many seconds after its `pod` pod (the first or the last
    /// of its pods) was reported `Running` that was. The jobs measured have Workers only, and
    /// such a TFJob runs once a Worker does (upstream's rule, and the engine's): from the first
    /// pod, the lag is the operator's; from the last, it is what issue 39 set a goal for.
    /// Negative where the job's change was watched first (each watch runs late by its own
    /// amount).
    pub fn running_lags(&self, pod: Which) -> BTreeMap<&str, f64> {
        let mut reference: BTreeMap<&str, Duration> = BTreeMap::new();
        for (name, running) in &self.pods_running {
            if let Some(job) = self.pod_jobs.get(name) {
                let pick = match pod {
                    Which::First => Duration::min,
                    Which::Last => Duration::max,
                };
                reference
                    .entry(job)
                    .and_modify(|time| *time = pick(*time, *running))
                    .or_insert(*running);
            }
        }
        self.running
            .iter()
            .filter_map(|(job, running)| {
                let time = reference.get(job.as_str())?;
                Some((job.as_str(), running.as_secs_f64() - time.as_secs_f64()))
            })
            .collect()
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

/// A watcher's event as a [`Seen`]: objects through `make`.
fn seen<K>(event: Result<Event<K>, watcher::Error>, make: impl Fn(K) -> Seen) -> Seen {
    match event {
        Ok(Event::Apply(object) | Event::InitApply(object)) => make(object),
        Ok(Event::Delete(_)) => Seen::Deleted,
        Ok(Event::Init) => Seen::Other,
        Ok(Event::InitDone) => Seen::Synced,
        Err(error) => Seen::Failed(error.to_string()),
    }
}

/// The label with which both operators name a pod's job.
const JOB_NAME_LABEL: &str = "training.kubeflow.org/job-name";

/// A pod as a [`Seen`].
fn pod_seen(pod: Pod) -> Seen {
    let Pod {
        metadata, status, ..
    } = pod;
    Seen::Pod {
        name: metadata.name.unwrap_or_default(),
        job: metadata
            .labels
            .and_then(|mut labels| labels.remove(JOB_NAME_LABEL)),
        running: status.and_then(|status| status.phase).as_deref() == Some("Running"),
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
        let pod = |running| Seen::Pod {
            name: "a".to_owned(),
            job: None,
            running,
        };
        observed.record(t0, pod(false));
        let first = observed.pods["a"];
        std::thread::sleep(Duration::from_millis(5));
        observed.record(t0, pod(true));
        assert_eq!(observed.pods["a"], first);
        assert_eq!(Observed::span(&observed.pods), Some((first, first)));
    }

    #[test]
    fn a_jobs_running_lag_is_from_its_first_pod_running() {
        let mut observed = Observed::default();
        let at = Duration::from_millis;
        for (pod, job, running) in [("a-0", "a", 250), ("a-1", "a", 500), ("b-0", "b", 500)] {
            observed.pod_jobs.insert(pod.to_owned(), job.to_owned());
            observed.pods_running.insert(pod.to_owned(), at(running));
        }
        observed.running.insert("a".to_owned(), at(1500));
        observed.running.insert("b".to_owned(), at(250));
        observed.running.insert("c".to_owned(), at(250));
        assert_eq!(
            observed.running_lags(Which::First),
            BTreeMap::from([("a", 1.25), ("b", -0.25)])
        );
        assert_eq!(
            observed.running_lags(Which::Last),
            BTreeMap::from([("a", 1.0), ("b", -0.25)])
        );
    }
}
