//! The operator's Prometheus metrics, served on `/metrics`:
//!
//! - the job counters of docs/semantics.md §7
//!   (`training_operator_jobs_*_total{job_namespace, framework}`), shared with the local server
//!   ([`JobCounters`]); transitions are counted once the status recording them is written,
//!   deletions when the job watch reports one;
//! - `trainctl_reconcile_duration_seconds{kind}`: how long each reconcile took;
//! - `trainctl_reconcile_errors_total{kind, operation}`: failed reconciles, by the step that
//!   failed (`Error::metric_label`);
//! - `trainctl_queue_depth{kind}`: reconciles that are due (kube-runtime has deduplicated them
//!   and released them to run) and wait for one of the kind's `--controller-threads` workers;
//! - `trainctl_leader`: 1 while this process runs the controllers (it holds the leader lease, or
//!   runs without leader election), else 0.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use trainctl_api::JobKind;
use trainctl_engine::reconcile::Transition;
use trainctl_metrics::JobCounters;

use super::error::Error;

/// The label of the per-kind metrics: `kind="TFJob"`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

impl KindLabel {
    fn of(kind: JobKind) -> KindLabel {
        KindLabel {
            kind: kind.as_str(),
        }
    }
}

/// The labels of the error counter.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    kind: &'static str,
    operation: &'static str,
}

/// Buckets of the reconcile duration: 1 ms to about 65 s (a reconcile makes API calls).
fn reconcile_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// The operator's metrics; see the module documentation.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    jobs: JobCounters,
    reconcile: Family<KindLabel, Histogram, fn() -> Histogram>,
    errors: Family<ErrorLabels, Counter>,
    queue_depth: Family<KindLabel, Gauge>,
    leader: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let jobs = JobCounters::register(&mut registry);
        let reconcile: Family<KindLabel, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(reconcile_histogram);
        let errors = Family::<ErrorLabels, Counter>::default();
        let queue_depth = Family::<KindLabel, Gauge>::default();
        let leader = Gauge::default();
        registry.register(
            "trainctl_reconcile_duration_seconds",
            "How long one reconcile of a job took",
            reconcile.clone(),
        );
        registry.register(
            "trainctl_reconcile_errors",
            "Reconciles that failed, by the operation that failed",
            errors.clone(),
        );
        registry.register(
            "trainctl_queue_depth",
            "Reconciles due and waiting for a free controller thread",
            queue_depth.clone(),
        );
        registry.register(
            "trainctl_leader",
            "Whether this process runs the controllers (1) or stands by (0)",
            leader.clone(),
        );
        Metrics {
            registry,
            jobs,
            reconcile,
            errors,
            queue_depth,
            leader,
        }
    }
}

impl Metrics {
    /// Shows the per-kind series of the enabled kinds from the start, at 0.
    pub fn enable(&self, kind: JobKind) {
        drop(self.queue_depth.get_or_create(&KindLabel::of(kind)));
    }

    /// Counts the transitions of a job whose status recording them was written.
    pub fn transitions(&self, namespace: &str, kind: JobKind, transitions: &[Transition]) {
        self.jobs.transitions(namespace, kind, transitions);
    }

    /// Counts a job the watch saw deleted.
    pub fn deleted(&self, namespace: &str, kind: JobKind) {
        self.jobs.deleted(namespace, kind);
    }

    /// Records a reconcile of a job of `kind` that took `took`, and its error if it failed.
    pub fn reconciled(&self, kind: JobKind, took: Duration, error: Option<&Error>) {
        self.reconcile
            .get_or_create(&KindLabel::of(kind))
            .observe(took.as_secs_f64());
        if let Some(error) = error {
            self.errors
                .get_or_create(&ErrorLabels {
                    kind: kind.as_str(),
                    operation: error.metric_label(),
                })
                .inc();
        }
    }

    /// A reconcile of `kind` starts waiting for a controller thread; it counts in the queue
    /// depth until the returned guard is dropped.
    #[must_use]
    pub fn queued(&self, kind: JobKind) -> Queued {
        let gauge = self.queue_depth.get_or_create(&KindLabel::of(kind)).clone();
        gauge.inc();
        Queued { gauge }
    }

    /// Sets `trainctl_leader`.
    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    /// The metrics in Prometheus' text format.
    #[must_use]
    pub fn encode(&self) -> String {
        trainctl_metrics::encode(&self.registry)
    }
}

/// A reconcile counted in `trainctl_queue_depth` until dropped.
#[derive(Debug)]
pub struct Queued {
    gauge: Gauge,
}

impl Drop for Queued {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use http::{Method, StatusCode};
    use jiff::Timestamp;
    use serde_json::json;

    use super::*;
    use crate::fixtures::reconcile_at;
    use crate::fixtures::{
        TF_JOB, cluster, context, finish, job, no_children, object, serve, status_body, with_status,
    };

    fn api_error() -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status::failure(
            "conflict", "Conflict",
        )))
    }

    #[test]
    fn a_fresh_operator_shows_only_its_kinds_queues_and_standby() {
        let metrics = Metrics::default();
        metrics.enable(JobKind::TFJob);
        assert_eq!(
            metrics.encode(),
            "\
# HELP trainctl_queue_depth Reconciles due and waiting for a free controller thread.
# TYPE trainctl_queue_depth gauge
trainctl_queue_depth{kind=\"TFJob\"} 0
# HELP trainctl_leader Whether this process runs the controllers (1) or stands by (0).
# TYPE trainctl_leader gauge
trainctl_leader 0
# EOF
"
        );
    }

    #[test]
    fn reconciles_errors_queue_and_leadership_have_their_series() {
        let metrics = Metrics::default();
        metrics.transitions("ml", JobKind::TFJob, &[Transition::Created]);
        metrics.deleted("ml", JobKind::TFJob);
        metrics.reconciled(JobKind::TFJob, Duration::from_millis(3), None);
        let error = Error::PatchStatus {
            job: "ml/mnist".to_owned(),
            source: api_error(),
        };
        metrics.reconciled(JobKind::TFJob, Duration::from_millis(20), Some(&error));
        let first = metrics.queued(JobKind::MPIJob);
        let second = metrics.queued(JobKind::MPIJob);
        drop(first);
        metrics.set_leader(true);
        let text = metrics.encode();
        for line in [
            "training_operator_jobs_created_total{job_namespace=\"ml\",framework=\"tensorflow\"} 1",
            "training_operator_jobs_deleted_total{job_namespace=\"ml\",framework=\"tensorflow\"} 1",
            "trainctl_reconcile_duration_seconds_sum{kind=\"TFJob\"} 0.023",
            "trainctl_reconcile_duration_seconds_count{kind=\"TFJob\"} 2",
            "trainctl_reconcile_duration_seconds_bucket{le=\"0.004\",kind=\"TFJob\"} 1",
            "trainctl_reconcile_duration_seconds_bucket{le=\"0.032\",kind=\"TFJob\"} 2",
            "trainctl_reconcile_duration_seconds_bucket{le=\"+Inf\",kind=\"TFJob\"} 2",
            "trainctl_reconcile_errors_total{kind=\"TFJob\",operation=\"patch_status\"} 1",
            "trainctl_queue_depth{kind=\"MPIJob\"} 1",
            "trainctl_leader 1",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing from:\n{text}"
            );
        }
        drop(second);
        assert!(
            metrics
                .encode()
                .lines()
                .any(|l| l == "trainctl_queue_depth{kind=\"MPIJob\"} 0")
        );
    }

    const CREATED: &str =
        "training_operator_jobs_created_total{job_namespace=\"ml\",framework=\"tensorflow\"} 1";
    const FAILED: &str =
        "training_operator_jobs_failed_total{job_namespace=\"ml\",framework=\"tensorflow\"} 1";

    fn now() -> Timestamp {
        "2025-01-01T00:00:00Z".parse().expect("a timestamp")
    }

    /// Reconciles `object` once against `answer`, counting into `metrics`.
    async fn reconcile_into(
        metrics: &Arc<Metrics>,
        object: &crate::reconcile::job::JobObject,
        answer: impl FnMut(&crate::fixtures::Sent) -> crate::fixtures::Answer + Send + 'static,
    ) -> Result<kube::runtime::controller::Action, Error> {
        let (ctx, handle) = context();
        let ctx = Arc::new(Arc::unwrap_or_clone(ctx).with_metrics(Arc::clone(metrics)));
        let server = serve(handle, answer);
        let outcome = reconcile_at(JobKind::TFJob, object, &ctx, &no_children(), now()).await;
        finish(ctx, server).await;
        outcome
    }

    fn has(metrics: &Metrics, line: &str) -> bool {
        metrics.encode().lines().any(|l| l == line)
    }

    #[tokio::test]
    async fn a_transition_is_counted_once_its_status_is_written_and_never_again() {
        let metrics = Arc::new(Metrics::default());
        let tfjob = job(TF_JOB);
        let mut answer = cluster(&tfjob);
        let status_fails = move |sent: &crate::fixtures::Sent| {
            if sent.method == Method::PATCH && sent.path().ends_with("/status") {
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    status_body(500, "InternalError"),
                )
            } else {
                answer(sent)
            }
        };
        let outcome = reconcile_into(&metrics, &object(TF_JOB), status_fails).await;
        assert!(
            matches!(outcome, Err(Error::PatchStatus { .. })),
            "{outcome:?}"
        );
        assert!(
            !has(&metrics, CREATED),
            "the Created condition was not written"
        );

        // The retry plans the transition again and writes it: counted once.
        let outcome = reconcile_into(&metrics, &object(TF_JOB), cluster(&tfjob)).await;
        assert!(outcome.is_ok(), "{outcome:?}");
        assert!(has(&metrics, CREATED), "{}", metrics.encode());

        // Reconciles of the job with its Created condition recorded count nothing more.
        let created = json!({"conditions": [{
            "type": "Created", "status": "True", "reason": "TFJobCreated",
            "message": "TFJob mnist is created.",
            "lastUpdateTime": "2025-01-01T00:00:00Z", "lastTransitionTime": "2025-01-01T00:00:00Z",
        }], "startTime": "2025-01-01T00:00:00Z"});
        let recorded = with_status(object(TF_JOB), &created);
        let outcome = reconcile_into(&metrics, &recorded, cluster(&tfjob)).await;
        assert!(outcome.is_ok(), "{outcome:?}");
        assert!(has(&metrics, CREATED), "{}", metrics.encode());
    }

    #[tokio::test]
    async fn a_refused_job_counts_as_failed_once() {
        let metrics = Arc::new(Metrics::default());
        let manifest = TF_JOB.replace("image: tf", "image: ''");
        let outcome = reconcile_into(&metrics, &object(&manifest), cluster(&job(TF_JOB))).await;
        assert!(outcome.is_ok(), "{outcome:?}");
        assert!(has(&metrics, FAILED), "{}", metrics.encode());
        let failed = json!({"conditions": [{
            "type": "Failed", "status": "True", "reason": "TFJobFailed", "message": "invalid",
            "lastUpdateTime": "2025-01-01T00:00:00Z", "lastTransitionTime": "2025-01-01T00:00:00Z",
        }], "completionTime": "2025-01-01T00:00:00Z"});
        let refused = with_status(object(&manifest), &failed);
        let outcome = reconcile_into(&metrics, &refused, cluster(&job(TF_JOB))).await;
        assert!(outcome.is_ok(), "{outcome:?}");
        assert!(has(&metrics, FAILED), "still 1: {}", metrics.encode());
    }
}
