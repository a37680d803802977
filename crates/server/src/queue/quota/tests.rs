use std::collections::BTreeMap;

use trainctl_api::quota::QuotaResource;
use trainctl_local::kubelet::admission::Amounts;

use super::super::{Decision, Queue, Waiting};
use super::*;

/// 8 CPUs and 4 GPUs.
fn queue() -> Queue {
    Queue::new(Amounts {
        cpu_millis: 8_000,
        memory_bytes: 0,
        gpus: 4,
    })
}

/// A quota `name` of `gpus` GPUs.
fn gpu_quota(name: &str, gpus: u64) -> Quota {
    let quota: k8s_openapi::api::core::v1::ResourceQuota =
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "spec": {"hard": {"requests.nvidia.com/gpu": gpus.to_string()}},
        }))
        .expect("a quota");
    Quota::of(&quota).expect("valid")
}

fn gpus(count: u64) -> Amounts {
    Amounts {
        cpu_millis: 1_000,
        memory_bytes: 0,
        gpus: count,
    }
}

fn charge(count: u64) -> Usage {
    Usage(BTreeMap::from([
        (QuotaResource::RequestsGpu, count),
        (QuotaResource::RequestsCpu, 1_000),
    ]))
}

/// Queues `uid` of `namespace` asking for `count` GPUs.
fn push(queue: &Queue, uid: &str, namespace: &str, count: u64, seq: u64) {
    queue.push(Waiting {
        uid,
        label: &format!("tfjob/{namespace}/{uid}"),
        priority: 0,
        seq,
        namespace,
        charge: charge(count),
    });
}

/// Team A holds 4 GPUs of its quota of 4 (a1, a2 admitted); a3 waits for its quota.
fn team_a_at_its_quota() -> Queue {
    let queue = queue();
    queue.set_quotas("team-a", vec![gpu_quota("team-a", 4)]);
    queue.set_quotas("team-b", vec![gpu_quota("team-b", 2)]);
    for (seq, uid) in ["a1", "a2"].into_iter().enumerate() {
        push(&queue, uid, "team-a", 2, seq as u64);
        let free = Amounts {
            cpu_millis: 8_000,
            memory_bytes: 0,
            gpus: 4 - 2 * seq as u64,
        };
        assert!(matches!(
            queue.decide(uid, &gpus(2), &free, true),
            Decision::Take(_)
        ));
    }
    push(&queue, "a3", "team-a", 2, 3);
    queue
}

const A3_EXCEEDED: &str = "exceeded quota: team-a, requested: requests.nvidia.com/gpu=2, used: \
                           requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4; used \
                           by tfjob/team-a/a1, tfjob/team-a/a2";

#[test]
fn a_quota_wait_names_the_queued_jobs_ahead_it_counts() {
    let queue = queue();
    queue.set_quotas("team-a", vec![gpu_quota("team-a", 2)]);
    // q1 is queued (the machine is busy), not admitted: it counts, and is named.
    push(&queue, "q1", "team-a", 2, 0);
    push(&queue, "q2", "team-a", 1, 1);
    assert_eq!(
        queue.quota_hold("q2").as_deref(),
        Some(
            "exceeded quota: team-a, requested: requests.nvidia.com/gpu=1, used: \
             requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=2; used by \
             tfjob/team-a/q1 (queued ahead)"
        )
    );
}

#[test]
fn a_job_over_its_quota_waits_in_kubernetes_words_and_another_team_passes_it() {
    let queue = team_a_at_its_quota();
    assert_eq!(
        queue.decide("a3", &gpus(2), &gpus(0), false),
        Decision::Quota(A3_EXCEEDED.into())
    );
    assert_eq!(queue.quota_hold("a3").as_deref(), Some(A3_EXCEEDED));
    push(&queue, "b1", "team-b", 0, 4);
    assert_eq!(queue.position("b1"), Some(0), "a3 holds no place");
    assert!(queue.may_try("b1"));
    let taken = queue.decide("b1", &gpus(0), &gpus(0), true);
    assert!(
        matches!(taken, Decision::Take(admitted) if !admitted.backfilled),
        "{taken:?}"
    );
    assert_eq!(
        queue.usage("team-a").get(QuotaResource::RequestsGpu),
        4,
        "what team A's admitted jobs hold"
    );
}

#[test]
fn raising_the_quota_releases_the_job_at_once() {
    let queue = team_a_at_its_quota();
    let turn = queue.turn("a3").expect("queued");
    assert_eq!(
        queue.decide("a3", &gpus(2), &gpus(0), false),
        Decision::Quota(A3_EXCEEDED.into())
    );
    queue.set_quotas("team-a", vec![gpu_quota("team-a", 6)]);
    assert_eq!(queue.quota_hold("a3"), None);
    assert!(super::super::tests::woken(&turn));
    assert!(queue.may_try("a3"));
    assert!(matches!(
        queue.decide("a3", &gpus(2), &gpus(0), false),
        Decision::Short
    ));
}

#[test]
fn a_job_of_the_namespace_ending_releases_the_next() {
    let queue = team_a_at_its_quota();
    queue.decide("a3", &gpus(2), &gpus(0), false);
    queue.ended("a1");
    assert_eq!(queue.quota_hold("a3"), None);
    assert_eq!(queue.usage("team-a").get(QuotaResource::RequestsGpu), 2);
}

#[test]
fn within_a_namespace_the_head_of_line_holds() {
    let queue = team_a_at_its_quota();
    push(&queue, "a4", "team-a", 0, 4);
    assert_eq!(
        queue.quota_hold("a4").as_deref(),
        Some("queued behind tfjob/team-a/a3, which the quota of namespace team-a holds")
    );
}

#[test]
fn a_job_larger_than_its_quota_can_never_fit() {
    let queue = queue();
    queue.set_quotas("team-a", vec![gpu_quota("team-a", 2)]);
    push(&queue, "big", "team-a", 4, 0);
    assert_eq!(
        queue.decide("big", &gpus(4), &gpus(4), true),
        Decision::NeverFitsQuota(
            "exceeds quota: team-a, requested: requests.nvidia.com/gpu=4, limited: \
             requests.nvidia.com/gpu=2; the job asks for more than the quota allows in all and \
             can never run under it (raise spec.hard or ask for less)"
                .into()
        )
    );
}

#[test]
fn a_namespace_without_quota_has_no_limit() {
    let queue = queue();
    push(&queue, "x", "free-for-all", 4, 0);
    assert!(matches!(
        queue.decide("x", &gpus(4), &gpus(4), true),
        Decision::Take(_)
    ));
}
