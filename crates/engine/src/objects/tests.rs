//! Tests of the object builder: names, labels, owner references, restart policies, services, MPI
//! plumbing, and every fixture manifest.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::Path;

use proptest::prelude::*;
use serde_json::{Value, json};
use trainctl_api::{ReplicaType, TrainingJob};

use super::*;
use crate::env::tensorflow::TF_CONFIG;
use crate::test_jobs::{containers, env_pairs, load_job};

const TF_JOB: &str = r"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: mnist, namespace: ml, uid: abc-123}
spec:
  tfReplicaSpecs:
    PS:
      template: {spec: {containers: [{name: tensorflow, image: 'tf:2'}]}}
    Worker:
      replicas: 2
      restartPolicy: ExitCode
      template:
        metadata:
          labels: {app: mnist, training.kubeflow.org/replica-index: '9'}
          annotations: {note: kept}
        spec:
          containers:
          - name: tensorflow
            image: 'tf:2'
            ports: [{name: metrics, containerPort: 8080}]
";

const MPI_JOB: &str = r"
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: pi, namespace: ns, uid: u-1}
spec:
  slotsPerWorker: 2
  mpiReplicaSpecs:
    Launcher:
      template:
        spec:
          containers:
          - {name: mpi, image: 'mpi:1', command: [mpirun, python, pi.py]}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: mpi, image: 'mpi:1'}]}}
";

fn to_json<T: serde::Serialize>(object: &T) -> Value {
    serde_json::to_value(object).expect("Kubernetes objects serialize")
}

fn pod(job: &TrainingJob, replica_type: &ReplicaType, index: i32) -> Pod {
    build_pod(job, replica_type, index, &BuildOptions::default())
        .expect("the job has this replica type")
}

fn owner(kind: &str, name: &str, uid: &str) -> Value {
    json!([{
        "apiVersion": "kubeflow.org/v1",
        "blockOwnerDeletion": true,
        "controller": true,
        "kind": kind,
        "name": name,
        "uid": uid
    }])
}

fn loopback_options(job: &TrainingJob) -> BuildOptions {
    let ports = replica_slots(job)
        .into_iter()
        .zip(40_000_u16..)
        .collect::<BTreeMap<_, _>>();
    BuildOptions {
        addressing: Addressing::Loopback { ports },
        ..BuildOptions::default()
    }
}

#[test]
fn pod_carries_name_namespace_labels_annotations_owner_and_env() {
    let job = load_job(TF_JOB);
    assert_eq!(
        to_json(&pod(&job, &ReplicaType::Worker, 1)),
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "annotations": {"note": "kept"},
                "labels": {
                    "app": "mnist",
                    "training.kubeflow.org/job-name": "mnist",
                    "training.kubeflow.org/operator-name": "tfjob-controller",
                    "training.kubeflow.org/replica-index": "1",
                    "training.kubeflow.org/replica-type": "worker"
                },
                "name": "mnist-worker-1",
                "namespace": "ml",
                "ownerReferences": owner("TFJob", "mnist", "abc-123")
            },
            "spec": {
                "containers": [{
                    "env": [{
                        "name": "TF_CONFIG",
                        "value": r#"{"cluster":{"ps":["mnist-ps-0.ml.svc:2222"],"worker":["mnist-worker-0.ml.svc:2222","mnist-worker-1.ml.svc:2222"]},"task":{"type":"worker","index":1},"environment":"cloud"}"#
                    }],
                    "image": "tf:2",
                    "name": "tensorflow",
                    "ports": [
                        {"containerPort": 8080, "name": "metrics"},
                        {"containerPort": 2222, "name": "tfjob-port"}
                    ]
                }],
                "restartPolicy": "Never"
            }
        })
    );
}

#[test]
fn our_labels_win_over_template_labels() {
    let job = load_job(TF_JOB);
    let labels = pod(&job, &ReplicaType::Worker, 0)
        .metadata
        .labels
        .unwrap_or_default();
    assert_eq!(
        labels
            .get("training.kubeflow.org/replica-index")
            .map(String::as_str),
        Some("0")
    );
    assert_eq!(labels.get("app").map(String::as_str), Some("mnist"));
    assert_eq!(
        labels
            .get("training.kubeflow.org/job-role")
            .map(String::as_str),
        Some("master")
    );
}

#[test]
fn owner_reference_uid_is_empty_when_job_has_none() {
    let job = load_job(&TF_JOB.replace(", uid: abc-123", ""));
    assert_eq!(
        to_json(&pod(&job, &ReplicaType::PS, 0))["metadata"]["ownerReferences"],
        owner("TFJob", "mnist", "")
    );
}

#[test]
fn pod_namespace_defaults_to_default() {
    let job = load_job(&TF_JOB.replace(", namespace: ml", ""));
    assert_eq!(
        pod(&job, &ReplicaType::PS, 0).metadata.namespace.as_deref(),
        Some("default")
    );
}

#[test]
fn exit_code_policy_maps_to_pod_restart_never() {
    let job = load_job(TF_JOB);
    let spec = pod(&job, &ReplicaType::Worker, 0)
        .spec
        .expect("pods have a spec");
    assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
}

#[test]
fn pod_restart_policy_is_the_replica_policy() {
    use trainctl_api::RestartPolicy::{Always, ExitCode, Never, OnFailure};
    assert_eq!(pod_restart_policy(Always), "Always");
    assert_eq!(pod_restart_policy(OnFailure), "OnFailure");
    assert_eq!(pod_restart_policy(Never), "Never");
    assert_eq!(pod_restart_policy(ExitCode), "Never");
}

#[test]
fn template_restart_policy_is_overwritten_by_the_replica_policy() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Worker:
      template: {spec: {restartPolicy: Always, containers: [{name: pytorch, image: t}]}}
",
    );
    let spec = pod(&job, &ReplicaType::Worker, 0)
        .spec
        .expect("pods have a spec");
    assert_eq!(spec.restart_policy.as_deref(), Some("OnFailure"));
}

#[test]
fn build_pod_of_a_missing_replica_type_is_none() {
    let job = load_job(TF_JOB);
    assert_eq!(
        build_pod(&job, &ReplicaType::Chief, 0, &BuildOptions::default()),
        None
    );
    assert_eq!(build_service(&job, &ReplicaType::Chief, 0), None);
}

#[test]
fn service_is_headless_with_pod_labels_minus_job_role() {
    let job = load_job(TF_JOB);
    let labels = json!({
        "training.kubeflow.org/job-name": "mnist",
        "training.kubeflow.org/operator-name": "tfjob-controller",
        "training.kubeflow.org/replica-index": "0",
        "training.kubeflow.org/replica-type": "worker"
    });
    assert_eq!(
        to_json(&build_service(&job, &ReplicaType::Worker, 0).expect("TF has services")),
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "labels": labels,
                "name": "mnist-worker-0",
                "namespace": "ml",
                "ownerReferences": owner("TFJob", "mnist", "abc-123")
            },
            "spec": {
                "clusterIP": "None",
                "ports": [{"name": "metrics", "port": 8080}, {"name": "tfjob-port", "port": 2222}],
                "selector": labels
            }
        })
    );
}

#[test]
fn service_ports_sorted_by_name() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: JAXJob
metadata: {name: jx}
spec:
  jaxReplicaSpecs:
    Worker:
      template:
        spec:
          containers:
          - name: jax
            image: j
            ports: [{name: zeta, containerPort: 1}, {name: alpha, containerPort: 2}]
          - name: sidecar
            image: s
            ports: [{name: beta, containerPort: 3}]
",
    );
    let service = build_service(&job, &ReplicaType::Worker, 0).expect("JAX has services");
    let ports: Vec<(Option<String>, i32)> = service
        .spec
        .and_then(|s| s.ports)
        .unwrap_or_default()
        .into_iter()
        .map(|p| (p.name, p.port))
        .collect();
    assert_eq!(
        ports,
        [
            (Some("alpha".to_owned()), 2),
            (Some("jaxjob-port".to_owned()), 6666),
            (Some("zeta".to_owned()), 1)
        ]
    );
}

#[test]
fn every_replica_type_gets_services() {
    let job = load_job(TF_JOB);
    let objects = build_objects(&job, &BuildOptions::default());
    let names: Vec<_> = objects
        .services
        .iter()
        .filter_map(|s| s.metadata.name.clone())
        .collect();
    assert_eq!(names, ["mnist-ps-0", "mnist-worker-0", "mnist-worker-1"]);
}

#[test]
fn objects_come_in_canonical_type_order_and_index_order() {
    let job = load_job(TF_JOB);
    let objects = build_objects(&job, &BuildOptions::default());
    let names: Vec<_> = objects
        .pods
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    assert_eq!(names, ["mnist-ps-0", "mnist-worker-0", "mnist-worker-1"]);
    assert!(objects.config_maps.is_empty());
    assert!(
        objects.service_accounts.is_empty()
            && objects.roles.is_empty()
            && objects.role_bindings.is_empty()
    );
}

#[test]
fn build_objects_is_deterministic() {
    let job = load_job(TF_JOB);
    let options = BuildOptions {
        gang_scheduler: Some("volcano".into()),
        ..BuildOptions::default()
    };
    assert_eq!(build_objects(&job, &options), build_objects(&job, &options));
}

#[test]
fn mpi_launcher_has_no_service() {
    let job = load_job(MPI_JOB);
    assert_eq!(build_service(&job, &ReplicaType::Launcher, 0), None);
    assert!(
        build_objects(&job, &BuildOptions::default())
            .services
            .is_empty()
    );
}

#[test]
fn mpi_pods_are_workers_then_launcher() {
    let job = load_job(MPI_JOB);
    let objects = build_objects(&job, &BuildOptions::default());
    let names: Vec<_> = objects
        .pods
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    assert_eq!(names, ["pi-worker-0", "pi-worker-1", "pi-launcher"]);
}

#[test]
fn mpi_launcher_pod_body() {
    let job = load_job(MPI_JOB);
    let config_mount = json!({"mountPath": "/etc/mpi", "name": "mpi-job-config"});
    let kubectl_mount = json!({"mountPath": "/opt/kube", "name": "mpi-job-kubectl"});
    let delivery_resources = json!({"cpu": "100m", "ephemeral-storage": "5Gi", "memory": "512Mi"});
    assert_eq!(
        to_json(&pod(&job, &ReplicaType::Launcher, 0)),
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "labels": {
                    "training.kubeflow.org/job-name": "pi",
                    "training.kubeflow.org/job-role": "master",
                    "training.kubeflow.org/operator-name": "mpijob-controller",
                    "training.kubeflow.org/replica-type": "launcher"
                },
                "name": "pi-launcher",
                "namespace": "ns",
                "ownerReferences": owner("MPIJob", "pi", "u-1")
            },
            "spec": {
                "containers": [{
                    "command": ["mpirun", "python", "pi.py"],
                    "env": [
                        {"name": "OMPI_MCA_plm_rsh_agent", "value": "/etc/mpi/kubexec.sh"},
                        {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"},
                        {"name": "NVIDIA_VISIBLE_DEVICES", "value": ""},
                        {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": ""},
                        {"name": "I_MPI_HYDRA_BOOTSTRAP", "value": "rsh"},
                        {"name": "I_MPI_HYDRA_BOOTSTRAP_EXEC", "value": "/etc/mpi/kubexec.sh"}
                    ],
                    "image": "mpi:1",
                    "name": "mpi",
                    "volumeMounts": [kubectl_mount, config_mount]
                }],
                "initContainers": [{
                    "env": [
                        {"name": "TARGET_DIR", "value": "/opt/kube"},
                        {"name": "NAMESPACE", "value": "ns"}
                    ],
                    "image": "kubeflow/kubectl-delivery:latest",
                    "imagePullPolicy": "IfNotPresent",
                    "name": "kubectl-delivery",
                    "resources": {"limits": delivery_resources, "requests": delivery_resources},
                    "volumeMounts": [kubectl_mount, config_mount]
                }],
                "restartPolicy": "Never",
                "serviceAccountName": "pi-launcher",
                "volumes": [
                    {"emptyDir": {}, "name": "mpi-job-kubectl"},
                    {
                        "configMap": {
                            "items": [
                                {"key": "kubexec.sh", "mode": 0o555, "path": "kubexec.sh"},
                                {"key": "hostfile", "mode": 0o444, "path": "hostfile"},
                                {"key": "discover_hosts.sh", "mode": 0o555, "path": "discover_hosts.sh"}
                            ],
                            "name": "pi-config"
                        },
                        "name": "mpi-job-config"
                    }
                ]
            }
        })
    );
}

#[test]
fn mpi_worker_pod_sleeps_and_mounts_kubexec() {
    let job = load_job(MPI_JOB);
    assert_eq!(
        to_json(&pod(&job, &ReplicaType::Worker, 1)),
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "labels": {
                    "training.kubeflow.org/job-name": "pi",
                    "training.kubeflow.org/operator-name": "mpijob-controller",
                    "training.kubeflow.org/replica-index": "1",
                    "training.kubeflow.org/replica-type": "worker"
                },
                "name": "pi-worker-1",
                "namespace": "ns",
                "ownerReferences": owner("MPIJob", "pi", "u-1")
            },
            "spec": {
                "containers": [{
                    "args": ["365d"],
                    "command": ["sleep"],
                    "image": "mpi:1",
                    "name": "mpi",
                    "volumeMounts": [{"mountPath": "/etc/mpi", "name": "mpi-job-config"}]
                }],
                "restartPolicy": "Never",
                "volumes": [{
                    "configMap": {
                        "items": [{"key": "kubexec.sh", "mode": 0o555, "path": "kubexec.sh"}],
                        "name": "pi-config"
                    },
                    "name": "mpi-job-config"
                }]
            }
        })
    );
}

#[test]
fn mpi_worker_keeps_its_own_command() {
    let job = load_job(&MPI_JOB.replace(
        "template: {spec: {containers: [{name: mpi, image: 'mpi:1'}]}}",
        "template: {spec: {containers: [{name: mpi, image: 'mpi:1', command: [/usr/sbin/sshd, -D]}]}}",
    ));
    let container = containers(&pod(&job, &ReplicaType::Worker, 0))[0].clone();
    assert_eq!(
        container.command,
        Some(vec!["/usr/sbin/sshd".to_owned(), "-D".to_owned()])
    );
    assert_eq!(container.args, None);
}

#[test]
fn mpi_config_map_holds_hostfile_kubexec_and_discover_hosts() {
    let job = load_job(MPI_JOB);
    let objects = build_objects(&job, &BuildOptions::default());
    assert_eq!(
        to_json(&objects.config_maps),
        json!([{
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "data": {
                "discover_hosts.sh": "#!/bin/sh\necho pi-worker-0:2\necho pi-worker-1:2",
                "hostfile": "pi-worker-0 slots=2\npi-worker-1 slots=2\n",
                "kubexec.sh": "#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n/opt/kube/kubectl exec ${POD_NAME} -- /bin/sh -c \"$*\""
            },
            "metadata": {
                "labels": {"app": "pi", "training.kubeflow.org/operator-name": "mpijob-controller"},
                "name": "pi-config",
                "namespace": "ns",
                "ownerReferences": owner("MPIJob", "pi", "u-1")
            }
        }])
    );
}

#[test]
fn mpi_hostfile_slots_default_to_one() {
    let job = load_job(&MPI_JOB.replace("  slotsPerWorker: 2\n", ""));
    assert_eq!(
        mpi::hostfile(&job),
        "pi-worker-0 slots=1\npi-worker-1 slots=1\n"
    );
}

#[test]
fn mpi_gpu_launcher_is_listed_first_in_hostfile() {
    let job = load_job(&MPI_JOB.replace(
        "command: [mpirun, python, pi.py]}",
        "command: [mpirun], resources: {limits: {nvidia.com/gpu: 1}}}",
    ));
    assert_eq!(
        mpi::hostfile(&job),
        "pi-launcher slots=2\npi-worker-0 slots=2\npi-worker-1 slots=2\n"
    );
    assert_eq!(
        mpi::discover_hosts_script(&job, &["pi-worker-1".to_owned()]),
        "#!/bin/sh\necho pi-launcher:2\n\necho pi-worker-1:2"
    );
}

#[test]
fn mpi_kubexec_targets_main_container() {
    let job = load_job(&MPI_JOB.replace("  slotsPerWorker: 2\n", "  mainContainer: trainer\n"));
    assert_eq!(
        mpi::kubexec_script(&job, &Addressing::default()),
        "#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n/opt/kube/kubectl exec ${POD_NAME} --container trainer -- /bin/sh -c \"$*\""
    );
}

#[test]
fn mpi_loopback_kubexec_runs_locally_without_kubectl_delivery() {
    let job = load_job(MPI_JOB);
    let options = loopback_options(&job);
    assert_eq!(
        mpi::kubexec_script(&job, &options.addressing),
        "#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n/bin/sh -c \"$*\""
    );
    let launcher = build_pod(&job, &ReplicaType::Launcher, 0, &options).expect("Launcher exists");
    assert_eq!(launcher.spec.and_then(|s| s.init_containers), None);
}

#[test]
fn mpi_launcher_rbac_allows_exec_into_workers() {
    let job = load_job(MPI_JOB);
    let objects = build_objects(&job, &BuildOptions::default());
    let metadata = json!({
        "labels": {"app": "pi", "training.kubeflow.org/operator-name": "mpijob-controller"},
        "name": "pi-launcher",
        "namespace": "ns",
        "ownerReferences": owner("MPIJob", "pi", "u-1")
    });
    assert_eq!(
        to_json(&objects.service_accounts),
        json!([{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata}])
    );
    assert_eq!(
        to_json(&objects.roles),
        json!([{
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": metadata,
            "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
                {
                    "apiGroups": [""],
                    "resourceNames": ["pi-worker-0", "pi-worker-1"],
                    "resources": ["pods/exec"],
                    "verbs": ["create"]
                }
            ]
        }])
    );
    assert_eq!(
        to_json(&objects.role_bindings),
        json!([{
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": metadata,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pi-launcher"},
            "subjects": [{"kind": "ServiceAccount", "name": "pi-launcher", "namespace": "ns"}]
        }])
    );
}

#[test]
fn mpi_launcher_keeps_its_own_service_account() {
    let job = load_job(&MPI_JOB.replace(
        "        spec:\n          containers:\n          - {name: mpi, image: 'mpi:1', command",
        "        spec:\n          serviceAccountName: runner\n          containers:\n          - {name: mpi, image: 'mpi:1', command",
    ));
    let launcher = pod(&job, &ReplicaType::Launcher, 0);
    assert_eq!(
        launcher
            .spec
            .and_then(|s| s.service_account_name)
            .as_deref(),
        Some("runner")
    );
    let binding = mpi::launcher_role_binding(&job);
    assert_eq!(binding.subjects.unwrap_or_default()[0].name, "runner");
}

/// Names of the env vars of every container of every pod, by pod name.
fn env_shape(objects: &JobObjects) -> BTreeMap<String, Vec<Vec<String>>> {
    objects
        .pods
        .iter()
        .map(|pod| {
            let names = containers(pod)
                .iter()
                .map(|c| {
                    env_pairs(c.env.as_deref().unwrap_or_default())
                        .into_iter()
                        .map(|(n, _)| n)
                        .collect()
                })
                .collect();
            (pod.metadata.name.clone().unwrap_or_default(), names)
        })
        .collect()
}

fn fixture_jobs() -> Vec<(String, TrainingJob)> {
    let root = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/fixtures"
    ));
    let mut files = Vec::new();
    for dir in ["seeds", "upstream"] {
        let entries = std::fs::read_dir(root.join(dir)).expect("fixture directories exist");
        for entry in entries {
            let path = entry.expect("readable fixture entry").path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_owned();
            let is_yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
            if path.is_file() && is_yaml && name != "batch-job-tensorflow.yaml" {
                files.push((name, path));
            }
        }
    }
    files.sort();
    let mut jobs = Vec::new();
    for (name, path) in files {
        let manifests = trainctl_api::manifest::load_file(&path);
        if manifests.has_errors() {
            continue;
        }
        jobs.extend(
            manifests
                .jobs
                .into_iter()
                .map(|loaded| (name.clone(), loaded.job)),
        );
    }
    jobs
}

#[test]
fn every_fixture_builds_with_unique_pod_names() {
    let jobs = fixture_jobs();
    assert!(
        jobs.len() >= 20,
        "expected the seed and upstream fixtures, found {}",
        jobs.len()
    );
    let gang = BuildOptions {
        gang_scheduler: Some("volcano".into()),
        ..BuildOptions::default()
    };
    for (file, job) in &jobs {
        for options in [BuildOptions::default(), gang.clone(), loopback_options(job)] {
            let objects = build_objects(job, &options);
            let names: BTreeSet<_> = objects
                .pods
                .iter()
                .filter_map(|p| p.metadata.name.clone())
                .collect();
            assert_eq!(
                names.len(),
                objects.pods.len(),
                "{file}: duplicate pod names"
            );
            assert_eq!(
                objects.pods.len(),
                replica_slots(job).len(),
                "{file}: one pod per slot"
            );
            let services: BTreeSet<_> = objects
                .services
                .iter()
                .filter_map(|s| s.metadata.name.clone())
                .collect();
            assert_eq!(
                services.len(),
                objects.services.len(),
                "{file}: duplicate service names"
            );
            assert_eq!(
                objects.pod_group.is_some(),
                options.gang_scheduler.is_some(),
                "{file}"
            );
        }
    }
}

#[test]
fn loopback_env_has_the_same_shape_as_cluster_env() {
    for (file, job) in fixture_jobs() {
        let cluster = build_objects(&job, &BuildOptions::default());
        let loopback = build_objects(&job, &loopback_options(&job));
        assert_eq!(env_shape(&cluster), env_shape(&loopback), "{file}");
    }
}

#[test]
fn loopback_tf_config_lists_each_slots_own_port() {
    let job = load_job(TF_JOB);
    let options = loopback_options(&job);
    let worker = build_pod(&job, &ReplicaType::Worker, 1, &options).expect("Worker exists");
    let env = env_pairs(containers(&worker)[0].env.as_deref().unwrap_or_default());
    assert_eq!(
        env,
        [(
            TF_CONFIG.to_owned(),
            r#"{"cluster":{"ps":["127.0.0.1:40000"],"worker":["127.0.0.1:40001","127.0.0.1:40002"]},"task":{"type":"worker","index":1},"environment":"cloud"}"#.to_owned()
        )]
    );
}

/// A TFJob with the given replica counts (absent types are left out).
fn tf_yaml(chief: Option<i32>, ps: Option<i32>, workers: i32, evaluator: Option<i32>) -> String {
    let mut yaml = String::from(
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: p, namespace: q}\nspec:\n  tfReplicaSpecs:\n",
    );
    let types = [
        ("Chief", chief),
        ("PS", ps),
        ("Worker", Some(workers)),
        ("Evaluator", evaluator),
    ];
    for (name, replicas) in types {
        if let Some(replicas) = replicas {
            writeln!(
                yaml,
                "    {name}:\n      replicas: {replicas}\n      template: {{spec: {{containers: [{{name: tensorflow, image: tf}}]}}}}"
            )
            .expect("writing to a String cannot fail");
        }
    }
    yaml
}

proptest! {
    #[test]
    fn tf_jobs_of_any_shape_get_one_pod_and_service_per_slot_and_consistent_tf_config(
        chief in proptest::option::of(0..=1_i32),
        ps in proptest::option::of(0..4_i32),
        workers in 0..5_i32,
        evaluator in proptest::option::of(0..=1_i32),
    ) {
        let job = load_job(&tf_yaml(chief, ps, workers, evaluator));
        let objects = build_objects(&job, &BuildOptions::default());
        let total = job.total_replicas();
        prop_assert_eq!(objects.pods.len(), usize::try_from(total).expect("non-negative"));
        prop_assert_eq!(objects.services.len(), objects.pods.len());
        for pod in &objects.pods {
            let env = containers(pod)[0].env.clone().unwrap_or_default();
            prop_assert_eq!(env.is_empty(), total == 1);
            for var in env {
                let config: Value = serde_json::from_str(var.value.as_deref().unwrap_or_default())
                    .expect("TF_CONFIG is JSON");
                let cluster = config["cluster"].as_object().expect("cluster is an object");
                for (key, spec) in job.replica_specs().iter() {
                    let listed = cluster[&key.lowercase()].as_array().map_or(0, Vec::len);
                    prop_assert_eq!(listed, usize::try_from(spec.replicas_or_default()).expect("non-negative"));
                }
            }
        }
    }
}
