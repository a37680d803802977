//! What the engine decided: the [`Plan`] a runtime executes, and nothing else.

use std::collections::HashSet;
use std::fmt;

use jiff::{SignedDuration, Timestamp};
use trainctl_api::{JobStatus, TrainingJob};

use super::messages::Wording;
use super::observed::ReplicaSlot;

/// Why a pod (or service) is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeleteReason {
    /// The replica failed and is re-created (restart policy `OnFailure`, `Always`, or
    /// `ExitCode` with a retryable code).
    Restart,
    /// The slot is beyond its type's `replicas`, or its type left the job.
    ScaleDown,
    /// The job is suspended.
    Suspend,
    /// The job finished and its `cleanPodPolicy` says so.
    Cleanup,
    /// The job failed by its backoff limit or deadline: what still runs is stopped.
    Failure,
}

impl DeleteReason {
    /// The reason in one lowercase word (`restart`, `scale-down`), for logs and tables.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            DeleteReason::Restart => "restart",
            DeleteReason::ScaleDown => "scale-down",
            DeleteReason::Suspend => "suspend",
            DeleteReason::Cleanup => "cleanup",
            DeleteReason::Failure => "failure",
        }
    }
}

impl fmt::Display for DeleteReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A pod or service to delete, and why.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Deletion {
    /// The slot whose object goes.
    pub slot: ReplicaSlot,
    /// Why it goes.
    pub why: DeleteReason,
}

/// What to do with the gang's PodGroup (only planned when the runtime gang-schedules).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PodGroupAction {
    /// Create the PodGroup, or update it to the job's current spec.
    Ensure,
    /// Delete it: the job finished or is suspended.
    Delete,
}

/// What to do with an elastic PyTorchJob's HorizontalPodAutoscaler (planned for the jobs that
/// have one: [`has_hpa`](crate::objects::hpa::has_hpa)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HpaAction {
    /// Create it, or bring it to the job's current policy (built with
    /// [`build_hpa`](crate::objects::hpa::build_hpa)).
    Apply,
    /// Delete it: the job is suspended.
    Delete,
}

/// The type of an event, as Kubernetes events have it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Something expected happened.
    Normal,
    /// Something the user should look at happened.
    Warning,
}

impl EventType {
    /// `Normal` or `Warning`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// An event about the job (docs/semantics.md §7): a reason without spaces, a type and a message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JobEvent {
    /// `Normal` or `Warning`.
    pub type_: EventType,
    /// A CamelCase reason (`TFJobRestarting`, `ExitedWithCode`).
    pub reason: String,
    /// A human-readable message.
    pub message: String,
}

/// A replica's framework container that has exited, for upstream's `ExitedWithCode` event
/// (`Pod: ml.mnist-worker-0 exited with code 1`), recorded once per exit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaExit {
    /// The replica.
    pub slot: ReplicaSlot,
    /// Its exit code (a signal `n` reads `128 + n`).
    pub exit_code: i32,
    /// When it exited, which tells two exits of one slot apart.
    pub finished_at: Option<Timestamp>,
}

impl ReplicaExit {
    /// The reason of its event.
    pub const REASON: &'static str = "ExitedWithCode";

    /// The `ExitedWithCode` event to record for it, once: worded only for the exits a runtime
    /// has not reported yet, not at every plan that lists them again.
    #[must_use]
    pub fn event(&self, job: &TrainingJob) -> JobEvent {
        let pod = self.slot.name(job.name());
        let message = Wording::new(job).exited_with_code(&pod, self.exit_code);
        JobEvent::new(EventType::Normal, Self::REASON, message)
    }

    /// What identifies this exit among the exits that later plans list again.
    #[must_use]
    pub fn key(&self) -> (ReplicaSlot, Option<Timestamp>, i32) {
        (self.slot.clone(), self.finished_at, self.exit_code)
    }
}

/// The exits of one job already reported, for a runtime to record each exit's event once.
///
/// It holds only what the latest plan listed: an exit no plan lists any more (its pod was
/// re-created or deleted) cannot be listed again, so it is forgotten.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExitLedger {
    reported: HashSet<(ReplicaSlot, Option<Timestamp>, i32)>,
}

impl ExitLedger {
    /// The exits of a plan (`exits`) not reported before; from now on they count as reported.
    pub fn unreported<'a>(&mut self, exits: &'a [ReplicaExit]) -> Vec<&'a ReplicaExit> {
        let fresh = exits
            .iter()
            .filter(|exit| !self.reported.contains(&exit.key()))
            .collect();
        self.reported = exits.iter().map(ReplicaExit::key).collect();
        fresh
    }

    /// Whether no exit is remembered.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.reported.is_empty()
    }
}

impl JobEvent {
    /// An event of the given type.
    #[must_use]
    pub fn new(type_: EventType, reason: impl Into<String>, message: impl Into<String>) -> Self {
        JobEvent {
            type_,
            reason: reason.into(),
            message: message.into(),
        }
    }

    /// `SuccessfulCreatePod`: the runtime created the pod `name`.
    #[must_use]
    pub fn pod_created(name: &str) -> Self {
        Self::new(
            EventType::Normal,
            "SuccessfulCreatePod",
            format!("Created pod: {name}"),
        )
    }

    /// `FailedCreatePod`: the runtime could not create a pod.
    #[must_use]
    pub fn pod_create_failed(error: &str) -> Self {
        Self::new(
            EventType::Warning,
            "FailedCreatePod",
            format!("Error creating: {error}"),
        )
    }

    /// `SuccessfulDeletePod`: the runtime deleted the pod `name`.
    #[must_use]
    pub fn pod_deleted(name: &str) -> Self {
        Self::new(
            EventType::Normal,
            "SuccessfulDeletePod",
            format!("Deleted pod: {name}"),
        )
    }

    /// `FailedDeletePod`: the runtime could not delete a pod.
    #[must_use]
    pub fn pod_delete_failed(error: &str) -> Self {
        Self::new(
            EventType::Warning,
            "FailedDeletePod",
            format!("Error deleting: {error}"),
        )
    }

    /// `SuccessfulCreateService`: the runtime created the service `name`.
    #[must_use]
    pub fn service_created(name: &str) -> Self {
        Self::new(
            EventType::Normal,
            "SuccessfulCreateService",
            format!("Created service: {name}"),
        )
    }

    /// `FailedCreateService`: the runtime could not create a service.
    #[must_use]
    pub fn service_create_failed(error: &str) -> Self {
        Self::new(
            EventType::Warning,
            "FailedCreateService",
            format!("Error creating: {error}"),
        )
    }

    /// `SuccessfulDeleteService`: the runtime deleted the service `name`.
    #[must_use]
    pub fn service_deleted(name: &str) -> Self {
        Self::new(
            EventType::Normal,
            "SuccessfulDeleteService",
            format!("Deleted service: {name}"),
        )
    }

    /// `FailedDeleteService`: the runtime could not delete a service.
    #[must_use]
    pub fn service_delete_failed(error: &str) -> Self {
        Self::new(
            EventType::Warning,
            "FailedDeleteService",
            format!("Error deleting: {error}"),
        )
    }

    /// `SuccessfulDeleteJob`: the runtime deleted the job `name` after its TTL.
    #[must_use]
    pub fn job_deleted(name: &str) -> Self {
        Self::new(
            EventType::Normal,
            "SuccessfulDeleteJob",
            format!("Deleted job: {name}"),
        )
    }
}

/// A job transition, counted once in the Prometheus counters (docs/semantics.md §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Transition {
    /// The job was seen for the first time (`Created` condition added).
    Created,
    /// The job went into `Restarting`.
    Restarted,
    /// The job succeeded.
    Succeeded,
    /// The job failed.
    Failed,
}

impl Transition {
    /// The counter this transition increments, e.g. `training_operator_jobs_created_total`.
    #[must_use]
    pub fn counter(self) -> &'static str {
        match self {
            Transition::Created => "training_operator_jobs_created_total",
            Transition::Restarted => "training_operator_jobs_restarted_total",
            Transition::Succeeded => "training_operator_jobs_successful_total",
            Transition::Failed => "training_operator_jobs_failed_total",
        }
    }
}

/// What a runtime does for one reconcile of a job. Every list is sorted by slot.
///
/// Runtimes execute the plan and record the outcome themselves: creation and deletion events
/// (`SuccessfulCreatePod`, ...) depend on whether the runtime's action worked, so they are not
/// in [`Plan::events`]; [`JobEvent`] has constructors that word them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// Pods to create (built with [`build_pod`](crate::build_pod)).
    pub create_pods: Vec<ReplicaSlot>,
    /// Pods to delete, and why.
    pub delete_pods: Vec<Deletion>,
    /// Headless services to create (built with [`build_service`](crate::build_service)).
    pub create_services: Vec<ReplicaSlot>,
    /// Services to delete, and why.
    pub delete_services: Vec<Deletion>,
    /// What to do with the gang's PodGroup, when the runtime gang-schedules.
    pub pod_group: Option<PodGroupAction>,
    /// What to do with the job's HorizontalPodAutoscaler, when it has one. Local runtimes run
    /// no autoscaler and ignore it.
    pub hpa: Option<HpaAction>,
    /// The job's new status, or `None` when it did not change (nothing to write).
    pub status: Option<JobStatus>,
    /// Events to record on the job, in the order they happened.
    pub events: Vec<JobEvent>,
    /// The replicas whose framework container has exited, as the pods show them now. Every
    /// plan lists them again while the pods show them; a runtime records each one's event once
    /// (see [`ReplicaExit::key`]). Not work by itself.
    pub exits: Vec<ReplicaExit>,
    /// Reconcile again after this long even if nothing is observed to change (deadline, TTL,
    /// restart back-off).
    pub requeue_after: Option<SignedDuration>,
    /// Delete the job object itself (its TTL after finishing expired).
    pub delete_job: bool,
    /// Transitions to count in the job metrics.
    pub transitions: Vec<Transition>,
    /// The restarts made by replicas whose pods no longer count, including those this plan
    /// deletes. The runtime persists it with the status and passes it back as
    /// [`Observed::retired_restarts`](super::Observed::retired_restarts).
    pub retired_restarts: u32,
}

impl Plan {
    /// Whether the plan asks the runtime to act (create, delete, write, requeue or record).
    #[must_use]
    pub fn has_work(&self) -> bool {
        !self.create_pods.is_empty()
            || !self.delete_pods.is_empty()
            || !self.create_services.is_empty()
            || !self.delete_services.is_empty()
            || self.pod_group.is_some()
            || self.hpa.is_some()
            || self.status.is_some()
            || !self.events.is_empty()
            || self.requeue_after.is_some()
            || self.delete_job
            || !self.transitions.is_empty()
    }
}
