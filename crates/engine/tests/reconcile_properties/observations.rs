//! Arbitrary, even inconsistent, observations: reconcile answers them all, the same way twice.

use std::collections::BTreeMap;

use jiff::SignedDuration;
use proptest::prelude::*;
use trainctl_api::{ConditionStatus, JobConditionType, JobStatus, ReplicaType};
use trainctl_engine::reconcile;
use trainctl_engine::reconcile::{
    Observed, ObservedReplica, PodPhase, ReplicaSlot, RestartBackoff,
};

use crate::T0;
use crate::jobs::{build, job_shape};

fn any_replica_type() -> impl Strategy<Value = ReplicaType> {
    prop_oneof![
        Just(ReplicaType::Chief),
        Just(ReplicaType::Master),
        Just(ReplicaType::PS),
        Just(ReplicaType::Worker),
        Just(ReplicaType::Evaluator),
        Just(ReplicaType::Launcher),
        Just(ReplicaType::Other("Ghost".to_owned())),
    ]
}

fn any_pod() -> impl Strategy<Value = ObservedReplica> {
    (
        prop_oneof![
            Just(PodPhase::Pending),
            Just(PodPhase::Running),
            Just(PodPhase::Succeeded),
            Just(PodPhase::Failed)
        ],
        proptest::option::of(any::<i32>()),
        proptest::option::of("[A-Za-z]{0,12}"),
        proptest::option::of("[A-Za-z \"]{0,24}"),
        any::<i32>(),
        any::<bool>(),
        proptest::option::of(-1_000_000_i64..1_000_000),
    )
        .prop_map(
            |(phase, exit_code, reason, message, restart_count, deleting, finished)| {
                ObservedReplica {
                    phase,
                    exit_code,
                    reason,
                    message,
                    restart_count,
                    deleting,
                    started_at: None,
                    finished_at: finished
                        .and_then(|s| T0.checked_add(SignedDuration::from_secs(s)).ok()),
                }
            },
        )
}

fn any_status() -> impl Strategy<Value = Option<JobStatus>> {
    let condition = (
        prop_oneof![
            Just(JobConditionType::Created),
            Just(JobConditionType::Running),
            Just(JobConditionType::Restarting),
            Just(JobConditionType::Succeeded),
            Just(JobConditionType::Failed),
            Just(JobConditionType::Suspended),
        ],
        prop_oneof![
            Just(ConditionStatus::True),
            Just(ConditionStatus::False),
            Just(ConditionStatus::Unknown)
        ],
    )
        .prop_map(|(type_, status)| trainctl_api::JobCondition {
            type_,
            status,
            reason: String::new(),
            message: String::new(),
            last_update_time: None,
            last_transition_time: None,
        });
    proptest::option::of(
        (
            proptest::collection::vec(condition, 0..6),
            proptest::option::of(-10_000_000_i64..10_000_000),
            proptest::option::of(-10_000_000_i64..10_000_000),
        )
            .prop_map(|(conditions, start, completion)| {
                let time = |s: i64| {
                    T0.checked_add(SignedDuration::from_secs(s))
                        .ok()
                        .map(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time)
                };
                JobStatus {
                    conditions,
                    start_time: start.and_then(time),
                    completion_time: completion.and_then(time),
                    ..JobStatus::default()
                }
            }),
    )
}

proptest! {
    #![proptest_config(crate::config(256))]

    #[test]
    fn reconcile_is_total_and_deterministic_on_any_observation(
        shape in job_shape(),
        status in any_status(),
        suspend in any::<bool>(),
        pods in proptest::collection::btree_map(
            (any_replica_type(), -3..12_i32).prop_map(|(t, i)| ReplicaSlot::new(t, i)),
            any_pod(),
            0..16,
        ),
        services in proptest::collection::btree_set(
            (any_replica_type(), -3..12_i32).prop_map(|(t, i)| ReplicaSlot::new(t, i)),
            0..8,
        ),
        retired in any::<u32>(),
        backoff in (any::<i32>(), any::<i32>()),
        now in -10_000_000_i64..10_000_000,
    ) {
        let mut job = build(&shape);
        *job.status_mut() = status;
        job.run_policy_mut().suspend = Some(suspend);
        let observed = Observed {
            pods,
            services,
            gang: None,
            waiting: Vec::new(),
            refused: BTreeMap::new(),
            retired_restarts: retired,
            restart_backoff: RestartBackoff {
                initial: SignedDuration::from_secs(i64::from(backoff.0)),
                max: SignedDuration::from_secs(i64::from(backoff.1)),
            },
        };
        let now = T0.checked_add(SignedDuration::from_secs(now)).expect("in range");
        let plan = reconcile(&job, &observed, now);
        prop_assert_eq!(&plan, &reconcile(&job, &observed, now));
        let sorted = |slots: Vec<&ReplicaSlot>| slots.windows(2).all(|w| w[0] <= w[1]);
        prop_assert!(sorted(plan.create_pods.iter().collect()));
        prop_assert!(sorted(plan.delete_pods.iter().map(|d| &d.slot).collect()));
    }
}
