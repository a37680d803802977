//! The HorizontalPodAutoscaler as upstream's v1.9.4 builds it, and the jobs that have none.

use serde_json::json;

use super::*;
use crate::objects::{BuildOptions, build_objects};
use crate::test_jobs::load_job;

/// upstream's `pytorch/elastic/imagenet` example, as the repository keeps it.
const IMAGENET: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/fixtures/upstream/pytorch-elastic-imagenet-imagenet.yaml"
));

/// An elastic PyTorchJob `ml/elastic` (uid `u-1`) of 2 workers with `policy` as its
/// `elasticPolicy`.
fn elastic(policy: &str) -> TrainingJob {
    load_job(&format!(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {{name: elastic, namespace: ml, \
         uid: u-1}}\nspec:\n  elasticPolicy: {policy}\n  pytorchReplicaSpecs:\n    Worker:\n      \
         replicas: 2\n      template: {{spec: {{containers: [{{name: pytorch, image: p}}]}}}}\n"
    ))
}

fn to_json(hpa: Option<HorizontalPodAutoscaler>) -> serde_json::Value {
    serde_json::to_value(hpa.expect("an HPA")).expect("serializes")
}

#[test]
fn the_imagenet_example_is_autoscaled_between_its_bounds_by_its_metrics() {
    let mut job = load_job(IMAGENET);
    job.metadata_mut().namespace = Some("ml".to_owned());
    job.metadata_mut().uid = Some("u-1".to_owned());
    assert!(has_hpa(&job));
    assert_eq!(
        to_json(build_hpa(&job)),
        json!({
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {
                "name": "elastic-example-imagenet",
                "namespace": "ml",
                "ownerReferences": [{
                    "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                    "name": "elastic-example-imagenet", "uid": "u-1",
                    "controller": true, "blockOwnerDeletion": true,
                }],
            },
            "spec": {
                "scaleTargetRef": {
                    "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                    "name": "elastic-example-imagenet",
                },
                "minReplicas": 1,
                "maxReplicas": 3,
                "metrics": [{
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 80},
                    },
                }],
            },
        })
    );
}

#[test]
fn an_unset_bound_is_the_other_one_and_both_unset_are_the_worker_replicas() {
    let metrics = "metrics: [{type: Pods, pods: {metric: {name: qps}, target: {type: \
                   AverageValue, averageValue: '10'}}}]";
    let bounds = |policy: &str| {
        let hpa = to_json(build_hpa(&elastic(policy)));
        (
            hpa["spec"]["minReplicas"].clone(),
            hpa["spec"]["maxReplicas"].clone(),
        )
    };
    assert_eq!(
        bounds(&format!("{{maxReplicas: 4, {metrics}}}")),
        (json!(4), json!(4))
    );
    assert_eq!(
        bounds(&format!("{{minReplicas: 3, {metrics}}}")),
        (json!(3), json!(3))
    );
    assert_eq!(bounds(&format!("{{{metrics}}}")), (json!(2), json!(2)));
    let hpa = to_json(build_hpa(&elastic(&format!(
        "{{maxReplicas: 4, {metrics}}}"
    ))));
    assert_eq!(hpa["spec"]["metrics"][0]["pods"]["metric"]["name"], "qps");
}

#[test]
fn only_an_elastic_pytorch_job_with_metrics_has_one() {
    let none = elastic("{minReplicas: 1, maxReplicas: 3}");
    assert!(!has_hpa(&none));
    assert_eq!(build_hpa(&none), None);
    // An empty list is a list: upstream creates the HPA, and the API server defaults its metric.
    let empty = elastic("{minReplicas: 1, maxReplicas: 3, metrics: []}");
    assert!(has_hpa(&empty));
    assert_eq!(to_json(build_hpa(&empty))["spec"]["metrics"], json!([]));
    let plain = load_job(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: p}\nspec:\n  \
         pytorchReplicaSpecs:\n    Worker: {template: {spec: {containers: [{name: pytorch, \
         image: p}]}}}\n",
    );
    assert_eq!(build_hpa(&plain), None);
}

#[test]
fn the_job_objects_hold_the_hpa() {
    let job = load_job(IMAGENET);
    let objects = build_objects(&job, &BuildOptions::default());
    assert_eq!(objects.hpa, build_hpa(&job));
    assert!(objects.hpa.is_some());
    let none = elastic("{maxReplicas: 3}");
    assert_eq!(build_objects(&none, &BuildOptions::default()).hpa, None);
}

/// The HPA scales the job through its scale subresource, whose `labelSelectorPath` is
/// `.status.replicaStatuses.Worker.selector`: the status names the `Worker` pods exactly.
#[test]
fn the_status_selects_the_worker_pods_for_the_scale_subresource() {
    use crate::reconcile::{Observed, reconcile};
    use trainctl_api::ReplicaType;
    let job = load_job(IMAGENET);
    let now = "2026-01-01T00:00:00Z".parse().expect("a timestamp");
    let status = reconcile(&job, &Observed::default(), now)
        .status
        .expect("a new job's status");
    let selector = &status.replica_statuses[&ReplicaType::Worker].selector;
    assert_eq!(
        selector,
        "training.kubeflow.org/job-name=elastic-example-imagenet,\
         training.kubeflow.org/operator-name=pytorchjob-controller,\
         training.kubeflow.org/replica-type=worker"
    );
    let objects = build_objects(&job, &BuildOptions::default());
    assert_eq!(objects.pods.len(), 2);
    for pod in &objects.pods {
        let labels = pod.metadata.labels.as_ref().expect("labels");
        for pair in selector.split(',') {
            let (key, value) = pair.split_once('=').expect("key=value");
            assert_eq!(labels.get(key).map(String::as_str), Some(value), "{pair}");
        }
    }
}
