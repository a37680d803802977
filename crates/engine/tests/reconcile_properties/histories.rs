//! Random histories: a simulated cluster executes each plan, the world changes at random, and
//! the engine reconciles again.

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;
use trainctl_api::{ConditionStatus, JobConditionType, JobStatus, TrainingJob};
use trainctl_engine::reconcile;
use trainctl_engine::reconcile::{
    GangScheduler, Observed, ObservedGang, ObservedReplica, Plan, PodGroupAction, PodGroupPhase,
    PodPhase, ReplicaSlot, RestartBackoff, WaitingFact,
};

use crate::T0;
use crate::jobs::{build, job_shape};

/// Something that happens in the world between two reconciles.
#[derive(Debug, Clone)]
enum Change {
    /// The pod in the `n`-th occupied slot moves on (starts, finishes, fails).
    Advance { pod: usize, outcome: u8 },
    /// The pod in the `n`-th occupied slot restarts a container in place.
    RestartInPlace { pod: usize },
    /// The pod in the `n`-th occupied slot vanishes (node lost, deleted by hand).
    Vanish { pod: usize },
    /// Pods being deleted are gone.
    DeletionsComplete,
    /// Time passes.
    Wait { seconds: i64 },
    /// `suspend` is flipped.
    ToggleSuspend,
    /// The `n`-th replica type is scaled to `replicas`.
    Scale { replica_type: usize, replicas: i32 },
    /// The runtime cannot start pods for now, or can again.
    ToggleWaiting,
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        6 => (0..8_usize, 0..8_u8).prop_map(|(pod, outcome)| Change::Advance { pod, outcome }),
        1 => (0..8_usize).prop_map(|pod| Change::RestartInPlace { pod }),
        1 => (0..8_usize).prop_map(|pod| Change::Vanish { pod }),
        3 => Just(Change::DeletionsComplete),
        2 => (1..90_i64).prop_map(|seconds| Change::Wait { seconds }),
        1 => Just(Change::ToggleSuspend),
        1 => (0..5_usize, 0..4_i32).prop_map(|(replica_type, replicas)| Change::Scale {
            replica_type,
            replicas
        }),
        1 => Just(Change::ToggleWaiting),
    ]
}

/// The world a runtime would observe.
struct Cluster {
    job: TrainingJob,
    pods: BTreeMap<ReplicaSlot, ObservedReplica>,
    services: BTreeSet<ReplicaSlot>,
    retired_restarts: u32,
    gang: Option<ObservedGang>,
    pod_group_wanted: bool,
    waiting: bool,
    now: Timestamp,
}

impl Cluster {
    fn observed(&self) -> Observed {
        Observed {
            pods: self.pods.clone(),
            services: self.services.clone(),
            gang: self.gang.clone(),
            waiting: if self.waiting {
                vec![WaitingFact::Queued]
            } else {
                Vec::new()
            },
            refused: BTreeMap::new(),
            retired_restarts: self.retired_restarts,
            restart_backoff: RestartBackoff::NONE,
        }
    }

    /// Executes `plan`, checking that it never creates what exists nor deletes what is going.
    fn execute(&mut self, plan: &Plan) -> Result<(), TestCaseError> {
        for slot in &plan.create_pods {
            prop_assert!(
                !self.pods.contains_key(slot),
                "creates pod {slot} over an existing one"
            );
            self.pods
                .insert(slot.clone(), ObservedReplica::new(PodPhase::Pending));
        }
        for deletion in &plan.delete_pods {
            let pod = self.pods.get_mut(&deletion.slot);
            prop_assert!(
                pod.as_ref().is_some_and(|pod| !pod.deleting),
                "deletes pod {} that is absent or already going",
                deletion.slot
            );
            if let Some(pod) = pod {
                pod.deleting = true;
            }
        }
        for slot in &plan.create_services {
            prop_assert!(self.services.insert(slot.clone()), "service {slot} exists");
        }
        for deletion in &plan.delete_services {
            prop_assert!(
                self.services.remove(&deletion.slot),
                "deletes absent service {}",
                deletion.slot
            );
        }
        if let Some(status) = &plan.status {
            *self.job.status_mut() = Some(status.clone());
        }
        self.retired_restarts = plan.retired_restarts;
        // The PodGroup itself appears later, when time passes (see `Change::Wait`).
        match plan.pod_group {
            Some(PodGroupAction::Ensure) => self.pod_group_wanted = true,
            Some(PodGroupAction::Delete) => {
                self.pod_group_wanted = false;
                if let Some(gang) = &mut self.gang {
                    gang.pod_group = None;
                }
            }
            None => {}
        }
        Ok(())
    }

    fn nth_pod(&mut self, n: usize) -> Option<&mut ObservedReplica> {
        let len = self.pods.len();
        if len == 0 {
            return None;
        }
        self.pods.values_mut().nth(n % len)
    }

    fn apply(&mut self, change: &Change) {
        let now = self.now;
        match *change {
            Change::Advance { pod, outcome } => {
                let Some(pod) = self.nth_pod(pod) else { return };
                match (pod.phase, outcome) {
                    (PodPhase::Pending, 0..=5) => {
                        pod.phase = PodPhase::Running;
                        pod.started_at = Some(now);
                    }
                    (PodPhase::Pending, _) => {
                        pod.reason = Some("ImagePullBackOff".to_owned());
                    }
                    (PodPhase::Running, 0..=2) => {
                        pod.phase = PodPhase::Succeeded;
                        pod.exit_code = Some(0);
                        pod.finished_at = Some(now);
                    }
                    (PodPhase::Running, _) => {
                        pod.phase = PodPhase::Failed;
                        pod.exit_code = [None, Some(1), Some(2), Some(137), Some(143)]
                            .get(usize::from(outcome) - 3)
                            .copied()
                            .flatten();
                        pod.finished_at = Some(now);
                    }
                    _ => {}
                }
            }
            Change::RestartInPlace { pod } => {
                if let Some(pod) = self.nth_pod(pod)
                    && pod.phase == PodPhase::Running
                {
                    pod.restart_count += 1;
                }
            }
            Change::Vanish { pod } => {
                let len = self.pods.len();
                if let Some(slot) = self.pods.keys().nth(pod % len.max(1)).cloned() {
                    self.pods.remove(&slot);
                }
            }
            Change::DeletionsComplete => self.pods.retain(|_, pod| !pod.deleting),
            Change::Wait { seconds } => {
                self.now = now
                    .checked_add(SignedDuration::from_secs(seconds))
                    .expect("small waits");
                if let Some(gang) = &mut self.gang {
                    gang.pod_group = match gang.pod_group {
                        None if self.pod_group_wanted => Some(PodGroupPhase::Pending),
                        Some(PodGroupPhase::Pending) => Some(PodGroupPhase::Inqueue),
                        phase => phase,
                    };
                }
            }
            Change::ToggleSuspend => {
                let policy = self.job.run_policy_mut();
                policy.suspend = Some(!policy.suspend.unwrap_or(false));
            }
            Change::Scale {
                replica_type,
                replicas,
            } => {
                let specs = self.job.replica_specs_mut();
                let len = specs.len();
                if let Some(spec) = specs.values_mut().nth(replica_type % len.max(1)) {
                    spec.replicas = Some(replicas);
                }
            }
            Change::ToggleWaiting => self.waiting = !self.waiting,
        }
    }
}

fn is_true(status: Option<&JobStatus>, type_: JobConditionType) -> bool {
    status.is_some_and(|s| s.is_true(type_))
}

/// The finished conditions of a status: they must never change once set.
fn finish(status: Option<&JobStatus>) -> Vec<(JobConditionType, ConditionStatus, String)> {
    status
        .map(|s| {
            s.conditions
                .iter()
                .filter(|c| {
                    matches!(
                        c.type_,
                        JobConditionType::Succeeded | JobConditionType::Failed
                    )
                })
                .map(|c| (c.type_, c.status, c.message.clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn check_invariants(cluster: &Cluster, plan: &Plan) -> Result<(), TestCaseError> {
    let before = cluster.job.status();
    let after = plan.status.as_ref().or(before);
    prop_assert!(
        !(is_true(after, JobConditionType::Succeeded) && is_true(after, JobConditionType::Failed)),
        "both Succeeded and Failed: {after:#?}"
    );
    if before.is_some_and(JobStatus::is_finished) {
        prop_assert_eq!(
            finish(before),
            finish(after),
            "Succeeded and Failed are absorbing"
        );
        prop_assert!(
            plan.create_pods.is_empty(),
            "a finished job creates nothing"
        );
        prop_assert!(plan.transitions.is_empty(), "a finished job counts nothing");
        prop_assert!(
            plan.requeue_after.is_none()
                || cluster
                    .job
                    .run_policy()
                    .ttl_seconds_after_finished
                    .is_some(),
            "a finished job is requeued only for its TTL"
        );
    }
    // Suspended and finished statuses keep their last counts (upstream zeroes only `active`);
    // everything else is counted afresh from the job's slots.
    let frozen =
        cluster.job.run_policy().is_suspended() || before.is_some_and(JobStatus::is_finished);
    if let Some(status) = after.filter(|_| !frozen) {
        for (replica_type, counts) in &status.replica_statuses {
            let replicas = cluster
                .job
                .replica_specs()
                .get(replica_type)
                .map_or(0, trainctl_api::ReplicaSpec::replicas_or_default);
            prop_assert!(
                counts.active + counts.succeeded + counts.failed <= replicas.max(0),
                "{replica_type}: {counts:?} exceed {replicas} replicas"
            );
        }
    }
    for slot in &plan.create_pods {
        let replicas = cluster
            .job
            .replica_specs()
            .get(&slot.replica_type)
            .map_or(0, trainctl_api::ReplicaSpec::replicas_or_default);
        prop_assert!(
            slot.index >= 0 && slot.index < replicas,
            "creates {slot} beyond replicas"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(crate::config(96))]

    #[test]
    fn reconcile_histories_keep_the_invariants(
        shape in job_shape(),
        gang in proptest::bool::weighted(0.2),
        changes in proptest::collection::vec(change(), 1..40),
    ) {
        let mut cluster = Cluster {
            job: build(&shape),
            pods: BTreeMap::new(),
            services: BTreeSet::new(),
            retired_restarts: 0,
            gang: gang.then_some(ObservedGang { scheduler: GangScheduler::Volcano, pod_group: None, unplaced: None }),
            pod_group_wanted: false,
            waiting: false,
            now: T0,
        };
        for change in &changes {
            let observed = cluster.observed();
            let plan = reconcile(&cluster.job, &observed, cluster.now);
            prop_assert_eq!(&plan, &reconcile(&cluster.job, &observed, cluster.now), "deterministic");
            check_invariants(&cluster, &plan)?;
            cluster.execute(&plan)?;

            // Executed once, the plan needs no repeating.
            let again = reconcile(&cluster.job, &cluster.observed(), cluster.now);
            check_invariants(&cluster, &again)?;
            prop_assert!(again.create_pods.is_empty(), "creates again: {:?}", again.create_pods);
            prop_assert!(again.delete_pods.is_empty(), "deletes again: {:?}", again.delete_pods);
            prop_assert!(again.create_services.is_empty(), "creates services again");
            prop_assert!(again.delete_services.is_empty(), "deletes services again");
            prop_assert!(again.events.is_empty(), "records again: {:?}", again.events);
            prop_assert!(again.transitions.is_empty(), "counts again: {:?}", again.transitions);
            cluster.execute(&again)?;

            if plan.delete_job {
                break;
            }
            cluster.apply(change);
        }
    }
}
