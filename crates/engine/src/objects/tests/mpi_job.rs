//! MPIJob plumbing: the launcher and its workers, the hostfile and kubexec config map, and the
//! launcher's RBAC.

use super::*;

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
