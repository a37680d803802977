//! Defaulting (docs/semantics.md §1), one test per rule: what `trainctl validate -o yaml` shows.

use serde_json::{Value, json};
use trainctl_api::manifest;

/// Loads one job and returns it, defaulted, as JSON.
fn defaulted(yaml: &str) -> Value {
    let manifests = manifest::load_str("job.yaml", yaml);
    assert!(!manifests.has_errors(), "{:?}", manifests.diagnostics);
    serde_json::to_value(&manifests.jobs[0].job).expect("serializes")
}

fn job(kind: &str, field: &str, specs: &str) -> String {
    format!(
        "apiVersion: kubeflow.org/v1\nkind: {kind}\nmetadata: {{name: j}}\nspec:\n  {field}:\n{specs}"
    )
}

fn replica(replica_type: &str, container: &str, extra: &str) -> String {
    format!(
        "    {replica_type}:\n{extra}      template: {{spec: {{containers: [{{name: {container}, image: img}}]}}}}\n"
    )
}

#[test]
fn replicas_default_to_one() {
    let job = defaulted(&job(
        "TFJob",
        "tfReplicaSpecs",
        &replica("Worker", "tensorflow", ""),
    ));
    assert_eq!(job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"], 1);
}

#[test]
fn mpi_worker_replicas_default_to_zero_and_launcher_to_one() {
    let specs = replica("Launcher", "mpi", "") + &replica("Worker", "mpi", "");
    let job = defaulted(&job("MPIJob", "mpiReplicaSpecs", &specs));
    assert_eq!(job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"], 0);
    assert_eq!(job["spec"]["mpiReplicaSpecs"]["Launcher"]["replicas"], 1);
}

#[test]
fn restart_policy_defaults_per_kind() {
    for (kind, field, replica_type, container, policy) in [
        ("TFJob", "tfReplicaSpecs", "Worker", "tensorflow", "Never"),
        (
            "PyTorchJob",
            "pytorchReplicaSpecs",
            "Worker",
            "pytorch",
            "OnFailure",
        ),
        (
            "XGBoostJob",
            "xgbReplicaSpecs",
            "Master",
            "xgboost",
            "Never",
        ),
        (
            "PaddleJob",
            "paddleReplicaSpecs",
            "Worker",
            "paddle",
            "OnFailure",
        ),
        ("JAXJob", "jaxReplicaSpecs", "Worker", "jax", "Never"),
        ("MPIJob", "mpiReplicaSpecs", "Launcher", "mpi", "Never"),
    ] {
        let job = defaulted(&job(kind, field, &replica(replica_type, container, "")));
        assert_eq!(
            job["spec"][field][replica_type]["restartPolicy"], policy,
            "{kind}"
        );
    }
}

#[test]
fn default_port_is_appended_to_the_default_container_per_kind() {
    for (kind, field, replica_type, container, name, port) in [
        (
            "TFJob",
            "tfReplicaSpecs",
            "Worker",
            "tensorflow",
            "tfjob-port",
            2222,
        ),
        (
            "PyTorchJob",
            "pytorchReplicaSpecs",
            "Worker",
            "pytorch",
            "pytorchjob-port",
            23456,
        ),
        (
            "XGBoostJob",
            "xgbReplicaSpecs",
            "Master",
            "xgboost",
            "xgboostjob-port",
            9999,
        ),
        (
            "PaddleJob",
            "paddleReplicaSpecs",
            "Worker",
            "paddle",
            "master",
            36543,
        ),
        (
            "JAXJob",
            "jaxReplicaSpecs",
            "Worker",
            "jax",
            "jaxjob-port",
            6666,
        ),
    ] {
        let job = defaulted(&job(kind, field, &replica(replica_type, container, "")));
        let ports = &job["spec"][field][replica_type]["template"]["spec"]["containers"][0]["ports"];
        assert_eq!(
            ports,
            &json!([{"name": name, "containerPort": port}]),
            "{kind}"
        );
    }
}

#[test]
fn a_declared_default_port_is_kept_and_not_duplicated() {
    let yaml = "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: j}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      template:\n        spec:\n          containers:\n            - name: tensorflow\n              image: img\n              ports: [{name: tfjob-port, containerPort: 3333}]\n";
    let job = defaulted(yaml);
    let ports =
        &job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["ports"];
    assert_eq!(
        ports,
        &json!([{"name": "tfjob-port", "containerPort": 3333}])
    );
}

#[test]
fn mpi_gets_no_default_port() {
    let job = defaulted(&job(
        "MPIJob",
        "mpiReplicaSpecs",
        &replica("Launcher", "mpi", ""),
    ));
    let container =
        &job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0];
    assert!(container.get("ports").is_none());
}

#[test]
fn run_policy_defaults_to_clean_pod_policy_none_and_not_suspended() {
    let job = defaulted(&job(
        "TFJob",
        "tfReplicaSpecs",
        &replica("Worker", "tensorflow", ""),
    ));
    assert_eq!(
        job["spec"]["runPolicy"],
        json!({"cleanPodPolicy": "None", "suspend": false})
    );
}

#[test]
fn mpi_deprecated_clean_pod_policy_moves_into_run_policy() {
    let yaml = job("MPIJob", "mpiReplicaSpecs", &replica("Launcher", "mpi", ""))
        .replace("spec:\n", "spec:\n  cleanPodPolicy: Running\n");
    let job = defaulted(&yaml);
    assert_eq!(job["spec"]["runPolicy"]["cleanPodPolicy"], "Running");
    assert_eq!(job["spec"]["cleanPodPolicy"], "Running");
}

#[test]
fn tf_success_policy_defaults_to_empty_string() {
    let job = defaulted(&job(
        "TFJob",
        "tfReplicaSpecs",
        &replica("Worker", "tensorflow", ""),
    ));
    assert_eq!(job["spec"]["successPolicy"], "");
}

#[test]
fn replica_type_keys_are_rewritten_to_canonical_spelling() {
    let specs = replica("ps", "tensorflow", "")
        + &replica("WORKER", "tensorflow", "")
        + &replica("chief", "tensorflow", "");
    let job = defaulted(&job("TFJob", "tfReplicaSpecs", &specs));
    let keys: Vec<&String> = job["spec"]["tfReplicaSpecs"]
        .as_object()
        .expect("map")
        .keys()
        .collect();
    assert_eq!(keys, ["Chief", "PS", "Worker"]);
}

#[test]
fn pytorch_nproc_per_node_defaults_to_auto() {
    let job = defaulted(&job(
        "PyTorchJob",
        "pytorchReplicaSpecs",
        &replica("Worker", "pytorch", ""),
    ));
    assert_eq!(job["spec"]["nprocPerNode"], "auto");
}

#[test]
fn pytorch_deprecated_elastic_nproc_per_node_suppresses_the_default() {
    let yaml = job(
        "PyTorchJob",
        "pytorchReplicaSpecs",
        &replica("Worker", "pytorch", ""),
    )
    .replace("spec:\n", "spec:\n  elasticPolicy: {nProcPerNode: 4}\n");
    let manifests = manifest::load_str("job.yaml", &yaml);
    assert!(!manifests.has_errors());
    let job = serde_json::to_value(&manifests.jobs[0].job).expect("serializes");
    assert!(job["spec"].get("nprocPerNode").is_none());
    assert_eq!(
        manifests.diagnostics[0].to_string(),
        "job.yaml:5:33: warning: spec.elasticPolicy.nProcPerNode: is deprecated: use `spec.nprocPerNode`"
    );
}

#[test]
fn pytorch_elastic_min_and_max_default_to_each_other_then_to_workers() {
    let worker = replica("Worker", "pytorch", "      replicas: 3\n");
    for (policy, min, max) in [
        ("{minReplicas: 2}", 2, 2),
        ("{maxReplicas: 5}", 5, 5),
        ("{minReplicas: 1, maxReplicas: 4}", 1, 4),
        ("{rdzvBackend: c10d}", 3, 3),
    ] {
        let yaml = job("PyTorchJob", "pytorchReplicaSpecs", &worker)
            .replace("spec:\n", &format!("spec:\n  elasticPolicy: {policy}\n"));
        let job = defaulted(&yaml);
        assert_eq!(job["spec"]["elasticPolicy"]["minReplicas"], min, "{policy}");
        assert_eq!(job["spec"]["elasticPolicy"]["maxReplicas"], max, "{policy}");
    }
}

#[test]
fn paddle_elastic_min_and_max_default_like_pytorch() {
    let worker = replica("Worker", "paddle", "      replicas: 2\n");
    for (policy, min, max) in [("{minReplicas: 1}", 1, 1), ("{maxRestarts: 3}", 2, 2)] {
        let yaml = job("PaddleJob", "paddleReplicaSpecs", &worker)
            .replace("spec:\n", &format!("spec:\n  elasticPolicy: {policy}\n"));
        let job = defaulted(&yaml);
        assert_eq!(job["spec"]["elasticPolicy"]["minReplicas"], min, "{policy}");
        assert_eq!(job["spec"]["elasticPolicy"]["maxReplicas"], max, "{policy}");
    }
}

#[test]
fn defaulting_is_idempotent() {
    for path in [
        "seeds/ps-mode-tfjob.yaml",
        "upstream/pytorch-elastic-imagenet-imagenet.yaml",
        "upstream/mpi-tensorflow-mnist.yaml",
        "upstream/mxnet-tune-mx_job_tune_gpu_v1.yaml",
    ] {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata/fixtures")
            .join(path);
        let text = std::fs::read_to_string(&file).expect("fixture");
        let mut job = manifest::load_str(path, &text).jobs.remove(0).job;
        let once = serde_json::to_value(&job).expect("serializes");
        trainctl_api::defaults::apply(&mut job);
        assert_eq!(
            serde_json::to_value(&job).expect("serializes"),
            once,
            "{path}"
        );
    }
}

#[test]
fn mxnet_defaults_as_upstream_had_them() {
    let yaml = "apiVersion: kubeflow.org/v1\nkind: MXJob\nmetadata: {name: j}\nspec:\n  \
                jobMode: MXTune\n  mxReplicaSpecs:\n    tunertracker:\n      template: {spec: \
                {containers: [{name: mxnet, image: img}, {name: side, image: img}]}}\n    \
                Tuner:\n      replicas: 2\n      restartPolicy: OnFailure\n      template: \
                {spec: {containers: [{name: mxnet, image: img, ports: [{name: mxjob-port, \
                containerPort: 9000}]}]}}\n";
    let job = defaulted(yaml);
    let specs = &job["spec"]["mxReplicaSpecs"];
    let tracker = &specs["TunerTracker"];
    assert_eq!(tracker["replicas"], 1);
    assert_eq!(tracker["restartPolicy"], "Never");
    assert_eq!(
        tracker["template"]["spec"]["containers"],
        json!([
            {"name": "mxnet", "image": "img", "ports": [{"name": "mxjob-port", "containerPort": 9091}]},
            {"name": "side", "image": "img"},
        ])
    );
    let tuner = &specs["Tuner"];
    assert_eq!(tuner["replicas"], 2);
    assert_eq!(tuner["restartPolicy"], "OnFailure");
    assert_eq!(
        tuner["template"]["spec"]["containers"][0]["ports"],
        json!([{"name": "mxjob-port", "containerPort": 9000}])
    );
    assert_eq!(job["spec"]["jobMode"], "MXTune");
    assert_eq!(
        job["spec"]["runPolicy"],
        json!({"cleanPodPolicy": "None", "suspend": false})
    );
}
