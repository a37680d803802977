//! The status that `reconcile` writes, beyond the transition table: replica counts, times,
//! condition timestamps, and events that must not repeat.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use trainctl_api::{ConditionStatus, JobConditionType, JobStatus, ReplicaType, TrainingJob};
use trainctl_engine::reconcile::{
    Observed, ObservedReplica, PodPhase, ReplicaSlot, Resource, Shortfall, WaitingFact,
};
use trainctl_engine::{Plan, reconcile};

const T0: Timestamp = Timestamp::constant(1_767_225_600, 0);

fn later(seconds: i64) -> Timestamp {
    T0.checked_add(SignedDuration::from_secs(seconds))
        .expect("small offsets")
}

fn load(yaml: &str) -> TrainingJob {
    let mut manifests = trainctl_api::manifest::load_str("job.yaml", yaml);
    assert!(!manifests.has_errors(), "{:#?}", manifests.diagnostics);
    manifests.jobs.remove(0).job
}

fn pytorch(workers: i32, extra_run_policy: &str) -> TrainingJob {
    load(&format!(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {{name: bert, namespace: ml}}\n\
         spec:\n  runPolicy: {{{extra_run_policy}}}\n  pytorchReplicaSpecs:\n    \
         Master:\n      template: {{spec: {{containers: [{{name: pytorch, image: x}}]}}}}\n    \
         Worker:\n      replicas: {workers}\n      \
         template: {{spec: {{containers: [{{name: pytorch, image: x}}]}}}}\n"
    ))
}

fn slot(replica_type: ReplicaType, index: i32) -> ReplicaSlot {
    ReplicaSlot::new(replica_type, index)
}

fn pod(phase: PodPhase) -> ObservedReplica {
    ObservedReplica::new(phase)
}

/// Applies the plan's status to the job, as a runtime writes it.
fn apply_status(job: &mut TrainingJob, plan: &Plan) {
    if let Some(status) = &plan.status {
        *job.status_mut() = Some(status.clone());
    }
}

fn status(plan: &Plan) -> &JobStatus {
    plan.status.as_ref().expect("the plan writes a status")
}

/// Upstream's counts: only running pods are active; a pending pod is in no count.
#[test]
fn replica_statuses_count_running_as_active_and_terminating_running_as_failed() {
    let job = pytorch(4, "");
    let observed = Observed::with_pods([
        (slot(ReplicaType::Master, 0), pod(PodPhase::Running)),
        (slot(ReplicaType::Worker, 0), pod(PodPhase::Pending)),
        (
            slot(ReplicaType::Worker, 1),
            ObservedReplica {
                deleting: true,
                ..pod(PodPhase::Running)
            },
        ),
        (slot(ReplicaType::Worker, 2), pod(PodPhase::Succeeded)),
        (
            slot(ReplicaType::Worker, 3),
            ObservedReplica {
                deleting: true,
                ..pod(PodPhase::Pending)
            },
        ),
        // Beyond replicas: deleted, not counted.
        (slot(ReplicaType::Worker, 7), pod(PodPhase::Running)),
    ]);
    let plan = reconcile(&job, &observed, T0);
    let workers = &status(&plan).replica_statuses[&ReplicaType::Worker];
    assert_eq!(
        (workers.active, workers.succeeded, workers.failed),
        (0, 1, 1)
    );
    assert_eq!(
        workers.selector,
        "training.kubeflow.org/job-name=bert,\
         training.kubeflow.org/operator-name=pytorchjob-controller,\
         training.kubeflow.org/replica-type=worker"
    );
    let master = &status(&plan).replica_statuses[&ReplicaType::Master];
    assert_eq!((master.active, master.succeeded, master.failed), (1, 0, 0));
}

/// A pod the scheduler cannot place: the Created condition and the Pending event say why, in
/// the scheduler's words, not only that it is `Unschedulable`.
#[test]
fn an_unschedulable_pod_shows_the_schedulers_why() {
    let job = pytorch(1, "");
    let why = "0/1 nodes are available: persistentvolumeclaim \"tfevent-volume\" not found.";
    let observed = Observed::with_pods([
        (slot(ReplicaType::Master, 0), pod(PodPhase::Running)),
        (
            slot(ReplicaType::Worker, 0),
            ObservedReplica {
                reason: Some("Unschedulable".to_owned()),
                message: Some(why.to_owned()),
                ..pod(PodPhase::Pending)
            },
        ),
    ]);
    let plan = reconcile(&job, &observed, T0);
    let expected = format!("bert-worker-0 is pending (Unschedulable: {why})");
    let created = status(&plan)
        .condition(JobConditionType::Created)
        .expect("the job is created");
    assert_eq!(
        created.message,
        format!("PyTorchJob bert is created. Pending: {expected}.")
    );
    let pending: Vec<&str> = plan
        .events
        .iter()
        .filter(|event| event.reason == "PyTorchJobPending")
        .map(|event| event.message.as_str())
        .collect();
    assert_eq!(pending, [expected.as_str()]);
}

#[test]
fn start_time_is_set_once_and_reset_on_resume() {
    let mut job = pytorch(1, "");
    let plan = reconcile(&job, &Observed::default(), T0);
    assert_eq!(status(&plan).start_time, Some(Time(T0)));
    apply_status(&mut job, &plan);

    let plan = reconcile(&job, &Observed::default(), later(5));
    assert!(
        plan.status.is_none(),
        "nothing changed: startTime stays {:?}",
        plan.status
    );

    job.run_policy_mut().suspend = Some(true);
    let plan = reconcile(&job, &Observed::default(), later(10));
    apply_status(&mut job, &plan);
    job.run_policy_mut().suspend = Some(false);
    let plan = reconcile(&job, &Observed::default(), later(20));
    assert_eq!(status(&plan).start_time, Some(Time(later(20))));
}

#[test]
fn success_sets_completion_time_and_counts_active_replicas_as_succeeded() {
    let mut job = pytorch(2, "");
    let plan = reconcile(&job, &Observed::default(), T0);
    apply_status(&mut job, &plan);
    let observed = Observed::with_pods([
        (slot(ReplicaType::Master, 0), pod(PodPhase::Succeeded)),
        (slot(ReplicaType::Worker, 0), pod(PodPhase::Running)),
        (slot(ReplicaType::Worker, 1), pod(PodPhase::Succeeded)),
    ]);
    let plan = reconcile(&job, &observed, later(30));
    let status = status(&plan);
    assert_eq!(status.completion_time, Some(Time(later(30))));
    let workers = &status.replica_statuses[&ReplicaType::Worker];
    assert_eq!((workers.active, workers.succeeded), (0, 2));
    let succeeded = status
        .condition(JobConditionType::Succeeded)
        .expect("Succeeded condition");
    assert_eq!(succeeded.last_transition_time, Some(Time(later(30))));
    assert_eq!(succeeded.last_update_time, Some(Time(later(30))));
}

#[test]
fn condition_keeps_its_transition_time_while_its_status_holds() {
    let mut job = pytorch(1, "");
    let running = Observed::with_pods([
        (slot(ReplicaType::Master, 0), pod(PodPhase::Running)),
        (slot(ReplicaType::Worker, 0), pod(PodPhase::Running)),
    ]);
    let plan = reconcile(&job, &running, T0);
    apply_status(&mut job, &plan);
    let plan = reconcile(&job, &running, later(60));
    assert!(plan.status.is_none(), "a steady job writes nothing");
    let running_condition = job
        .status()
        .and_then(|s| s.condition(JobConditionType::Running))
        .expect("Running");
    assert_eq!(running_condition.status, ConditionStatus::True);
    assert_eq!(running_condition.last_transition_time, Some(Time(T0)));
}

#[test]
fn pending_event_is_recorded_once_per_reason() {
    let mut job = pytorch(1, "");
    let waiting = |free| Observed {
        waiting: vec![WaitingFact::InsufficientResources(vec![Shortfall {
            resource: Resource::Gpu,
            needed: 2,
            free,
        }])],
        ..Observed::default()
    };
    let plan = reconcile(&job, &waiting(1), T0);
    assert!(
        plan.create_pods.is_empty(),
        "the runtime holds the pods back"
    );
    assert_eq!(plan.events.len(), 1);
    assert_eq!(plan.events[0].reason, "PyTorchJobPending");
    assert_eq!(plan.events[0].message, "waiting for 2 GPUs, 1 free");
    apply_status(&mut job, &plan);

    let plan = reconcile(&job, &waiting(1), later(1));
    assert!(plan.events.is_empty(), "same reason, no new event");
    let plan = reconcile(&job, &waiting(0), later(2));
    assert_eq!(plan.events[0].message, "waiting for 2 GPUs, 0 free");
    let created = status(&plan)
        .condition(JobConditionType::Created)
        .expect("Created");
    assert_eq!(
        created.message,
        "PyTorchJob bert is created. Pending: waiting for 2 GPUs, 0 free."
    );
}

#[test]
fn restart_ledger_survives_recreation() {
    // backoffLimit 1: one restart allowed, the next failure fails the job, even though the
    // re-created pod starts again with restart_count 0.
    let mut job = pytorch(1, "backoffLimit: 1");
    let mut observed = Observed::with_pods([
        (slot(ReplicaType::Master, 0), pod(PodPhase::Running)),
        (
            slot(ReplicaType::Worker, 0),
            ObservedReplica {
                exit_code: Some(137),
                ..pod(PodPhase::Failed)
            },
        ),
    ]);
    let plan = reconcile(&job, &observed, T0);
    assert_eq!(plan.delete_pods.len(), 1, "{plan:#?}");
    assert_eq!(plan.retired_restarts, 1);
    apply_status(&mut job, &plan);

    observed.retired_restarts = plan.retired_restarts;
    observed
        .pods
        .insert(slot(ReplicaType::Worker, 0), pod(PodPhase::Running));
    let plan = reconcile(&job, &observed, later(10));
    assert!(plan.delete_pods.is_empty());
    apply_status(&mut job, &plan);

    observed.pods.insert(
        slot(ReplicaType::Worker, 0),
        ObservedReplica {
            exit_code: Some(137),
            ..pod(PodPhase::Failed)
        },
    );
    let plan = reconcile(&job, &observed, later(20));
    let failed = status(&plan)
        .condition(JobConditionType::Failed)
        .expect("Failed");
    assert_eq!(
        failed.message,
        "Job bert has failed because it has reached the specified backoff limit"
    );
}

#[test]
fn finished_job_costs_nothing() {
    let mut job = pytorch(1, "");
    let done = Observed::with_pods([
        (slot(ReplicaType::Master, 0), pod(PodPhase::Succeeded)),
        (slot(ReplicaType::Worker, 0), pod(PodPhase::Succeeded)),
    ]);
    let plan = reconcile(&job, &done, T0);
    apply_status(&mut job, &plan);
    let plan = reconcile(&job, &done, later(3600));
    assert!(!plan.has_work(), "{plan:#?}");
}
