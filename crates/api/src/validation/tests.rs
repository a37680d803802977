//! Unit tests of [`validate`]: each rule on its own, on a job read from YAML and defaulted but not
//! yet validated (the corpus in `tests/invalid/` checks the same rules through manifest loading).

use super::*;
use crate::defaults;

/// `job` read from YAML and defaulted, as manifest loading does before validating.
fn job(yaml: &str) -> TrainingJob {
    let value: serde_json::Value = serde_saphyr::from_str(yaml).expect("test YAML");
    let kind = value["kind"].as_str().expect("a kind").to_owned();
    let typed = |value| -> TrainingJob {
        match kind.as_str() {
            "TFJob" => TrainingJob::TF(serde_json::from_value(value).expect("a TFJob")),
            "PyTorchJob" => TrainingJob::PyTorch(serde_json::from_value(value).expect("a job")),
            "XGBoostJob" => TrainingJob::XGBoost(serde_json::from_value(value).expect("a job")),
            "PaddleJob" => TrainingJob::Paddle(serde_json::from_value(value).expect("a job")),
            "JAXJob" => TrainingJob::Jax(serde_json::from_value(value).expect("a job")),
            "MPIJob" => TrainingJob::Mpi(serde_json::from_value(value).expect("a job")),
            "MXJob" => TrainingJob::MXNet(serde_json::from_value(value).expect("a job")),
            other => panic!("not a job kind: {other}"),
        }
    };
    let mut job = typed(value);
    defaults::apply(&mut job);
    job
}

/// The issues of `yaml`, as `PATH: message` (with `warning: ` first for warnings).
fn issues(yaml: &str) -> Vec<String> {
    validate(&job(yaml))
        .into_iter()
        .map(|issue| match issue.severity {
            Severity::Error => format!("{}: {}", issue.path, issue.message),
            Severity::Warning => format!("warning: {}: {}", issue.path, issue.message),
        })
        .collect()
}

/// A job of `kind` named `name` with `spec` (indented two spaces) as its spec.
fn manifest(kind: &str, name: &str, spec: &str) -> String {
    format!("apiVersion: kubeflow.org/v1\nkind: {kind}\nmetadata: {{name: {name}}}\nspec:\n{spec}")
}

/// One replica type's spec (indented four spaces), with `extra` lines (indented six) before its
/// template, whose single container is `container` with image `img`.
fn replica(replica_type: &str, container: &str, extra: &str) -> String {
    format!(
        "    {replica_type}:\n{extra}      template: {{spec: {{containers: [{{name: {container}, image: img}}]}}}}\n"
    )
}

/// A TFJob `j` of 2 workers, with `run_policy` lines (indented four) under `runPolicy`.
fn tf_job_with_run_policy(run_policy: &str) -> String {
    manifest(
        "TFJob",
        "j",
        &format!(
            "  runPolicy:\n{run_policy}  tfReplicaSpecs:\n{}",
            replica("Worker", "tensorflow", "      replicas: 2\n")
        ),
    )
}

#[test]
fn a_valid_job_of_each_kind_has_no_issue() {
    for (kind, field, specs) in [
        (
            "TFJob",
            "tfReplicaSpecs",
            replica("Chief", "tensorflow", "") + &replica("Worker", "tensorflow", ""),
        ),
        (
            "PyTorchJob",
            "pytorchReplicaSpecs",
            replica("Master", "pytorch", "") + &replica("Worker", "pytorch", ""),
        ),
        (
            "XGBoostJob",
            "xgbReplicaSpecs",
            replica("Master", "xgboost", "") + &replica("Worker", "xgboost", ""),
        ),
        (
            "PaddleJob",
            "paddleReplicaSpecs",
            replica("Worker", "paddle", ""),
        ),
        ("JAXJob", "jaxReplicaSpecs", replica("Worker", "jax", "")),
        (
            "MPIJob",
            "mpiReplicaSpecs",
            replica("Launcher", "mpi", "") + &replica("Worker", "mpi", "      replicas: 2\n"),
        ),
    ] {
        let yaml = manifest(kind, "j", &format!("  {field}:\n{specs}"));
        assert_eq!(issues(&yaml), Vec::<String>::new(), "{kind}");
    }
}

#[test]
fn every_problem_is_reported_not_only_the_first() {
    let yaml = manifest(
        "TFJob",
        "j",
        &format!(
            "  runPolicy: {{backoffLimit: -1, activeDeadlineSeconds: 0}}\n  tfReplicaSpecs:\n{}",
            replica("Worker", "tensorflow", "      replicas: -1\n")
        ),
    );
    assert_eq!(
        issues(&yaml),
        [
            "spec.tfReplicaSpecs[Worker].replicas: is -1: expected 0 or more",
            "spec.runPolicy.backoffLimit: is -1: expected 0 or more",
            "spec.runPolicy.activeDeadlineSeconds: is 0: expected a positive number of seconds",
        ]
    );
}

#[test]
fn the_name_is_a_dns_1035_label() {
    let specs = format!("  tfReplicaSpecs:\n{}", replica("Worker", "tensorflow", ""));
    for (name, problem) in [
        ("Mnist", "`M` is not allowed"),
        ("my_job", "`_` is not allowed"),
        ("1job", "it must start with a lowercase letter"),
        ("job-", "it must start and end with a letter or digit"),
    ] {
        assert_eq!(
            issues(&manifest("TFJob", name, &specs)),
            [format!(
                "metadata.name: `{name}` is not a valid name: {problem} (a DNS-1035 label: \
                 lowercase letters, digits and `-`, starting with a letter, at most 63 characters)"
            )],
            "{name}"
        );
    }
    assert_eq!(
        issues(&manifest("TFJob", "''", &specs)),
        ["metadata.name: is required: a lowercase name such as `mnist` (a DNS-1035 label)"]
    );
}

#[test]
fn the_name_leaves_room_for_the_longest_service_name() {
    let specs = format!(
        "  tfReplicaSpecs:\n{}",
        replica("Worker", "tensorflow", "      replicas: 10\n")
    );
    // `<name>-worker-9` is 9 characters longer than the name.
    let fits = "a".repeat(54);
    assert_eq!(
        issues(&manifest("TFJob", &fits, &specs)),
        Vec::<String>::new()
    );
    let too_long = "a".repeat(55);
    assert_eq!(
        issues(&manifest("TFJob", &too_long, &specs)),
        [format!(
            "metadata.name: `{too_long}` is too long: the replica name `{too_long}-worker-9` has \
             64 characters, and Service names are limited to 63; shorten the job name"
        )]
    );
}

#[test]
fn the_namespace_is_a_dns_1123_label() {
    let specs = format!("  tfReplicaSpecs:\n{}", replica("Worker", "tensorflow", ""));
    let with_namespace = |namespace: &str| {
        manifest("TFJob", "j", &specs).replace(
            "metadata: {name: j}",
            &format!("metadata: {{name: j, namespace: {namespace}}}"),
        )
    };
    assert_eq!(issues(&with_namespace("'1-team'")), Vec::<String>::new());
    assert_eq!(
        issues(&with_namespace("Team")),
        ["metadata.namespace: `Team` is not a valid namespace: `T` is not allowed"]
    );
}

#[test]
fn replicas_are_between_zero_and_the_limit() {
    let with_replicas = |replicas: i32| {
        manifest(
            "JAXJob",
            "j",
            &format!(
                "  jaxReplicaSpecs:\n{}",
                replica("Worker", "jax", &format!("      replicas: {replicas}\n"))
            ),
        )
    };
    assert_eq!(issues(&with_replicas(0)), Vec::<String>::new());
    assert_eq!(
        issues(&with_replicas(MAX_REPLICAS_PER_TYPE)),
        Vec::<String>::new()
    );
    assert_eq!(
        issues(&with_replicas(MAX_REPLICAS_PER_TYPE + 1)),
        [
            "spec.jaxReplicaSpecs[Worker].replicas: is 10001: at most 10000 replicas per type are supported"
        ]
    );
    assert_eq!(
        issues(&with_replicas(-2)),
        ["spec.jaxReplicaSpecs[Worker].replicas: is -2: expected 0 or more"]
    );
}

#[test]
fn replica_types_are_the_kinds_own() {
    let yaml = manifest(
        "JAXJob",
        "j",
        &format!(
            "  jaxReplicaSpecs:\n{}{}",
            replica("Worker", "jax", ""),
            replica("PS", "jax", "")
        ),
    );
    assert_eq!(
        issues(&yaml),
        ["spec.jaxReplicaSpecs[PS]: `PS` is not a JAXJob replica type: expected one of Worker"]
    );
    assert_eq!(
        issues(&manifest("JAXJob", "j", "  jaxReplicaSpecs: {}\n")),
        ["spec.jaxReplicaSpecs: is empty: a JAXJob needs at least one replica type (Worker)"]
    );
}

#[test]
fn containers_need_a_name_an_image_valid_ports_and_the_framework_container() {
    let with_containers = |containers: &str| {
        manifest(
            "TFJob",
            "j",
            &format!(
                "  tfReplicaSpecs:\n    Worker:\n      template: {{spec: {{containers: {containers}}}}}\n"
            ),
        )
    };
    let prefix = "spec.tfReplicaSpecs[Worker].template.spec.containers";
    assert_eq!(
        issues(&with_containers("[]")),
        [format!(
            "{prefix}: is empty: expected a container named `tensorflow`"
        )]
    );
    assert_eq!(
        issues(&with_containers("[{name: '', image: ''}]")),
        [
            format!("{prefix}[0].name: is required"),
            format!(
                "{prefix}[0].image: is required: the container image (locally it is not pulled, \
                 but the operator needs it)"
            ),
        ]
    );
    assert_eq!(
        issues(&with_containers(
            "[{name: tensorflow, image: tf, ports: [{containerPort: 0}, {containerPort: 65536}]}]"
        )),
        [
            format!(
                "{prefix}[0].ports[0].containerPort: is 0: expected a port number from 1 to 65535"
            ),
            format!(
                "{prefix}[0].ports[1].containerPort: is 65536: expected a port number from 1 to 65535"
            ),
        ]
    );
    assert_eq!(
        issues(&with_containers(
            "[{name: trainer, image: tf}, {name: sidecar, image: s}]"
        )),
        [format!(
            "{prefix}: no container is named `tensorflow` (found `trainer`, `sidecar`): a TFJob \
             runs the framework in the container named `tensorflow`"
        )]
    );
}

#[test]
fn run_policy_numbers_are_in_range() {
    assert_eq!(
        issues(&tf_job_with_run_policy(
            "    ttlSecondsAfterFinished: -1\n    activeDeadlineSeconds: 1\n    schedulingPolicy: {minAvailable: -1, scheduleTimeoutSeconds: -5}\n"
        )),
        [
            "spec.runPolicy.ttlSecondsAfterFinished: is -1: expected 0 or more",
            "spec.runPolicy.schedulingPolicy.minAvailable: is -1: expected 0 or more",
            "spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds: is -5: expected 0 or more",
        ]
    );
    assert_eq!(
        issues(&tf_job_with_run_policy(
            "    backoffLimit: 0\n    ttlSecondsAfterFinished: 0\n"
        )),
        Vec::<String>::new()
    );
}

#[test]
fn managed_by_is_the_training_operator_or_multikueue() {
    for accepted in [MANAGED_BY_TRAINING_OPERATOR, MANAGED_BY_MULTIKUEUE] {
        assert_eq!(
            issues(&tf_job_with_run_policy(&format!(
                "    managedBy: {accepted}\n"
            ))),
            Vec::<String>::new(),
            "{accepted}"
        );
    }
    assert_eq!(
        issues(&tf_job_with_run_policy("    managedBy: someone\n")),
        [
            "spec.runPolicy.managedBy: `someone` is not supported: expected \
          `kubeflow.org/training-operator` or `kueue.x-k8s.io/multikueue`"
        ]
    );
}

#[test]
fn tensorflow_has_one_chief_or_master_and_warns_about_several() {
    let both = manifest(
        "TFJob",
        "j",
        &format!(
            "  tfReplicaSpecs:\n{}{}",
            replica("Chief", "tensorflow", ""),
            replica("Master", "tensorflow", "")
        ),
    );
    assert_eq!(
        issues(&both),
        [
            "spec.tfReplicaSpecs: has both `Chief` and `Master`: a TFJob has at most one of them \
          (they are the same role)"
        ]
    );
    let two_chiefs = manifest(
        "TFJob",
        "j",
        &format!(
            "  tfReplicaSpecs:\n{}",
            replica("Chief", "tensorflow", "      replicas: 2\n")
        ),
    );
    let found = validate(&job(&two_chiefs));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].severity, Severity::Warning);
    assert_eq!(
        issues(&two_chiefs),
        [
            "warning: spec.tfReplicaSpecs[Chief].replicas: is 2: TensorFlow accepts a single chief \
          task; the others will fail to start"
        ]
    );
}

#[test]
fn pytorch_and_xgboost_have_exactly_one_master() {
    let pytorch = manifest(
        "PyTorchJob",
        "j",
        &format!(
            "  pytorchReplicaSpecs:\n{}{}",
            replica("Master", "pytorch", "      replicas: 2\n"),
            replica("Worker", "pytorch", "      replicas: 0\n")
        ),
    );
    assert_eq!(
        issues(&pytorch),
        [
            "spec.pytorchReplicaSpecs[Worker].replicas: is 0: a PyTorchJob Worker needs at least 1 replica",
            "spec.pytorchReplicaSpecs[Master].replicas: is 2: a PyTorchJob has exactly 1 Master",
        ]
    );
    let xgboost = manifest(
        "XGBoostJob",
        "j",
        &format!("  xgbReplicaSpecs:\n{}", replica("Worker", "xgboost", "")),
    );
    assert_eq!(
        issues(&xgboost),
        ["spec.xgbReplicaSpecs: has no `Master`: a XGBoostJob requires one"]
    );
}

#[test]
fn pytorch_elastic_policy_needs_workers_and_a_range() {
    let elastic = |policy: &str, types: &str| {
        manifest(
            "PyTorchJob",
            "j",
            &format!("{policy}  pytorchReplicaSpecs:\n{types}"),
        )
    };
    let master = replica("Master", "pytorch", "");
    let worker = replica("Worker", "pytorch", "      replicas: 2\n");
    assert_eq!(
        issues(&elastic(
            "  elasticPolicy: {minReplicas: 1, maxReplicas: 2}\n",
            &master
        )),
        ["spec.pytorchReplicaSpecs: has no `Worker`: a PyTorchJob requires one"]
    );
    assert_eq!(
        issues(&elastic(
            "  elasticPolicy: {minReplicas: 3, maxReplicas: 2}\n",
            &worker
        )),
        [
            "spec.elasticPolicy.maxReplicas: is 2, below minReplicas (3): expected minReplicas ≤ maxReplicas"
        ]
    );
    assert_eq!(
        issues(&elastic(
            "  elasticPolicy: {minReplicas: 0, maxReplicas: 2}\n",
            &worker
        )),
        ["spec.elasticPolicy.minReplicas: is 0: expected at least 1"]
    );
    assert_eq!(
        issues(&elastic("  elasticPolicy: {nProcPerNode: 2}\n", &worker)),
        ["warning: spec.elasticPolicy.nProcPerNode: is deprecated: use `spec.nprocPerNode`"]
    );
    assert_eq!(
        issues(&elastic(
            "  nprocPerNode: '2'\n  elasticPolicy: {nProcPerNode: 2}\n",
            &worker
        )),
        [
            "spec.elasticPolicy.nProcPerNode: must not be used with `spec.nprocPerNode`: keep only \
          `spec.nprocPerNode`"
        ]
    );
}

#[test]
fn paddle_elastic_policy_is_a_range() {
    let yaml = manifest(
        "PaddleJob",
        "j",
        &format!(
            "  elasticPolicy: {{minReplicas: 4, maxReplicas: 2}}\n  paddleReplicaSpecs:\n{}",
            replica("Worker", "paddle", "      replicas: 2\n")
        ),
    );
    assert_eq!(
        issues(&yaml),
        [
            "spec.elasticPolicy.maxReplicas: is 2, below minReplicas (4): expected minReplicas ≤ maxReplicas"
        ]
    );
}

#[test]
fn mpi_has_exactly_one_launcher_and_a_slot_per_worker() {
    let mpi = |specs: &str| manifest("MPIJob", "j", specs);
    let worker = replica("Worker", "mpi", "      replicas: 2\n");
    assert_eq!(
        issues(&mpi(&format!("  mpiReplicaSpecs:\n{worker}"))),
        ["spec.mpiReplicaSpecs: has no `Launcher`: a MPIJob requires one"]
    );
    assert_eq!(
        issues(&mpi(&format!(
            "  mpiReplicaSpecs:\n{}{worker}",
            replica("Launcher", "mpi", "      replicas: 2\n")
        ))),
        ["spec.mpiReplicaSpecs[Launcher].replicas: is 2: an MPIJob has exactly 1 Launcher"]
    );
    assert_eq!(
        issues(&mpi(&format!(
            "  slotsPerWorker: 0\n  mpiReplicaSpecs:\n{}{worker}",
            replica("Launcher", "mpi", "")
        ))),
        ["spec.slotsPerWorker: is 0: expected at least 1"]
    );
}

#[test]
fn mxnet_jobs_of_either_mode_are_valid_with_their_own_replica_types() {
    let train = format!(
        "  jobMode: MXTrain\n  mxReplicaSpecs:\n{}{}{}",
        replica("Scheduler", "mxnet", ""),
        replica("Server", "mxnet", "      replicas: 2\n"),
        replica("Worker", "mxnet", "      replicas: 2\n"),
    );
    assert_eq!(
        issues(&manifest("MXJob", "j", &train)),
        Vec::<String>::new()
    );
    let single_worker = format!(
        "  jobMode: MXTrain\n  mxReplicaSpecs:\n{}",
        replica("Worker", "mxnet", "")
    );
    assert_eq!(
        issues(&manifest("MXJob", "j", &single_worker)),
        Vec::<String>::new()
    );
    let tune = format!(
        "  jobMode: MXTune\n  mxReplicaSpecs:\n{}{}{}",
        replica("TunerTracker", "mxnet", ""),
        replica("TunerServer", "mxnet", ""),
        replica("Tuner", "mxnet", ""),
    );
    assert_eq!(issues(&manifest("MXJob", "j", &tune)), Vec::<String>::new());
}

#[test]
fn mxnet_needs_a_job_mode_one_scheduler_for_its_servers_and_a_tuner_to_tune() {
    let mx = |specs: String| issues(&manifest("MXJob", "j", &specs));
    let scheduler = |extra| replica("Scheduler", "mxnet", extra);
    let worker = replica("Worker", "mxnet", "");
    assert_eq!(
        mx(format!("  mxReplicaSpecs:\n{worker}")),
        [
            "spec.jobMode: is required: `MXTrain` (a Scheduler, Servers and Workers) or `MXTune` \
             (a TunerTracker, TunerServers and a Tuner)"
        ]
    );
    assert_eq!(
        mx(format!(
            "  jobMode: MXTrain\n  mxReplicaSpecs:\n{}{worker}",
            scheduler("      replicas: 3\n")
        )),
        [
            "spec.mxReplicaSpecs[Scheduler].replicas: is 3: an MXJob has at most 1 Scheduler \
             (every replica meets scheduler 0, named by DMLC_PS_ROOT_URI)"
        ]
    );
    let server = replica("Server", "mxnet", "");
    let no_scheduler = [
        "spec.mxReplicaSpecs: has `Server` but no `Scheduler`: parameter servers and workers meet \
         at the Scheduler (DMLC_PS_ROOT_URI); add a Scheduler with 1 replica",
    ];
    assert_eq!(
        mx(format!(
            "  jobMode: MXTrain\n  mxReplicaSpecs:\n{server}{worker}"
        )),
        no_scheduler
    );
    assert_eq!(
        mx(format!(
            "  jobMode: MXTrain\n  mxReplicaSpecs:\n{}{server}{worker}",
            scheduler("      replicas: 0\n")
        )),
        no_scheduler
    );
    assert_eq!(
        mx(format!(
            "  jobMode: MXTune\n  mxReplicaSpecs:\n{}",
            replica("TunerTracker", "mxnet", "")
        )),
        [
            "spec.mxReplicaSpecs: has no `Tuner`: an MXTune job needs one (the Tuner decides that \
             the job succeeded; the tracker and tuner servers serve until stopped)"
        ]
    );
}

#[test]
fn mxnet_replica_types_of_the_other_mode_are_a_warning() {
    let yaml = manifest(
        "MXJob",
        "j",
        &format!(
            "  jobMode: MXTune\n  mxReplicaSpecs:\n{}{}",
            replica("Tuner", "mxnet", ""),
            replica("Worker", "mxnet", "")
        ),
    );
    assert_eq!(
        issues(&yaml),
        [
            "warning: spec.mxReplicaSpecs[Worker]: `Worker` is an MXTrain replica type in an \
             MXTune job: jobMode only describes the job (upstream ran it the same way whatever it \
             said), so the replica types decide; is jobMode meant to be MXTrain?"
        ]
    );
}
