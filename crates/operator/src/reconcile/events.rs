//! Events about jobs, written in the background and rate-limited per job as client-go's are.
//!
//! A reconcile does not wait for its events: [`Events::record`] queues one and returns. A few
//! writers send them, each one at a time, so that events take a small share of the API
//! server's attention next to the creations and deletions a job waits for. The events of one
//! job always go to the same writer: they are written in the order they were recorded, and a
//! repeated warning extends the series of the first one (kube's `Recorder` keeps that series).
//!
//! Upstream's operator records through client-go's event recorder, whose spam filter lets
//! through, per involved object and event type, a burst of 25 events and then one every five
//! minutes; the others are dropped. trainctl does the same for the events about a job's
//! children (a pod or service created or deleted, a replica's exit): a job of 1,000 replicas
//! writes 25 `SuccessfulCreatePod` events, not 2,000 events that would cost the API server as
//! much as the pods themselves. The events about the job itself (succeeded, failed,
//! restarting, suspended...) are few per job and always written: a user looks for them, and
//! client-go could drop them behind a burst of creations.
//!
//! Events are for people: one that cannot be written is logged, not retried, and what is still
//! queued when the operator stops is not written.

use std::collections::HashMap;
use std::hash::{BuildHasher as _, RandomState};
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use tokio::sync::mpsc;
use tokio::time::Instant;
use trainctl_engine::reconcile::JobEvent;

/// How many writers send events at once.
const WRITERS: usize = 4;

/// How many events one writer holds before it drops new ones.
const QUEUE: usize = 2_500;

/// The events about one job's children, of one type, let through in a burst (client-go's).
const BURST: f64 = 25.0;

/// After the burst, one more event every this long (client-go's).
const REFILL: Duration = Duration::from_secs(300);

/// How many (job, type) pairs the spam filter tracks before it forgets quiet ones
/// (client-go's cache size).
const TRACKED: usize = 4_096;

/// The event queue of an operator: [`Events::record`] and the writers behind it.
pub struct Events {
    writers: Vec<mpsc::Sender<Queued>>,
    route: RandomState,
    spam: Mutex<SpamFilter>,
}

/// An event waiting for its writer.
struct Queued {
    regarding: ObjectReference,
    event: Event,
    /// Whether a repeat extends the series of the first (a warning about a child).
    series: bool,
}

impl Events {
    /// Spawns the writers on the current tokio runtime. They stop once the `Events` is
    /// dropped, after writing what was queued.
    #[must_use]
    pub fn spawn(client: &Client, reporter: &Reporter) -> Events {
        let writers = (0..WRITERS)
            .map(|_| {
                let (queue, queued) = mpsc::channel(QUEUE);
                tokio::spawn(write(queued, client.clone(), reporter.clone()));
                queue
            })
            .collect();
        Events {
            writers,
            route: RandomState::new(),
            spam: Mutex::new(SpamFilter::default()),
        }
    }

    /// Queues an event about a job (`regarding`), done to `related` (a pod or service) if
    /// given; an event about a child goes through the spam filter first.
    ///
    /// kube's recorder folds events of the same reason about the same objects into one series
    /// and keeps the first note: right for repeats about one child, wrong for events whose notes
    /// differ (`ExitedWithCode` for two pods). Events about a child therefore name it as
    /// `related`. Only warnings about a child repeat (a creation that keeps failing, a pod that
    /// keeps exiting), so only they take a series: the recorder keeps every event of a series
    /// for six minutes, and cached, the normal events of many jobs held most of the heap.
    pub fn record(
        &self,
        regarding: &ObjectReference,
        event: &JobEvent,
        action: &str,
        related: Option<ObjectReference>,
    ) {
        let warning = event.type_ == trainctl_engine::reconcile::EventType::Warning;
        let job = regarding
            .uid
            .clone()
            .or_else(|| regarding.name.clone())
            .unwrap_or_default();
        if related.is_some()
            && !self
                .lock_spam()
                .allow((job.clone(), warning), Instant::now())
        {
            tracing::debug!(%job, reason = %event.reason, "event dropped by the spam filter");
            return;
        }
        let series = related.is_some() && warning;
        let queued = Queued {
            regarding: regarding.clone(),
            event: Event {
                type_: if warning {
                    EventType::Warning
                } else {
                    EventType::Normal
                },
                reason: event.reason.clone(),
                note: Some(event.message.clone()),
                action: action.to_owned(),
                secondary: related,
            },
            series,
        };
        let writer = self.route.hash_one(&job) as usize % self.writers.len();
        if let Err(mpsc::error::TrySendError::Full(_)) = self.writers[writer].try_send(queued) {
            tracing::warn!(%job, reason = %event.reason, "event dropped: the event queue is full");
        }
    }

    fn lock_spam(&self) -> std::sync::MutexGuard<'_, SpamFilter> {
        // The filter holds counters only: one left half-updated by a panic is still usable.
        self.spam
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// One writer: sends its queue's events one at a time until the queue is closed and empty.
async fn write(mut queued: mpsc::Receiver<Queued>, client: Client, reporter: Reporter) {
    let series = Recorder::new(client.clone(), reporter.clone());
    while let Some(Queued {
        regarding,
        event,
        series: in_series,
    }) = queued.recv().await
    {
        let written = if in_series {
            series.publish(&event, &regarding).await
        } else {
            // A recorder of its own keeps nothing once the event is written.
            Recorder::new(client.clone(), reporter.clone())
                .publish(&event, &regarding)
                .await
        };
        if let Err(error) = written {
            tracing::warn!(
                job = regarding.name.as_deref().unwrap_or_default(),
                reason = %event.reason,
                %error,
                "cannot record event"
            );
        }
    }
}

/// client-go's spam filter: a token bucket per (job, warning or not).
#[derive(Default)]
struct SpamFilter {
    buckets: HashMap<(String, bool), Bucket>,
}

/// The events a key may still write, as of `at`.
#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// The bucket refilled up to `now`.
    fn refilled(self, now: Instant) -> Bucket {
        let earned = now.saturating_duration_since(self.at).as_secs_f64() / REFILL.as_secs_f64();
        Bucket {
            tokens: (self.tokens + earned).min(BURST),
            at: now,
        }
    }
}

impl SpamFilter {
    /// Whether one more event of `key` may be written at `now` (and counts it if so).
    fn allow(&mut self, key: (String, bool), now: Instant) -> bool {
        if self.buckets.len() >= TRACKED && !self.buckets.contains_key(&key) {
            self.forget_quiet(now);
        }
        let bucket = self.buckets.entry(key).or_insert(Bucket {
            tokens: BURST,
            at: now,
        });
        *bucket = bucket.refilled(now);
        if bucket.tokens < 1.0 {
            return false;
        }
        bucket.tokens -= 1.0;
        true
    }

    /// Makes room: forgets the keys whose bucket is full again (as good as new), or if none
    /// is, the fullest one (whose loss lets through the fewest extra events).
    fn forget_quiet(&mut self, now: Instant) {
        self.buckets
            .retain(|_, bucket| bucket.refilled(now).tokens < BURST);
        if self.buckets.len() >= TRACKED {
            let fullest = self
                .buckets
                .iter()
                .max_by(|(_, a), (_, b)| a.refilled(now).tokens.total_cmp(&b.refilled(now).tokens))
                .map(|(key, _)| key.clone());
            if let Some(fullest) = fullest {
                self.buckets.remove(&fullest);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use http::{Method, StatusCode};
    use serde_json::json;
    use tokio::time::Instant;
    use trainctl_engine::reconcile::JobEvent;

    use super::{REFILL, SpamFilter, TRACKED};
    use crate::fixtures::{Sent, context, finish, job, serve};
    use crate::reconcile::context::child_reference;
    use crate::reconcile::job::object_reference;

    const JOB: &str = "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: mnist, namespace: ml, uid: u-1}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n";

    /// The method and reason of each event written.
    fn written(events: &[Sent]) -> Vec<(Method, String)> {
        events
            .iter()
            .map(|event| {
                let reason = event.body["reason"].as_str().unwrap_or_default();
                (event.method.clone(), reason.to_owned())
            })
            .collect()
    }

    #[tokio::test]
    async fn only_warnings_about_a_child_fold_into_a_series() {
        let job = job(JOB);
        let (ctx, handle) = context();
        let server = serve(handle, |_| (StatusCode::CREATED, json!({})));
        let regarding = object_reference(&job);
        let pod = || Some(child_reference(&job, "Pod", "mnist-worker-0"));
        for _ in 0..2 {
            let created = JobEvent::pod_created("mnist-worker-0");
            ctx.events.record(&regarding, &created, "Create", pod());
        }
        for _ in 0..2 {
            let failed = JobEvent::pod_create_failed("quota exceeded");
            ctx.events.record(&regarding, &failed, "Create", pod());
        }
        let (_, events) = finish(ctx, server).await;
        assert_eq!(
            written(&events),
            [
                (Method::POST, "SuccessfulCreatePod".to_owned()),
                (Method::POST, "SuccessfulCreatePod".to_owned()),
                (Method::POST, "FailedCreatePod".to_owned()),
                // The repeat extends the first one's series.
                (Method::PATCH, "FailedCreatePod".to_owned()),
            ]
        );
    }

    #[tokio::test]
    async fn events_about_children_are_limited_per_job_and_those_about_the_job_are_not() {
        let job = job(JOB);
        let (ctx, handle) = context();
        let server = serve(handle, |_| (StatusCode::CREATED, json!({})));
        let regarding = object_reference(&job);
        for index in 0..40 {
            let name = format!("mnist-worker-{index}");
            let pod = child_reference(&job, "Pod", &name);
            let created = JobEvent::pod_created(&name);
            ctx.events.record(&regarding, &created, "Create", Some(pod));
        }
        let succeeded = JobEvent::new(
            trainctl_engine::reconcile::EventType::Normal,
            "TFJobSucceeded".to_owned(),
            "TFJob ml/mnist successfully completed.".to_owned(),
        );
        ctx.events.record(&regarding, &succeeded, "Reconcile", None);
        let (_, events) = finish(ctx, server).await;
        let mut expected = vec![(Method::POST, "SuccessfulCreatePod".to_owned()); 25];
        expected.push((Method::POST, "TFJobSucceeded".to_owned()));
        assert_eq!(written(&events), expected);
        // In the order recorded: the first 25 pods.
        assert_eq!(
            events[24].body["note"],
            json!("Created pod: mnist-worker-24")
        );
    }

    fn key(job: &str) -> (String, bool) {
        (job.to_owned(), false)
    }

    #[test]
    fn a_burst_of_25_then_one_every_five_minutes() {
        let mut filter = SpamFilter::default();
        let start = Instant::now();
        let allowed = (0..30).filter(|_| filter.allow(key("a"), start)).count();
        assert_eq!(allowed, 25);
        assert!(!filter.allow(key("a"), start + REFILL - Duration::from_secs(1)));
        assert!(filter.allow(key("a"), start + REFILL));
        assert!(!filter.allow(key("a"), start + REFILL));
        // Each job and each type has its own bucket.
        assert!(filter.allow(key("b"), start));
        assert!(filter.allow(("a".to_owned(), true), start));
    }

    #[test]
    fn a_quiet_key_refills_to_the_burst_and_no_further() {
        let mut filter = SpamFilter::default();
        let start = Instant::now();
        assert!(filter.allow(key("a"), start));
        let later = start + REFILL * 100;
        let allowed = (0..30).filter(|_| filter.allow(key("a"), later)).count();
        assert_eq!(allowed, 25);
    }

    #[test]
    fn the_filter_forgets_full_buckets_first_and_stays_bounded() {
        let mut filter = SpamFilter::default();
        let start = Instant::now();
        // A busy key: its bucket is spent, so it is not forgotten while others are quiet.
        for _ in 0..25 {
            assert!(filter.allow(key("busy"), start));
        }
        for index in 0..TRACKED + 10 {
            let now = start + Duration::from_millis(index as u64);
            assert!(filter.allow(key(&format!("job-{index}")), now));
        }
        assert!(filter.buckets.len() <= TRACKED);
        let spent = filter.buckets[&key("busy")];
        assert!(spent.tokens < 1.0, "the busy key was kept");
        assert!(!filter.allow(key("busy"), start));
    }
}
