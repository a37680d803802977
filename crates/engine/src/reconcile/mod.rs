//! The reconcile state machine (docs/semantics.md §5–§7): what to do next for a job, given what was
//! observed.
//!
//! [`reconcile`] is pure, synchronous and deterministic: it takes the job (with its previous
//! status), an [`Observed`] snapshot of its replicas and the current time, and returns a
//! [`Plan`]. Both runtimes (the local supervisor and the Kubernetes operator) call it and only
//! execute the plan, which is how the same YAML means the same thing everywhere.
//!
//! The pipeline, as named steps:
//!
//! 1. **Hands off** a job that another controller manages (`managedBy: kueue.x-k8s.io/multikueue`):
//!    an empty plan.
//! 2. **Keep finished** jobs as they are: Succeeded and Failed are absorbing. Only the cleanup
//!    (`cleanPodPolicy`) and the TTL remain; a finished job costs nothing else.
//! 3. **Suspend**: delete every pod and service, Running=False, Suspended=True.
//! 4. **Resume** a suspended job: Suspended=False (`<Kind>Resumed`), `startTime` reset.
//! 5. **Progress**: note the job Created, set `startTime`, count the replicas afresh, judge
//!    failed replicas (restart policies, the `ExitCode` rule), then decide in this order: success
//!    (the replicas that decide success win over any failure seen at the same time), backoff
//!    limit, deadline, fatal replica failures. A job still going re-creates failed replicas,
//!    deletes scaled-down ones, creates missing pods and services (unless the runtime or the gang
//!    holds them back, which the `Created` condition then explains), and sets
//!    Restarting or Running.
//! 6. **Finish** (from 5): Succeeded or Failed, `completionTime`, cleanup, TTL.
//!
//! Whatever the step, a job that has a HorizontalPodAutoscaler (an elastic PyTorchJob with
//! `metrics`) gets it applied, or deleted while suspended ([`HpaAction`]), as upstream does at
//! every reconcile, finished jobs included.
//!
//! ## How restarts are counted (`backoffLimit`)
//! `backoffLimit` counts every restart of the job's replicas **\[fix\]**: pods the engine deletes
//! to re-create them, and in-place container restarts (`OnFailure`, `Always`) that the kubelet or
//! the local supervisor makes on its own. The count is
//!
//! ```text
//! restarts = retired_restarts + Σ restart_count of the observed pods not being deleted
//! ```
//!
//! where `retired_restarts` is a ledger the engine keeps and the runtime persists next to the
//! job's status ([`Plan::retired_restarts`] out, [`Observed::retired_restarts`] in; the operator
//! can keep it in an annotation, the local runtime in its store). Whenever the engine orders a
//! pod deleted it moves that pod's in-place `restart_count` into the ledger, plus one when the
//! deletion is a restart. From then on the pod is `deleting` or gone and no longer counted live,
//! so nothing is counted twice, and the count survives re-created pods whose `restart_count`
//! starts again at 0. A runtime persists the ledger only once the plan's deletions were issued
//! (as it does with the status): a deletion that failed is planned, and counted, again.
//!
//! With `backoffLimit: N`, N restarts are allowed and the next failure fails the job: the job
//! fails when the restarts already made exceed N (in-place restarts happen before the engine
//! sees them), or when re-creating the replicas that failed now would exceed N.
//!
//! ## Where this differs from the Kubeflow operator
//! The **\[fix\]**es of docs/semantics.md, whose §8 gives each one's reason; among them these
//! choices where upstream was inconsistent:
//! - `ExitCode` retries every code ≥ 128 (upstream listed 130, 137, 138 and 143), and a failed pod
//!   without an exit code (evicted, node lost), which was stopped from outside like a signal.
//! - Restarting reads `<Kind> <name> is restarting because <n> <Type> replica(s) failed.` for every
//!   kind (upstream's shared path dropped the count); MPI's Failed reason is `MPIJobFailed`
//!   (upstream wrote `MPIJobMPIJobFailed`); Failed and Restarting events are `Warning`s.
//! - Finishing sets Restarting to False as well as Running, so a finished job shows neither.
//! - `replicaStatuses[<Type>]` counts only the pods in the job's slots, and every kind gets the
//!   `selector`. `active` counts running pods, as upstream's does (a pending pod is in no count).
//! - A replica type with zero replicas decides nothing, and MPIJob runs once the launcher runs.

mod cleanup;
mod conditions;
mod messages;
mod observed;
mod plan;
mod replicas;
mod restart;
mod success;
mod timers;
mod waiting;

#[cfg(test)]
mod scenario;
#[cfg(test)]
mod transitions;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use trainctl_api::{JobConditionType, JobKind, JobStatus, ReplicaStatus, TrainingJob};

use self::cleanup::Ending;
use self::conditions::Condition;
use self::messages::Wording;
use self::replicas::ReplicaView;
use self::restart::Assessment;
use crate::naming;
use crate::objects::hpa::has_hpa;

pub use self::observed::{
    Observed, ObservedGang, ObservedReplica, PodGroupPhase, PodPhase, ReplicaSlot, Resource,
    RestartBackoff, Shortfall, WaitingFact,
};
pub use self::plan::{
    DeleteReason, Deletion, EventType, ExitLedger, HpaAction, JobEvent, Plan, PodGroupAction,
    ReplicaExit, Transition,
};
pub use self::restart::is_retryable_exit_code;
pub use crate::objects::podgroup::GangScheduler;

/// Decides what to do next for `job`, given what was `observed` of it at `now`.
///
/// Pure and total: no I/O, no clock, no panics on any input (inconsistent observations
/// included), and the same input always gives the same plan.
#[must_use]
pub fn reconcile(job: &TrainingJob, observed: &Observed, now: Timestamp) -> Plan {
    if job.run_policy().is_managed_elsewhere() {
        return Plan {
            retired_restarts: observed.retired_restarts,
            ..Plan::default()
        };
    }
    let mut run = Reconciliation::new(job, observed, now);
    if run.status.is_finished() {
        run.keep_finished();
    } else if job.run_policy().is_suspended() {
        run.suspend();
    } else {
        run.resume_if_suspended();
        run.progress();
    }
    run.into_plan()
}

/// What to do with the job's HorizontalPodAutoscaler, as upstream's `ReconcileHPA`: none without
/// one; deleted while the job is suspended; else applied, whatever the job's state. A job whose
/// `metrics` were removed plans nothing, as upstream: the HPA made before stays as it was
/// (docs/semantics.md §3).
fn hpa_action(job: &TrainingJob) -> Option<HpaAction> {
    has_hpa(job).then(|| {
        if job.run_policy().is_suspended() {
            HpaAction::Delete
        } else {
            HpaAction::Apply
        }
    })
}

/// How a job finishes.
enum Outcome {
    Succeeded,
    Failed { message: String, ending: Ending },
}

/// One reconcile in progress: the inputs, the status being built and the plan so far.
struct Reconciliation<'a> {
    job: &'a TrainingJob,
    observed: &'a Observed,
    now: Timestamp,
    words: Wording<'a>,
    status: JobStatus,
    plan: Plan,
}

impl<'a> Reconciliation<'a> {
    fn new(job: &'a TrainingJob, observed: &'a Observed, now: Timestamp) -> Self {
        Reconciliation {
            job,
            observed,
            now,
            words: Wording::new(job),
            status: job.status().cloned().unwrap_or_default(),
            plan: Plan {
                retired_restarts: observed.retired_restarts,
                ..Plan::default()
            },
        }
    }

    fn into_plan(mut self) -> Plan {
        self.plan.hpa = hpa_action(self.job);
        self.plan.delete_pods.sort_unstable();
        self.plan.delete_services.sort_unstable();
        if self.job.status() != Some(&self.status) {
            self.plan.status = Some(self.status);
        }
        self.plan
    }

    // The steps.

    /// A finished job keeps its conditions; only cleanup and the TTL remain.
    fn keep_finished(&mut self) {
        self.note_exits();
        if self.status.completion_time.is_none() {
            self.status.completion_time = Some(Time(self.now));
        }
        let ending = Ending::of(&self.status, &self.words);
        self.clean_up(ending);
        self.delete_pod_group();
        self.schedule_ttl();
    }

    /// `suspend: true`: every pod and service goes, nothing is active, Suspended=True.
    fn suspend(&mut self) {
        self.note_created();
        let observed = self.observed;
        for (slot, pod) in &observed.pods {
            if !pod.deleting {
                self.delete_pod(slot, pod, DeleteReason::Suspend);
            }
        }
        if has_services(self.job.kind()) {
            for slot in &observed.services {
                self.delete_service(slot, DeleteReason::Suspend);
            }
        }
        for replica_type in self.job.replica_specs().keys() {
            self.status
                .replica_statuses
                .entry(replica_type.clone())
                .or_insert_with(|| ReplicaStatus {
                    selector: naming::replica_selector(self.job, replica_type),
                    ..ReplicaStatus::default()
                })
                .active = 0;
        }
        self.show_pending(None);
        let reason = self.words.reason(JobConditionType::Suspended);
        let message = self.words.suspended();
        for type_ in [JobConditionType::Running, JobConditionType::Restarting] {
            if self.status.is_true(type_) {
                self.set(Condition::lapsed(type_, reason.clone(), message.clone()));
            }
        }
        let suspended =
            Condition::holds(JobConditionType::Suspended, reason.clone(), message.clone());
        if self.set(suspended) {
            self.event(EventType::Normal, reason, message);
        }
        self.delete_pod_group();
    }

    /// A suspended job whose `suspend` was lifted: Suspended=False and a fresh `startTime`.
    fn resume_if_suspended(&mut self) {
        if !self.status.is_true(JobConditionType::Suspended) {
            return;
        }
        let reason = self.words.resumed_reason();
        let message = self.words.resumed();
        self.set(Condition::lapsed(
            JobConditionType::Suspended,
            reason.clone(),
            message.clone(),
        ));
        self.status.start_time = Some(Time(self.now));
        self.event(EventType::Normal, reason, message);
    }

    /// A job that runs: decide whether it finished, else bring its replicas to the spec.
    fn progress(&mut self) {
        self.note_created();
        self.note_exits();
        // A job waiting for this machine's admission has not started: its clock (`startTime`,
        // and `activeDeadlineSeconds` with it) starts when it is admitted, as under Kueue.
        if self.status.start_time.is_none() && self.observed.waiting.is_empty() {
            self.status.start_time = Some(Time(self.now));
        }
        let (job, observed) = (self.job, self.observed);
        let view = ReplicaView::new(job, observed);
        self.status.replica_statuses = view.replica_statuses(job);
        let assessment = Assessment::new(job, &view, observed);
        let deadline = timers::deadline(job, &self.status);

        if success::succeeded(job, &view) {
            return self.finish(Outcome::Succeeded);
        }
        if assessment.exceeds(job.run_policy().backoff_limit) {
            let message = self.words.backoff_limit_reached();
            return self.finish(Outcome::Failed {
                message,
                ending: Ending::Stopped,
            });
        }
        if deadline.is_some_and(|deadline| deadline <= self.now) {
            let message = self.words.deadline_exceeded();
            return self.finish(Outcome::Failed {
                message,
                ending: Ending::Stopped,
            });
        }
        if let Some((replica_type, count)) = Assessment::headline(&assessment.fatal) {
            let message = self.words.replicas_failed(count, replica_type);
            return self.finish(Outcome::Failed {
                message,
                ending: Ending::ByReplicas,
            });
        }

        let restart_wake_up = self.restart(&assessment);
        self.scale_down(&view);
        self.create_missing(&view);
        self.set_progress_condition(&assessment, &view);
        self.show_pending(waiting::reasons(job, observed, &view));
        if observed.gang.is_some() {
            self.plan.pod_group = Some(PodGroupAction::Ensure);
        }
        let deadline_wake_up = deadline.map(|deadline| timers::until(self.now, deadline));
        self.plan.requeue_after = timers::earliest(restart_wake_up, deadline_wake_up);
    }

    /// The job succeeded or failed: the condition, `completionTime`, cleanup and TTL.
    fn finish(&mut self, outcome: Outcome) {
        // The Created message is frozen with the rest once the job is finished: drop any
        // Pending words first.
        self.show_pending(None);
        let (type_, event_type, transition, message, ending) = match outcome {
            Outcome::Succeeded => (
                JobConditionType::Succeeded,
                EventType::Normal,
                Transition::Succeeded,
                self.words.succeeded(),
                Ending::ByReplicas,
            ),
            Outcome::Failed { message, ending } => (
                JobConditionType::Failed,
                EventType::Warning,
                Transition::Failed,
                message,
                ending,
            ),
        };
        let reason = self.words.reason(type_);
        self.set(Condition::holds(type_, reason.clone(), message.clone()));
        self.status.completion_time = Some(Time(self.now));
        if type_ == JobConditionType::Succeeded {
            // Replicas still running when the deciders succeeded are done too (as upstream).
            for counts in self.status.replica_statuses.values_mut() {
                counts.succeeded = counts.succeeded.saturating_add(counts.active);
                counts.active = 0;
            }
        }
        self.event(event_type, reason, message);
        self.plan.transitions.push(transition);
        self.clean_up(ending);
        self.delete_pod_group();
        self.schedule_ttl();
    }

    // The pieces of the steps.

    /// Adds the `Created` condition the first time the job is seen.
    fn note_created(&mut self) {
        if self.status.condition(JobConditionType::Created).is_none() {
            let reason = self.words.reason(JobConditionType::Created);
            let message = self.words.created();
            self.set(Condition::holds(JobConditionType::Created, reason, message));
            self.plan.transitions.push(Transition::Created);
        }
    }

    /// Re-creates the failed replicas whose back-off has passed; returns when the next one is
    /// due.
    fn restart(&mut self, assessment: &Assessment<'_>) -> Option<SignedDuration> {
        let mut wake_up = None;
        for failed in &assessment.restarts {
            let due = timers::restart_due(
                failed.pod,
                &self.observed.restart_backoff,
                assessment.restarts_made,
            );
            match due {
                Some(due) if due > self.now => {
                    wake_up = timers::earliest(wake_up, Some(timers::until(self.now, due)));
                }
                _ => {
                    self.delete_pod(&failed.slot, failed.pod, DeleteReason::Restart);
                }
            }
        }
        wake_up
    }

    /// Deletes pods and services in no slot of the job (index ≥ replicas, or a type it lost).
    fn scale_down(&mut self, view: &ReplicaView<'_>) {
        for &(slot, pod) in &view.strays {
            if !pod.deleting {
                self.delete_pod(slot, pod, DeleteReason::ScaleDown);
            }
        }
        if has_services(self.job.kind()) {
            let observed = self.observed;
            for slot in &observed.services {
                let in_job = view.of(&slot.replica_type).is_some_and(|type_view| {
                    usize::try_from(slot.index).is_ok_and(|index| index < type_view.replicas())
                });
                if !in_job {
                    self.delete_service(slot, DeleteReason::ScaleDown);
                }
            }
        }
    }

    /// Creates the pods of empty slots (unless held back) and the missing services.
    fn create_missing(&mut self, view: &ReplicaView<'_>) {
        let create_pods = !waiting::gated(self.observed);
        let create_services = has_services(self.job.kind()) && !waiting::gang_gated(self.observed);
        for type_view in &view.types {
            for (index, pod) in type_view.pods.iter().enumerate() {
                if create_pods && pod.is_none() {
                    self.plan.create_pods.push(type_view.slot(index));
                }
                if create_services {
                    let slot = type_view.slot(index);
                    if !self.observed.services.contains(&slot) {
                        self.plan.create_services.push(slot);
                    }
                }
            }
        }
    }

    /// Restarting while failed replicas are re-created (until every slot is back up), else
    /// Running once a replica that decides success runs.
    fn set_progress_condition(&mut self, assessment: &Assessment<'_>, view: &ReplicaView<'_>) {
        if let Some((replica_type, count)) = Assessment::headline(&assessment.restarts) {
            let reason = self.words.reason(JobConditionType::Restarting);
            let message = self.words.restarting(count, replica_type);
            let restarting = Condition::holds(
                JobConditionType::Restarting,
                reason.clone(),
                message.clone(),
            );
            if self.set(restarting) {
                self.event(EventType::Warning, reason, message);
                self.plan.transitions.push(Transition::Restarted);
            }
        } else if self.status.is_true(JobConditionType::Restarting) && view.any_slot_coming_up() {
            // Still coming back up: stay Restarting.
        } else if success::running(self.job, view) {
            let reason = self.words.reason(JobConditionType::Running);
            let message = self.words.running();
            self.set(Condition::holds(JobConditionType::Running, reason, message));
        }
    }

    /// Words why replicas cannot start into the `Created` condition (and an event when that
    /// changes); restores the plain message when nothing holds them back.
    fn show_pending(&mut self, why: Option<String>) {
        let Some(created) = self.status.condition(JobConditionType::Created) else {
            return;
        };
        let message = match &why {
            Some(why) => self.words.created_pending(why),
            None => self.words.created(),
        };
        if created.message == message {
            return;
        }
        let reason = self.words.reason(JobConditionType::Created);
        self.set(Condition::holds(JobConditionType::Created, reason, message));
        if let Some(why) = why {
            self.event(EventType::Normal, self.words.pending_reason(), why);
        }
    }

    /// Deletes what `cleanPodPolicy` (and the way the job ended) says.
    fn clean_up(&mut self, ending: Ending) {
        let policy = cleanup::policy(self.job);
        let observed = self.observed;
        for (slot, pod, why) in cleanup::pods(policy, ending, observed) {
            self.delete_pod(slot, pod, why);
        }
        if has_services(self.job.kind()) {
            for (slot, why) in cleanup::services(policy, ending, observed) {
                self.delete_service(slot, why);
            }
        }
    }

    /// Plans the job's deletion once its TTL after finishing ran out, else a wake-up for then.
    fn schedule_ttl(&mut self) {
        if let Some(expiry) = timers::ttl_expiry(self.job, &self.status) {
            if expiry <= self.now {
                self.plan.delete_job = true;
            } else {
                self.plan.requeue_after = Some(timers::until(self.now, expiry));
            }
        }
    }

    /// Deletes the gang's PodGroup, if there is one.
    fn delete_pod_group(&mut self) {
        if self
            .observed
            .gang
            .as_ref()
            .is_some_and(|gang| gang.pod_group.is_some())
        {
            self.plan.pod_group = Some(PodGroupAction::Delete);
        }
    }

    /// Plans a pod's deletion and moves its restarts to the ledger (see [`restart`]).
    fn delete_pod(&mut self, slot: &ReplicaSlot, pod: &ObservedReplica, why: DeleteReason) {
        let restarts =
            pod.restart_count.max(0).unsigned_abs() + u32::from(why == DeleteReason::Restart);
        self.plan.retired_restarts = self.plan.retired_restarts.saturating_add(restarts);
        self.plan.delete_pods.push(Deletion {
            slot: slot.clone(),
            why,
        });
    }

    fn delete_service(&mut self, slot: &ReplicaSlot, why: DeleteReason) {
        self.plan.delete_services.push(Deletion {
            slot: slot.clone(),
            why,
        });
    }

    /// Lists every replica whose pod shows a finished framework container (succeeded or
    /// failed, with its exit code), for `ExitedWithCode`.
    fn note_exits(&mut self) {
        for (slot, pod) in &self.observed.pods {
            let finished = matches!(pod.phase, PodPhase::Succeeded | PodPhase::Failed);
            let Some(exit_code) = pod.exit_code.filter(|_| finished) else {
                continue;
            };
            self.plan.exits.push(ReplicaExit {
                slot: slot.clone(),
                exit_code,
                finished_at: pod.finished_at,
            });
        }
    }

    fn set(&mut self, condition: Condition) -> bool {
        conditions::set(&mut self.status, condition, self.now)
    }

    fn event(&mut self, type_: EventType, reason: String, message: String) {
        self.plan.events.push(JobEvent {
            type_,
            reason,
            message,
        });
    }
}

/// Whether the kind has a headless service per replica (MPI has none).
fn has_services(kind: JobKind) -> bool {
    kind != JobKind::MPIJob
}
