//! Tests of the MPI launcher environment: its variables, and where they land in the pods built
//! for a job.

use super::*;
use crate::objects::{BuildOptions, build_pod};
use crate::test_jobs::{container_env, env_pairs, load_job, pairs};

const JOB: &str = r"
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: pi, namespace: ns}
spec:
  mpiReplicaSpecs:
    Launcher:
      template:
        spec:
          containers:
          - {name: mpi, image: m, command: [mpirun], env: [{name: I_MPI_HYDRA_BOOTSTRAP, value: ssh}]}
          - {name: side, image: s}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: mpi, image: m}]}}
";

#[test]
fn mpi_launcher_env_in_order() {
    let job = load_job(JOB);
    let pod = build_pod(&job, &ReplicaType::Launcher, 0, &BuildOptions::default())
        .expect("Launcher exists");
    assert_eq!(
        container_env(&pod, "mpi"),
        pairs(&[
            ("I_MPI_HYDRA_BOOTSTRAP", "ssh"),
            ("OMPI_MCA_plm_rsh_agent", "/etc/mpi/kubexec.sh"),
            ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
            ("NVIDIA_VISIBLE_DEVICES", ""),
            ("NVIDIA_DRIVER_CAPABILITIES", ""),
            ("I_MPI_HYDRA_BOOTSTRAP_EXEC", "/etc/mpi/kubexec.sh"),
        ])
    );
    assert!(
        container_env(&pod, "side").is_empty(),
        "only the first container gets the env"
    );
}

#[test]
fn mpi_gpu_launcher_keeps_its_gpus_visible() {
    let job = load_job(
        r"
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: pi}
spec:
  mpiReplicaSpecs:
    Launcher:
      template:
        spec:
          containers:
          - {name: mpi, image: m, resources: {limits: {nvidia.com/gpu: 1}}}
",
    );
    assert!(is_gpu_launcher(&job));
    assert_eq!(
        env_pairs(&launcher_env_vars(&job, &[])),
        pairs(&[
            ("OMPI_MCA_plm_rsh_agent", "/etc/mpi/kubexec.sh"),
            ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
            ("I_MPI_HYDRA_BOOTSTRAP", "rsh"),
            ("I_MPI_HYDRA_BOOTSTRAP_EXEC", "/etc/mpi/kubexec.sh"),
        ])
    );
}

#[test]
fn mpi_workers_get_no_env() {
    let job = load_job(JOB);
    let pod =
        build_pod(&job, &ReplicaType::Worker, 0, &BuildOptions::default()).expect("Worker exists");
    assert!(container_env(&pod, "mpi").is_empty());
}
