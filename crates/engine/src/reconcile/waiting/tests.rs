//! Tests of the waiting words, alone and in the plans `reconcile` makes of waiting jobs.

use super::*;

fn shortfall(resource: Resource, needed: u64, free: u64) -> String {
    fact(&WaitingFact::InsufficientResources(vec![Shortfall {
        resource,
        needed,
        free,
    }]))
}

#[test]
fn a_job_waiting_for_admission_has_not_started_until_admitted() {
    use crate::reconcile::reconcile;
    use crate::reconcile::scenario::{job, observed};

    // A job just submitted: no status yet.
    let waiting = job("TFJob Worker=1");
    let queued = observed("queued", &waiting);
    let now = jiff::Timestamp::UNIX_EPOCH;
    let plan = reconcile(&waiting, &queued, now);
    let status = plan.status.expect("the Pending words");
    assert_eq!(status.start_time, None);

    let mut admitted = waiting.clone();
    *admitted.status_mut() = Some(status);
    let plan = reconcile(&admitted, &observed("", &admitted), now);
    let started = plan.status.and_then(|status| status.start_time);
    assert_eq!(started.map(|time| time.0), Some(now));
}

/// The plan of a new `TFJob Worker=2` under Kubernetes' own gang scheduling, its PodGroup
/// as given.
fn under_kubernetes(pod_group: Option<PodGroupPhase>, unplaced: Option<&str>) -> crate::Plan {
    with_pods_under_kubernetes("", pod_group, unplaced)
}

fn with_pods_under_kubernetes(
    pods: &str,
    pod_group: Option<PodGroupPhase>,
    unplaced: Option<&str>,
) -> crate::Plan {
    use crate::reconcile::scenario::{job, observed};
    let job = job("TFJob Worker=2");
    let mut seen = observed(pods, &job);
    seen.gang = Some(ObservedGang {
        scheduler: GangScheduler::Kubernetes,
        pod_group,
        unplaced: unplaced.map(str::to_owned),
    });
    crate::reconcile(&job, &seen, jiff::Timestamp::UNIX_EPOCH)
}

fn created_message(plan: &crate::Plan) -> String {
    let status = plan.status.as_ref().expect("a status");
    let created = status
        .conditions
        .iter()
        .find(|c| c.type_ == trainctl_api::JobConditionType::Created)
        .expect("Created");
    created.message.clone()
}

#[test]
fn kubernetes_gang_pods_wait_for_their_pod_group_then_say_why_it_is_not_placed() {
    let plan = under_kubernetes(None, None);
    assert!(plan.create_pods.is_empty(), "pods before their PodGroup");
    assert!(plan.create_services.is_empty());
    assert_eq!(
        plan.pod_group,
        Some(crate::reconcile::PodGroupAction::Ensure)
    );
    assert!(
        created_message(&plan).ends_with("Pending: waiting for PodGroup mnist to be created."),
        "{}",
        created_message(&plan)
    );

    let plan = under_kubernetes(
        Some(PodGroupPhase::Pending),
        Some("Unschedulable: pod group is unschedulable"),
    );
    assert_eq!(plan.create_pods.len(), 2, "the PodGroup exists: every pod");
    assert!(
        created_message(&plan).ends_with(
            "Pending: PodGroup mnist cannot be placed whole (Unschedulable: pod group is \
             unschedulable)."
        ),
        "{}",
        created_message(&plan)
    );

    let plan = under_kubernetes(Some(PodGroupPhase::Running), None);
    assert_eq!(plan.create_pods.len(), 2);
    assert!(!created_message(&plan).contains("Pending"));
}

#[test]
fn the_groups_words_and_one_pods_stand_for_its_pending_pods() {
    let pods = "worker-0 Pending reason=Unschedulable; worker-1 Pending reason=Unschedulable";
    let plan = with_pods_under_kubernetes(pods, Some(PodGroupPhase::Pending), None);
    assert!(
        created_message(&plan).contains("mnist-worker-0 is pending (Unschedulable)"),
        "before the scheduler says why for the group, each pod does: {}",
        created_message(&plan)
    );
    let plan = with_pods_under_kubernetes(
        pods,
        Some(PodGroupPhase::Pending),
        Some("Unschedulable: 0/1 nodes are available"),
    );
    assert_eq!(
        created_message(&plan),
        "TFJob mnist is created. Pending: PodGroup mnist cannot be placed whole \
         (Unschedulable: 0/1 nodes are available); mnist-worker-0 is pending \
         (Unschedulable); 1 more pending."
    );
}

/// Kubernetes 1.36 writes `PodGroupScheduled=False` again when a pod beyond `minCount` fails its
/// own attempt: once `minAvailable` pods run, that pod waits alone and the group is not blamed.
#[test]
fn a_group_placed_with_min_available_is_not_said_unplaced_again() {
    use crate::reconcile::scenario::{job, observed};
    let mut job = job("TFJob Worker=3");
    job.run_policy_mut().scheduling_policy = Some(trainctl_api::SchedulingPolicy {
        min_available: Some(2),
        ..trainctl_api::SchedulingPolicy::default()
    });
    let message = |pods: &str| {
        let mut seen = observed(pods, &job);
        seen.gang = Some(ObservedGang {
            scheduler: GangScheduler::Kubernetes,
            pod_group: Some(PodGroupPhase::Pending),
            unplaced: Some("Unschedulable: pod group is unschedulable".to_owned()),
        });
        created_message(&crate::reconcile(&job, &seen, jiff::Timestamp::UNIX_EPOCH))
    };
    assert_eq!(
        message("worker-0 Running; worker-1 Running; worker-2 Pending reason=Unschedulable"),
        "TFJob mnist is created. Pending: mnist-worker-2 is pending (Unschedulable)."
    );
    assert_eq!(
        message(
            "worker-0 Running; worker-1 Pending reason=Unschedulable; worker-2 Pending reason=Unschedulable"
        ),
        "TFJob mnist is created. Pending: PodGroup mnist cannot be placed whole \
         (Unschedulable: pod group is unschedulable); mnist-worker-1 is pending \
         (Unschedulable); 1 more pending."
    );
}

#[test]
fn waiting_facts_are_worded_plainly() {
    assert_eq!(shortfall(Resource::Gpu, 2, 1), "waiting for 2 GPUs, 1 free");
    assert_eq!(shortfall(Resource::Gpu, 1, 0), "waiting for 1 GPU, 0 free");
    assert_eq!(
        shortfall(Resource::CpuMillis, 4000, 2500),
        "waiting for 4 CPUs, 2.5 free"
    );
    assert_eq!(
        shortfall(Resource::MemoryBytes, 16 << 30, 3 << 29),
        "waiting for 16Gi memory, 1.5Gi free"
    );
    assert_eq!(fact(&WaitingFact::Queued), "queued behind other jobs");
    let both = WaitingFact::InsufficientResources(vec![
        Shortfall {
            resource: Resource::Gpu,
            needed: 2,
            free: 1,
        },
        Shortfall {
            resource: Resource::MemoryBytes,
            needed: 512 << 20,
            free: 0,
        },
    ]);
    assert_eq!(
        fact(&both),
        "waiting for 2 GPUs, 1 free and 512Mi memory, 0 free"
    );
}
