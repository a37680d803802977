//! Replica names, labels and selectors (docs/semantics.md §3): what ties a pod or a service to its
//! job slot.

use std::collections::BTreeMap;

use trainctl_api::{JobKind, ReplicaSpecs, ReplicaType, TrainingJob};

/// Label naming the controller that owns a pod or service (`tfjob-controller`, ...).
pub const OPERATOR_NAME_LABEL: &str = "training.kubeflow.org/operator-name";
/// Label carrying the job's name.
pub const JOB_NAME_LABEL: &str = "training.kubeflow.org/job-name";
/// Label carrying the lowercase replica type (`worker`, `ps`, `launcher`).
pub const REPLICA_TYPE_LABEL: &str = "training.kubeflow.org/replica-type";
/// Label carrying the replica index (`0`, `1`, ...).
pub const REPLICA_INDEX_LABEL: &str = "training.kubeflow.org/replica-index";
/// Label present (with value [`MASTER_ROLE`]) on the pod that plays the master role.
pub const JOB_ROLE_LABEL: &str = "training.kubeflow.org/job-role";
/// The value of [`JOB_ROLE_LABEL`].
pub const MASTER_ROLE: &str = "master";

/// The name of a replica's pod and service: `<job>-<lowercase type>-<index>`.
///
/// The MPI launcher is the one exception: it is a single pod named `<job>-launcher`.
#[must_use]
pub fn replica_name(job_name: &str, replica_type: &ReplicaType, index: i32) -> String {
    if *replica_type == ReplicaType::Launcher {
        return format!("{job_name}-launcher");
    }
    format!("{job_name}-{}-{index}", replica_type.lowercase())
}

/// The labels every object of a job carries: operator name and job name.
#[must_use]
pub fn job_labels(job: &TrainingJob) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            OPERATOR_NAME_LABEL.to_owned(),
            job.kind().operator_name().to_owned(),
        ),
        (JOB_NAME_LABEL.to_owned(), job.name().to_owned()),
    ])
}

/// The labels of all replicas of one type: the job's labels plus the replica type.
#[must_use]
pub fn replica_type_labels(
    job: &TrainingJob,
    replica_type: &ReplicaType,
) -> BTreeMap<String, String> {
    let mut labels = job_labels(job);
    labels.insert(REPLICA_TYPE_LABEL.to_owned(), replica_type.lowercase());
    labels
}

/// The labels (and selector) of a replica's service: the pod's labels minus the job role.
#[must_use]
pub fn service_labels(
    job: &TrainingJob,
    replica_type: &ReplicaType,
    index: i32,
) -> BTreeMap<String, String> {
    let mut labels = replica_type_labels(job, replica_type);
    labels.insert(REPLICA_INDEX_LABEL.to_owned(), index.to_string());
    labels
}

/// The labels the engine puts on a replica's pod (template labels are merged in by the builder).
///
/// `job-role: master` marks the master role (see [`is_master_role`]).
#[must_use]
pub fn pod_labels(
    job: &TrainingJob,
    replica_type: &ReplicaType,
    index: i32,
) -> BTreeMap<String, String> {
    let mut labels = service_labels(job, replica_type, index);
    if *replica_type == ReplicaType::Launcher {
        // MPI's single launcher has no index, as upstream's has no index label.
        labels.remove(REPLICA_INDEX_LABEL);
    }
    if is_master_role(job.kind(), job.replica_specs(), replica_type, index) {
        labels.insert(JOB_ROLE_LABEL.to_owned(), MASTER_ROLE.to_owned());
    }
    labels
}

/// The index of the replica a pod or service stands for, from its labels: the index label, or
/// 0 for the MPI launcher, which has none.
#[must_use]
pub fn replica_index(replica_type: &ReplicaType, labels: &BTreeMap<String, String>) -> Option<i32> {
    match labels.get(REPLICA_INDEX_LABEL) {
        Some(index) => index.parse().ok(),
        None => (*replica_type == ReplicaType::Launcher).then_some(0),
    }
}

/// Whether a replica plays the master role (docs/semantics.md §3).
///
/// TF: Chief or Master, else worker 0. PyTorch: Master, else worker 0. XGBoost and Paddle: Master.
/// JAX: index 0. MPI: the launcher. MXNet: every Server (upstream's choice, kept).
#[must_use]
pub fn is_master_role(
    kind: JobKind,
    specs: &ReplicaSpecs,
    replica_type: &ReplicaType,
    index: i32,
) -> bool {
    let worker_zero = *replica_type == ReplicaType::Worker && index == 0;
    match kind {
        JobKind::TFJob => {
            if specs.contains_key(&ReplicaType::Chief) || specs.contains_key(&ReplicaType::Master) {
                matches!(replica_type, ReplicaType::Chief | ReplicaType::Master)
            } else {
                worker_zero
            }
        }
        JobKind::PyTorchJob => {
            if specs.contains_key(&ReplicaType::Master) {
                *replica_type == ReplicaType::Master
            } else {
                worker_zero
            }
        }
        JobKind::XGBoostJob | JobKind::PaddleJob => *replica_type == ReplicaType::Master,
        JobKind::JAXJob => index == 0,
        JobKind::MPIJob => *replica_type == ReplicaType::Launcher,
        JobKind::MXJob => *replica_type == ReplicaType::Server,
    }
}

/// The label selector of one replica type's pods, as `replicaStatuses[<Type>].selector` shows it:
/// `key=value` pairs sorted by key and joined by commas (Kubernetes' `FormatLabelSelector`).
#[must_use]
pub fn replica_selector(job: &TrainingJob, replica_type: &ReplicaType) -> String {
    replica_type_labels(job, replica_type)
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_jobs::load_job;

    const TF_JOB: &str = r"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: mnist, namespace: ml}
spec:
  tfReplicaSpecs:
    PS:
      replicas: 1
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
";

    #[test]
    fn replica_name_is_job_lowercase_type_index() {
        assert_eq!(
            replica_name("mnist", &ReplicaType::Worker, 0),
            "mnist-worker-0"
        );
        assert_eq!(replica_name("mnist", &ReplicaType::PS, 1), "mnist-ps-1");
        assert_eq!(
            replica_name("mnist", &ReplicaType::Evaluator, 0),
            "mnist-evaluator-0"
        );
    }

    #[test]
    fn mpi_launcher_is_named_job_launcher() {
        assert_eq!(replica_name("pi", &ReplicaType::Launcher, 0), "pi-launcher");
    }

    #[test]
    fn pod_labels_name_operator_job_type_and_index() {
        let job = load_job(TF_JOB);
        let labels = pod_labels(&job, &ReplicaType::PS, 0);
        let expected: BTreeMap<String, String> = [
            ("training.kubeflow.org/job-name", "mnist"),
            ("training.kubeflow.org/operator-name", "tfjob-controller"),
            ("training.kubeflow.org/replica-index", "0"),
            ("training.kubeflow.org/replica-type", "ps"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(labels, expected);
    }

    #[test]
    fn mpi_launcher_has_no_index_label_and_reads_as_index_zero() {
        let job = load_job(
            "apiVersion: kubeflow.org/v1\nkind: MPIJob\nmetadata: {name: pi}\nspec:\n  mpiReplicaSpecs:\n    Launcher:\n      template: {spec: {containers: [{name: m, image: i}]}}\n    Worker:\n      replicas: 2\n      template: {spec: {containers: [{name: m, image: i}]}}\n",
        );
        let launcher = pod_labels(&job, &ReplicaType::Launcher, 0);
        assert_eq!(launcher.get(REPLICA_INDEX_LABEL), None);
        assert_eq!(replica_index(&ReplicaType::Launcher, &launcher), Some(0));
        let worker = pod_labels(&job, &ReplicaType::Worker, 1);
        assert_eq!(
            worker.get(REPLICA_INDEX_LABEL).map(String::as_str),
            Some("1")
        );
        assert_eq!(replica_index(&ReplicaType::Worker, &worker), Some(1));
        let mut unlabelled = worker;
        unlabelled.remove(REPLICA_INDEX_LABEL);
        assert_eq!(replica_index(&ReplicaType::Worker, &unlabelled), None);
    }

    #[test]
    fn tf_worker_zero_is_master_role_without_chief() {
        let job = load_job(TF_JOB);
        let labels = pod_labels(&job, &ReplicaType::Worker, 0);
        assert_eq!(
            labels.get(JOB_ROLE_LABEL).map(String::as_str),
            Some("master")
        );
        assert!(!pod_labels(&job, &ReplicaType::Worker, 1).contains_key(JOB_ROLE_LABEL));
    }

    #[test]
    fn service_labels_have_no_job_role() {
        let job = load_job(TF_JOB);
        assert!(!service_labels(&job, &ReplicaType::Worker, 0).contains_key(JOB_ROLE_LABEL));
    }

    #[test]
    fn master_role_per_kind() {
        use JobKind::{JAXJob, MPIJob, MXJob, PaddleJob, PyTorchJob, TFJob, XGBoostJob};
        use ReplicaType::{
            Chief, Evaluator, Launcher, Master, PS, Scheduler, Server, Tuner, Worker,
        };
        let specs = |types: &[ReplicaType]| -> ReplicaSpecs {
            types
                .iter()
                .map(|t| (t.clone(), trainctl_api::ReplicaSpec::default()))
                .collect()
        };
        let cases: &[(JobKind, &[ReplicaType], ReplicaType, i32, bool)] = &[
            (TFJob, &[Chief, Worker], Chief, 0, true),
            (TFJob, &[Chief, Worker], Worker, 0, false),
            (TFJob, &[Master, Worker], Master, 0, true),
            (TFJob, &[PS, Worker], Worker, 0, true),
            (TFJob, &[PS, Worker], PS, 0, false),
            (TFJob, &[Worker, Evaluator], Evaluator, 0, false),
            (PyTorchJob, &[Master, Worker], Master, 0, true),
            (PyTorchJob, &[Master, Worker], Worker, 0, false),
            (PyTorchJob, &[Worker], Worker, 0, true),
            (PyTorchJob, &[Worker], Worker, 1, false),
            (XGBoostJob, &[Master, Worker], Master, 0, true),
            (XGBoostJob, &[Master, Worker], Worker, 0, false),
            (PaddleJob, &[Master, Worker], Master, 0, true),
            (PaddleJob, &[Worker], Worker, 0, false),
            (JAXJob, &[Worker], Worker, 0, true),
            (JAXJob, &[Worker], Worker, 1, false),
            (MPIJob, &[Launcher, Worker], Launcher, 0, true),
            (MPIJob, &[Launcher, Worker], Worker, 0, false),
            (MXJob, &[Scheduler, Server, Worker], Server, 0, true),
            (MXJob, &[Scheduler, Server, Worker], Server, 1, true),
            (MXJob, &[Scheduler, Server, Worker], Scheduler, 0, false),
            (MXJob, &[Scheduler, Server, Worker], Worker, 0, false),
            (MXJob, &[Tuner], Tuner, 0, false),
        ];
        for (kind, types, replica_type, index, expected) in cases {
            assert_eq!(
                is_master_role(*kind, &specs(types), replica_type, *index),
                *expected,
                "{kind} {types:?} {replica_type}-{index}"
            );
        }
    }

    #[test]
    fn replica_selector_is_sorted_key_value_pairs() {
        let job = load_job(TF_JOB);
        assert_eq!(
            replica_selector(&job, &ReplicaType::Worker),
            "training.kubeflow.org/job-name=mnist,\
             training.kubeflow.org/operator-name=tfjob-controller,\
             training.kubeflow.org/replica-type=worker"
        );
    }
}
