//! `/metrics`: the operator's job counters (docs/semantics.md §7: `training_operator_jobs_*_total`
//! with labels `job_namespace` and `framework`, counted once per transition, as the engine reports
//! them), the reconcile duration, the admission wait and the queue depth.

use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use trainctl_api::TrainingJob;
use trainctl_engine::reconcile::Transition;
use trainctl_metrics::JobCounters;

/// The server's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    jobs: JobCounters,
    reconcile: Histogram,
    admission_wait: Histogram,
    queue_depth: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let jobs = JobCounters::register(&mut registry);
        // 10 µs to about 80 ms.
        let reconcile = Histogram::new(exponential_buckets(0.000_01, 2.0, 14));
        // 10 ms to about 3 h.
        let admission_wait = Histogram::new(exponential_buckets(0.01, 2.0, 21));
        let queue_depth = Gauge::default();
        registry.register(
            "trainctl_reconcile_duration_seconds",
            "How long one reconcile of a job took",
            reconcile.clone(),
        );
        registry.register(
            "trainctl_admission_wait_seconds",
            "How long a job waited in the queue before it got its resources",
            admission_wait.clone(),
        );
        registry.register(
            "trainctl_queue_depth",
            "Jobs waiting in the queue for their resources",
            queue_depth.clone(),
        );
        Metrics {
            registry,
            jobs,
            reconcile,
            admission_wait,
            queue_depth,
        }
    }
}

impl Metrics {
    /// Counts a reconcile of `job`: its duration and the transitions it made.
    pub fn reconciled(&self, job: &TrainingJob, transitions: &[Transition], took: Duration) {
        self.reconcile.observe(took.as_secs_f64());
        self.jobs
            .transitions(job.namespace(), job.kind(), transitions);
    }

    /// Counts a deleted job.
    pub fn deleted(&self, job: &TrainingJob) {
        self.jobs.deleted(job.namespace(), job.kind());
    }

    /// Records how long a job waited for admission.
    pub fn admitted(&self, waited: Duration) {
        self.admission_wait.observe(waited.as_secs_f64());
    }

    /// The metrics in Prometheus' text format, with the queue's depth now.
    #[must_use]
    pub fn encode(&self, queue_depth: usize) -> String {
        self.queue_depth
            .set(i64::try_from(queue_depth).unwrap_or(i64::MAX));
        trainctl_metrics::encode(&self.registry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tfjob() -> TrainingJob {
        let text = "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: a, namespace: team}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      template:\n        spec:\n          containers: [{name: tensorflow, image: x}]\n";
        let mut manifests = trainctl_api::manifest::load_str("a.yaml", text);
        manifests.jobs.remove(0).job
    }

    #[test]
    fn transitions_are_counted_with_the_operator_names_and_labels() {
        let metrics = Metrics::default();
        let job = tfjob();
        metrics.reconciled(
            &job,
            &[Transition::Created, Transition::Succeeded],
            Duration::from_micros(50),
        );
        metrics.deleted(&job);
        let text = metrics.encode(3);
        for line in [
            "training_operator_jobs_created_total{job_namespace=\"team\",framework=\"tensorflow\"} 1",
            "training_operator_jobs_successful_total{job_namespace=\"team\",framework=\"tensorflow\"} 1",
            "training_operator_jobs_deleted_total{job_namespace=\"team\",framework=\"tensorflow\"} 1",
            "trainctl_queue_depth 3",
            "trainctl_reconcile_duration_seconds_count 1",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing from:\n{text}"
            );
        }
        assert!(
            !text.contains("training_operator_jobs_failed_total{"),
            "{text}"
        );
    }
}
