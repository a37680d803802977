//! The job counters of docs/semantics.md §7, shared by the local server and the Kubernetes operator
//! so that one dashboard reads both:
//! `training_operator_jobs_{created,deleted,successful,failed,restarted}_total` with the labels
//! `job_namespace` and `framework` (`tensorflow`, `pytorch`, ...), each counted once per job
//! transition as the engine reports it ([`Transition`]).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use trainctl_api::JobKind;
use trainctl_engine::reconcile::Transition;

/// The labels of the job counters.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabels {
    job_namespace: String,
    framework: String,
}

impl JobLabels {
    fn new(namespace: &str, kind: JobKind) -> JobLabels {
        JobLabels {
            job_namespace: namespace.to_owned(),
            framework: kind.framework().to_owned(),
        }
    }
}

/// The five job counters, registered in a [`Registry`].
#[derive(Debug, Clone)]
pub struct JobCounters {
    created: Family<JobLabels, Counter>,
    deleted: Family<JobLabels, Counter>,
    successful: Family<JobLabels, Counter>,
    failed: Family<JobLabels, Counter>,
    restarted: Family<JobLabels, Counter>,
}

impl JobCounters {
    /// Creates the counters and registers them in `registry` (names without `_total`, which
    /// the encoder appends).
    pub fn register(registry: &mut Registry) -> JobCounters {
        let counters = JobCounters {
            created: Family::default(),
            deleted: Family::default(),
            successful: Family::default(),
            failed: Family::default(),
            restarted: Family::default(),
        };
        for (name, help, family) in [
            (
                "training_operator_jobs_created",
                "Jobs created",
                &counters.created,
            ),
            (
                "training_operator_jobs_deleted",
                "Jobs deleted",
                &counters.deleted,
            ),
            (
                "training_operator_jobs_successful",
                "Jobs that succeeded",
                &counters.successful,
            ),
            (
                "training_operator_jobs_failed",
                "Jobs that failed",
                &counters.failed,
            ),
            (
                "training_operator_jobs_restarted",
                "Jobs that went into Restarting",
                &counters.restarted,
            ),
        ] {
            registry.register(name, help, family.clone());
        }
        counters
    }

    /// Counts the transitions a job of `kind` in `namespace` made.
    pub fn transitions(&self, namespace: &str, kind: JobKind, transitions: &[Transition]) {
        for transition in transitions {
            let family = match transition {
                Transition::Created => &self.created,
                Transition::Restarted => &self.restarted,
                Transition::Succeeded => &self.successful,
                Transition::Failed => &self.failed,
            };
            family.get_or_create(&JobLabels::new(namespace, kind)).inc();
        }
    }

    /// Counts a deleted job of `kind` in `namespace`.
    pub fn deleted(&self, namespace: &str, kind: JobKind) {
        self.deleted
            .get_or_create(&JobLabels::new(namespace, kind))
            .inc();
    }
}

/// The metrics of `registry` in Prometheus' text format.
#[must_use]
pub fn encode(registry: &Registry) -> String {
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut text, registry);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_transition_increments_its_counter_with_the_namespace_and_framework() {
        let mut registry = Registry::default();
        let counters = JobCounters::register(&mut registry);
        counters.transitions(
            "team",
            JobKind::PyTorchJob,
            &[
                Transition::Created,
                Transition::Restarted,
                Transition::Failed,
            ],
        );
        counters.transitions("team", JobKind::PyTorchJob, &[Transition::Restarted]);
        counters.transitions("ml", JobKind::MPIJob, &[Transition::Succeeded]);
        counters.deleted("ml", JobKind::MPIJob);
        assert_eq!(
            encode(&registry),
            "\
# HELP training_operator_jobs_created Jobs created.
# TYPE training_operator_jobs_created counter
training_operator_jobs_created_total{job_namespace=\"team\",framework=\"pytorch\"} 1
# HELP training_operator_jobs_deleted Jobs deleted.
# TYPE training_operator_jobs_deleted counter
training_operator_jobs_deleted_total{job_namespace=\"ml\",framework=\"mpi\"} 1
# HELP training_operator_jobs_successful Jobs that succeeded.
# TYPE training_operator_jobs_successful counter
training_operator_jobs_successful_total{job_namespace=\"ml\",framework=\"mpi\"} 1
# HELP training_operator_jobs_failed Jobs that failed.
# TYPE training_operator_jobs_failed counter
training_operator_jobs_failed_total{job_namespace=\"team\",framework=\"pytorch\"} 1
# HELP training_operator_jobs_restarted Jobs that went into Restarting.
# TYPE training_operator_jobs_restarted counter
training_operator_jobs_restarted_total{job_namespace=\"team\",framework=\"pytorch\"} 2
# EOF
"
        );
    }
}
