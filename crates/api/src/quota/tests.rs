use serde_json::json;

use super::*;
use crate::validation::dns_label;

fn quota(hard: &serde_json::Value) -> ResourceQuota {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "team-a", "namespace": "team-a"},
        "spec": {"hard": hard},
    }))
    .expect("a ResourceQuota")
}

fn usage(pairs: &[(QuotaResource, u64)]) -> Usage {
    Usage(pairs.iter().copied().collect())
}

fn messages(issues: &[Issue]) -> Vec<String> {
    issues
        .iter()
        .map(|issue| format!("{}: {}", issue.path, issue.message))
        .collect()
}

#[test]
fn keys_name_the_resources_trainctl_counts() {
    use QuotaResource::*;
    for (key, resource) in [
        ("cpu", RequestsCpu),
        ("requests.cpu", RequestsCpu),
        ("requests.memory", RequestsMemory),
        ("nvidia.com/gpu", RequestsGpu),
        ("requests.nvidia.com/gpu", RequestsGpu),
        ("limits.nvidia.com/gpu", LimitsGpu),
        ("limits.cpu", LimitsCpu),
        ("pods", Pods),
        ("count/tfjobs.kubeflow.org", Count(JobKind::TFJob)),
        ("count/pytorchjobs.kubeflow.org", Count(JobKind::PyTorchJob)),
    ] {
        assert_eq!(QuotaResource::from_key(key), Some(resource), "{key}");
    }
    for other in [
        "services",
        "count/deployments.apps",
        "count/tfjobs",
        "requests.storage",
    ] {
        assert_eq!(QuotaResource::from_key(other), None, "{other}");
    }
}

#[test]
fn hard_amounts_are_read_in_millicores_bytes_and_units() {
    let read = Quota::of(&quota(&json!({
        "requests.cpu": "500m",
        "requests.memory": "8Gi",
        "requests.nvidia.com/gpu": "4",
        "services": "3",
    })))
    .expect("valid");
    let hard: Vec<(&str, u64)> = read
        .hard
        .iter()
        .map(|h| (h.key.as_str(), h.limit))
        .collect();
    assert_eq!(
        hard,
        [
            ("requests.cpu", 500),
            ("requests.memory", 8 << 30),
            ("requests.nvidia.com/gpu", 4)
        ]
    );
}

#[test]
fn validation_follows_kubernetes() {
    let mut bad = quota(&json!({
        "requests.nvidia.com/gpu": "1.5",
        "pods": "-1",
        "requests.cpu": "lots",
        "services": "2",
    }));
    bad.metadata.name = Some("Team_A".into());
    assert_eq!(
        messages(&validate(&bad)),
        [
            "metadata.name: `Team_A` is not a DNS-1123 subdomain: ".to_owned()
                + &dns_label("Team_A", false).expect_err("invalid"),
            "spec.hard[pods]: `-1` must be greater than or equal to 0".to_owned(),
            format!(
                "spec.hard[requests.cpu]: {}",
                quantity::parse_nanos("lots").expect_err("invalid")
            ),
            "spec.hard[requests.nvidia.com/gpu]: `1.5` must be an integer".to_owned(),
            "spec.hard[services]: not counted by trainctl, ignored: it counts requests.cpu, \
             requests.memory, requests.nvidia.com/gpu, limits.cpu, limits.memory, \
             limits.nvidia.com/gpu, pods and count/<plural>.kubeflow.org"
                .to_owned(),
        ]
    );
    assert!(Quota::of(&bad).is_err());
}

#[test]
fn a_job_over_what_is_left_waits_in_kubernetes_words() {
    let read = Quota::of(&quota(
        &json!({"requests.nvidia.com/gpu": "4", "requests.cpu": "4"}),
    ))
    .expect("valid");
    let used = usage(&[
        (QuotaResource::RequestsGpu, 2),
        (QuotaResource::RequestsCpu, 1_500),
    ]);
    let job = usage(&[
        (QuotaResource::RequestsGpu, 4),
        (QuotaResource::RequestsCpu, 500),
    ]);
    assert_eq!(
        read.check(&used, &job),
        QuotaCheck::Exceeded(
            "exceeded quota: team-a, requested: requests.nvidia.com/gpu=4, used: \
             requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=4"
                .into()
        )
    );
    let small = usage(&[(QuotaResource::RequestsGpu, 2)]);
    assert_eq!(read.check(&used, &small), QuotaCheck::Fits);
}

#[test]
fn a_job_larger_than_the_quota_can_never_fit() {
    let read = Quota::of(&quota(&json!({"requests.memory": "8Gi"}))).expect("valid");
    let job = usage(&[(QuotaResource::RequestsMemory, 9 << 30)]);
    assert_eq!(
        read.check(&Usage::default(), &job),
        QuotaCheck::NeverFits(
            "exceeds quota: team-a, requested: requests.memory=9Gi, limited: \
             requests.memory=8Gi; the job asks for more than the quota allows in all and can \
             never run under it (raise spec.hard or ask for less)"
                .into()
        )
    );
}

#[test]
fn quantities_are_printed_as_kubernetes_writes_them() {
    assert_eq!(QuotaResource::RequestsCpu.quantity_text(4_000), "4");
    assert_eq!(QuotaResource::RequestsCpu.quantity_text(500), "500m");
    assert_eq!(QuotaResource::RequestsMemory.quantity_text(8 << 30), "8Gi");
    assert_eq!(QuotaResource::RequestsMemory.quantity_text(1_000), "1000");
    assert_eq!(QuotaResource::RequestsMemory.quantity_text(0), "0");
    assert_eq!(QuotaResource::Pods.quantity_text(3), "3");
}
