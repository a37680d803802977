//! `/metrics`: the operator's job counters (SPEC §7: `training_operator_jobs_*_total` with labels
//! `job_namespace` and `framework`, counted once per transition, as the engine reports them), the
//! reconcile duration, the admission wait and the queue depth.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use trainctl_api::TrainingJob;
use trainctl_engine::reconcile::Transition;

/// The labels of the job counters.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabels {
    job_namespace: String,
    framework: String,
}

/// The server's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    created: Family<JobLabels, Counter>,
    deleted: Family<JobLabels, Counter>,
    successful: Family<JobLabels, Counter>,
    failed: Family<JobLabels, Counter>,
    restarted: Family<JobLabels, Counter>,
    reconcile: Histogram,
    admission_wait: Histogram,
    queue_depth: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let created = Family::<JobLabels, Counter>::default();
        let deleted = Family::<JobLabels, Counter>::default();
        let successful = Family::<JobLabels, Counter>::default();
        let failed = Family::<JobLabels, Counter>::default();
        let restarted = Family::<JobLabels, Counter>::default();
        // 10 µs to about 80 ms.
        let reconcile = Histogram::new(exponential_buckets(0.000_01, 2.0, 14));
        // 10 ms to about 3 h.
        let admission_wait = Histogram::new(exponential_buckets(0.01, 2.0, 21));
        let queue_depth = Gauge::default();
        for (name, help, family) in [
            ("training_operator_jobs_created", "Jobs created", &created),
            ("training_operator_jobs_deleted", "Jobs deleted", &deleted),
            (
                "training_operator_jobs_successful",
                "Jobs that succeeded",
                &successful,
            ),
            ("training_operator_jobs_failed", "Jobs that failed", &failed),
            (
                "training_operator_jobs_restarted",
                "Jobs that went into Restarting",
                &restarted,
            ),
        ] {
            registry.register(name, help, family.clone());
        }
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
            created,
            deleted,
            successful,
            failed,
            restarted,
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
        for transition in transitions {
            let family = match transition {
                Transition::Created => &self.created,
                Transition::Restarted => &self.restarted,
                Transition::Succeeded => &self.successful,
                Transition::Failed => &self.failed,
            };
            family.get_or_create(&labels(job)).inc();
        }
    }

    /// Counts a deleted job.
    pub fn deleted(&self, job: &TrainingJob) {
        self.deleted.get_or_create(&labels(job)).inc();
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
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

fn labels(job: &TrainingJob) -> JobLabels {
    JobLabels {
        job_namespace: job.namespace().to_owned(),
        framework: job.kind().framework().to_owned(),
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
