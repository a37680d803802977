//! A small language for reconcile scenarios, so that test cases (and `docs/transitions.md`)
//! read like a transition table: a job shape, the status before, what was observed, and the
//! essentials of the plan.
//!
//! - Job: `TFJob Chief=1 Worker=2/ExitCode backoffLimit=2 deadline=60 ttl=30 clean=All`, plus the
//!   flags `successPolicy=AllWorkers`, `jobMode=MXTune`, `dynamicWorker`, `elastic`, `autoscaled`
//!   (elastic with `metrics`: a HorizontalPodAutoscaler), `suspend`, `multikueue`.
//!   A type without `/Policy` gets the kind's default restart policy.
//! - Before: `new` (no status), `Created`, `Running`, `Restarting`, `Suspended`, `Succeeded`,
//!   `Failed`, `Failed:backoff`, `Failed:deadline`, with `started=-60s` / `completed=-10s`
//!   (defaults: started 60 s and completed 10 s before now). The replica counts of an active
//!   status are those of the observation, as if the previous reconcile had seen it.
//! - Observed: `;`-separated pods `worker-1 Failed exit=137 restarts=2 reason=Evicted deleting
//!   finished=-5s`, or `all Running` for every slot of the job; a service exists for every
//!   observed pod unless `no services` (`services`: for every slot of the job); `podgroup=Pending` (volcano; `podgroup=none`: not
//!   created yet), `waiting=gpu:2/1`, `queued=3`, `retired=2`, `backoff=10s`, `refused=worker-1`
//!   (its creation refused with [`REFUSAL`]); `nothing`.
//! - Plan: the conditions (`=False` marks a condition that does not hold) with the newest one's
//!   reason and message, then what to create and delete, PodGroup, HPA, events, requeue, job
//!   deletion, metrics, and the restart ledger when it moves. `status unchanged` when nothing is written.

use std::fmt::Write as _;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use trainctl_api::{
    ConditionStatus, JobConditionType, JobKind, JobStatus, ReplicaStatus, ReplicaType, TrainingJob,
};

use super::conditions::{self, Condition};
use super::messages::Wording;
use super::observed::{
    Observed, ObservedGang, ObservedReplica, PodGroupPhase, PodPhase, ReplicaSlot, Resource,
    RestartBackoff, Shortfall, WaitingFact,
};
use super::plan::{Deletion, EventType, HpaAction, Plan, PodGroupAction, ReplicaExit, Transition};
use super::replicas::ReplicaView;
use crate::objects::podgroup::GangScheduler;
use crate::test_jobs::load_job;

/// What refused the creations of a scenario's `refused=` slots.
pub(crate) const REFUSAL: &str = "exceeded quota: q";

/// The `now` of every scenario: 2026-01-01T00:00:00Z.
pub(crate) const NOW: Timestamp = Timestamp::constant(1_767_225_600, 0);

/// `now + offset` for an offset like `-30s`.
fn at(offset: &str) -> Timestamp {
    let seconds: i64 = offset
        .strip_suffix('s')
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("offset `{offset}` must read like -30s"));
    NOW.checked_add(SignedDuration::from_secs(seconds))
        .expect("scenario offsets are small")
}

/// The job of a shape.
pub(crate) fn job(shape: &str) -> TrainingJob {
    let mut tokens = shape.split_whitespace();
    let kind: JobKind = tokens
        .next()
        .and_then(|kind| kind.parse().ok())
        .unwrap_or_else(|| panic!("shape `{shape}` must start with a kind"));
    let container = kind.default_container().unwrap_or("main");
    let mut specs = String::new();
    let mut run_policy = Vec::new();
    let mut extra = Vec::new();
    for token in tokens {
        match token.split_once('=') {
            Some(("backoffLimit", n)) => run_policy.push(format!("backoffLimit: {n}")),
            Some(("deadline", n)) => run_policy.push(format!("activeDeadlineSeconds: {n}")),
            Some(("ttl", n)) => run_policy.push(format!("ttlSecondsAfterFinished: {n}")),
            Some(("clean", policy)) => run_policy.push(format!("cleanPodPolicy: {policy}")),
            Some(("successPolicy", policy)) => extra.push(format!("successPolicy: {policy}")),
            Some(("jobMode", mode)) => extra.push(format!("jobMode: {mode}")),
            Some((replica_type, count)) => {
                let (count, policy) = count
                    .split_once('/')
                    .map_or((count, None), |(c, p)| (c, Some(p)));
                write!(specs, "    {replica_type}:\n      replicas: {count}\n")
                    .expect("writing to a String cannot fail");
                if let Some(policy) = policy {
                    writeln!(specs, "      restartPolicy: {policy}")
                        .expect("writing to a String cannot fail");
                }
                writeln!(
                    specs,
                    "      template: {{spec: {{containers: [{{name: {container}, image: x}}]}}}}"
                )
                .expect("writing to a String cannot fail");
            }
            None => match token {
                "dynamicWorker" => extra.push("enableDynamicWorker: true".to_owned()),
                "elastic" => {
                    extra.push("elasticPolicy: {minReplicas: 1, maxReplicas: 4}".to_owned());
                }
                "autoscaled" => extra.push(
                    "elasticPolicy: {minReplicas: 1, maxReplicas: 4, metrics: [{type: Resource, \
                     resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]}"
                        .to_owned(),
                ),
                "suspend" => run_policy.push("suspend: true".to_owned()),
                "multikueue" => run_policy.push("managedBy: kueue.x-k8s.io/multikueue".to_owned()),
                other => panic!("unknown shape token `{other}` in `{shape}`"),
            },
        }
    }
    let extra = extra.iter().fold(String::new(), |mut yaml, line| {
        writeln!(yaml, "  {line}").expect("writing to a String cannot fail");
        yaml
    });
    load_job(&format!(
        "apiVersion: kubeflow.org/v1\nkind: {kind}\nmetadata: {{name: mnist, namespace: ml}}\n\
         spec:\n  runPolicy: {{{}}}\n{extra}  {}:\n{specs}",
        run_policy.join(", "),
        kind.replica_specs_field()
    ))
}

/// The observation of a scenario, for `job`.
pub(crate) fn observed(text: &str, job: &TrainingJob) -> Observed {
    let mut observed = Observed::default();
    let mut services = true;
    let mut every_service = false;
    for item in text
        .split(';')
        .map(str::trim)
        .filter(|item| !item.is_empty())
    {
        let mut words = item.split_whitespace();
        let first = words.next().unwrap_or_default();
        match first.split_once('=') {
            Some(("podgroup", phase)) => {
                observed.gang = Some(ObservedGang {
                    scheduler: GangScheduler::Volcano,
                    pod_group: pod_group_phase(phase),
                    unplaced: None,
                });
            }
            Some(("waiting", need)) => {
                let (resource, amounts) = need.split_once(':').expect("waiting=gpu:2/1");
                let (needed, free) = amounts.split_once('/').expect("waiting=gpu:2/1");
                let resource = match resource {
                    "gpu" => Resource::Gpu,
                    "cpu" => Resource::CpuMillis,
                    _ => Resource::MemoryBytes,
                };
                observed
                    .waiting
                    .push(WaitingFact::InsufficientResources(vec![Shortfall {
                        resource,
                        needed: needed.parse().expect("a count"),
                        free: free.parse().expect("a count"),
                    }]));
            }
            Some(("retired", n)) => observed.retired_restarts = n.parse().expect("a count"),
            Some(("refused", slot)) => {
                observed
                    .refused
                    .insert(parse_slot(slot), REFUSAL.to_owned());
            }
            Some(("backoff", initial)) => {
                observed.restart_backoff = RestartBackoff {
                    initial: SignedDuration::from_secs(
                        initial.trim_end_matches('s').parse().expect("backoff=10s"),
                    ),
                    max: SignedDuration::from_secs(300),
                };
            }
            _ => match first {
                "nothing" => {}
                "queued" => observed.waiting.push(WaitingFact::Queued),
                "no" => services = false,
                "services" => every_service = true,
                "all" => {
                    let pod = replica(words);
                    for (replica_type, spec) in job.replica_specs().iter() {
                        for index in 0..spec.replicas_or_default() {
                            let slot = ReplicaSlot::new(replica_type.clone(), index);
                            observed.pods.insert(slot, pod.clone());
                        }
                    }
                }
                slot => {
                    observed.pods.insert(parse_slot(slot), replica(words));
                }
            },
        }
    }
    if services && job.kind() != JobKind::MPIJob {
        observed.services = observed.pods.keys().cloned().collect();
    }
    if every_service {
        observed.services.extend(
            crate::objects::replica_slots(job)
                .into_iter()
                .map(|(replica_type, index)| ReplicaSlot::new(replica_type, index)),
        );
    }
    observed
}

fn pod_group_phase(phase: &str) -> Option<PodGroupPhase> {
    match phase {
        "none" => None,
        "Pending" => Some(PodGroupPhase::Pending),
        "Inqueue" => Some(PodGroupPhase::Inqueue),
        "Running" => Some(PodGroupPhase::Running),
        "Completed" => Some(PodGroupPhase::Completed),
        _ => Some(PodGroupPhase::Unknown),
    }
}

/// `worker-1` → `(Worker, 1)`.
fn parse_slot(text: &str) -> ReplicaSlot {
    let (replica_type, index) = text
        .rsplit_once('-')
        .unwrap_or_else(|| panic!("slot `{text}` must read like worker-1"));
    ReplicaSlot::new(
        ReplicaType::parse(replica_type),
        index.parse().expect("a slot index"),
    )
}

fn replica<'a>(words: impl Iterator<Item = &'a str>) -> ObservedReplica {
    let mut pod = ObservedReplica::default();
    for word in words {
        match word.split_once('=') {
            Some(("exit", code)) => pod.exit_code = Some(code.parse().expect("an exit code")),
            Some(("restarts", n)) => pod.restart_count = n.parse().expect("a count"),
            Some(("reason", reason)) => pod.reason = Some(reason.to_owned()),
            Some(("finished", offset)) => pod.finished_at = Some(at(offset)),
            _ => match word {
                "Pending" => pod.phase = PodPhase::Pending,
                "Running" => pod.phase = PodPhase::Running,
                "Succeeded" => pod.phase = PodPhase::Succeeded,
                "Failed" => pod.phase = PodPhase::Failed,
                "deleting" => pod.deleting = true,
                other => panic!("unknown pod word `{other}`"),
            },
        }
    }
    pod
}

/// Gives `job` the status described by `before`, counting replicas from `observed`.
pub(crate) fn set_before(job: &mut TrainingJob, before: &str, observed: &Observed) {
    let mut tokens = before.split_whitespace();
    let state = tokens.next().unwrap_or("new");
    if state == "new" {
        *job.status_mut() = None;
        return;
    }
    let mut started = at("-60s");
    let mut completed = at("-10s");
    for token in tokens {
        match token.split_once('=') {
            Some(("started", offset)) => started = at(offset),
            Some(("completed", offset)) => completed = at(offset),
            _ => panic!("unknown status token `{token}`"),
        }
    }
    let words = Wording::new(job);
    let mut status = JobStatus {
        start_time: Some(Time(started)),
        ..JobStatus::default()
    };
    let set = |status: &mut JobStatus, type_: JobConditionType, message: String| {
        let reason = words.reason(type_);
        conditions::set(status, Condition::holds(type_, reason, message), started);
    };
    set(&mut status, JobConditionType::Created, words.created());
    match state {
        "Created" => {}
        "Running" => set(&mut status, JobConditionType::Running, words.running()),
        "Restarting" => set(
            &mut status,
            JobConditionType::Restarting,
            words.restarting(1, &ReplicaType::Worker),
        ),
        "Suspended" => {
            let reason = words.reason(JobConditionType::Suspended);
            let message = words.suspended();
            conditions::set(
                &mut status,
                Condition::lapsed(JobConditionType::Running, reason.clone(), message.clone()),
                started,
            );
            conditions::set(
                &mut status,
                Condition::holds(JobConditionType::Suspended, reason, message),
                started,
            );
        }
        "Succeeded" | "Failed" | "Failed:backoff" | "Failed:deadline" => {
            set(&mut status, JobConditionType::Running, words.running());
            let (type_, message) = match state {
                "Succeeded" => (JobConditionType::Succeeded, words.succeeded()),
                "Failed:backoff" => (JobConditionType::Failed, words.backoff_limit_reached()),
                "Failed:deadline" => (JobConditionType::Failed, words.deadline_exceeded()),
                _ => (
                    JobConditionType::Failed,
                    words.replicas_failed(1, &ReplicaType::Worker),
                ),
            };
            let reason = words.reason(type_);
            conditions::set(
                &mut status,
                Condition::holds(type_, reason, message),
                completed,
            );
            status.completion_time = Some(Time(completed));
        }
        other => panic!("unknown status `{other}`"),
    }
    status.replica_statuses = if state == "Suspended" {
        job.replica_specs()
            .keys()
            .map(|replica_type| {
                let counts = ReplicaStatus {
                    selector: crate::naming::replica_selector(job, replica_type),
                    ..ReplicaStatus::default()
                };
                (replica_type.clone(), counts)
            })
            .collect()
    } else {
        ReplicaView::new(job, observed).replica_statuses(job)
    };
    *job.status_mut() = Some(status);
}

/// The essentials of `plan`, as the table's last column shows them.
pub(crate) fn essentials(plan: &Plan, observed: &Observed) -> String {
    let mut parts = Vec::new();
    match &plan.status {
        None => parts.push("status unchanged".to_owned()),
        Some(status) => parts.push(conditions_words(status)),
    }
    let slots = |slots: &[ReplicaSlot]| {
        slots
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let deletions = |deletions: &[Deletion]| {
        deletions
            .iter()
            .map(|d| format!("{} ({})", d.slot, d.why))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !plan.create_pods.is_empty() {
        parts.push(format!("create pods {}", slots(&plan.create_pods)));
    }
    if !plan.create_services.is_empty() {
        parts.push(format!("create services {}", slots(&plan.create_services)));
    }
    if !plan.delete_pods.is_empty() {
        parts.push(format!("delete pods {}", deletions(&plan.delete_pods)));
    }
    if !plan.delete_services.is_empty() {
        parts.push(format!(
            "delete services {}",
            deletions(&plan.delete_services)
        ));
    }
    match plan.pod_group {
        Some(PodGroupAction::Ensure) => parts.push("ensure PodGroup".to_owned()),
        Some(PodGroupAction::Delete) => parts.push("delete PodGroup".to_owned()),
        None => {}
    }
    match plan.hpa {
        Some(HpaAction::Apply) => parts.push("apply HPA".to_owned()),
        Some(HpaAction::Delete) => parts.push("delete HPA".to_owned()),
        None => {}
    }
    // The exits read as the events a runtime records for them (once each), before the rest.
    if !plan.events.is_empty() || !plan.exits.is_empty() {
        let exits = plan.exits.iter().map(|_| {
            let normal = EventType::Normal.as_str();
            format!("{normal} {}", ReplicaExit::REASON)
        });
        let events: Vec<String> = exits
            .chain(
                plan.events
                    .iter()
                    .map(|e| format!("{} {}", e.type_.as_str(), e.reason)),
            )
            .collect();
        parts.push(format!("events {}", events.join(", ")));
    }
    if let Some(after) = plan.requeue_after {
        parts.push(format!("requeue {}s", after.as_secs()));
    }
    if plan.delete_job {
        parts.push("delete job".to_owned());
    }
    if !plan.transitions.is_empty() {
        let transitions: Vec<&str> = plan
            .transitions
            .iter()
            .map(|t| match t {
                Transition::Created => "created",
                Transition::Restarted => "restarted",
                Transition::Succeeded => "succeeded",
                Transition::Failed => "failed",
            })
            .collect();
        parts.push(format!("count {}", transitions.join(", ")));
    }
    if plan.retired_restarts != observed.retired_restarts {
        parts.push(format!(
            "retired restarts {} → {}",
            observed.retired_restarts, plan.retired_restarts
        ));
    }
    parts.join("; ")
}

/// `Created, Running=False, Succeeded: TFJobSucceeded "…"`.
fn conditions_words(status: &JobStatus) -> String {
    let mut words = status
        .conditions
        .iter()
        .map(|c| match c.status {
            ConditionStatus::True => format!("{:?}", c.type_),
            other => format!("{:?}={other:?}", c.type_),
        })
        .collect::<Vec<_>>()
        .join(", ");
    if let Some(newest) = status.conditions.last() {
        write!(words, ": {} \"{}\"", newest.reason, newest.message)
            .expect("writing to a String cannot fail");
    }
    if let Some(created) = status.condition(JobConditionType::Created)
        && status.conditions.last() != Some(created)
        && created.message.contains("Pending:")
    {
        write!(words, " (Created \"{}\")", created.message)
            .expect("writing to a String cannot fail");
    }
    words
}
