//! Random jobs: every kind, with the replica types and run policies validation accepts.

use std::fmt::Write as _;

use proptest::prelude::*;
use trainctl_api::TrainingJob;

/// One replica type of a generated job: name, replicas, restart policy (`None`: the default).
type TypeShape = (&'static str, i32, Option<&'static str>);

fn restart_policy() -> impl Strategy<Value = Option<&'static str>> {
    prop_oneof![
        Just(None),
        Just(Some("Always")),
        Just(Some("OnFailure")),
        Just(Some("Never")),
        Just(Some("ExitCode")),
    ]
}

fn replica_type(
    name: &'static str,
    replicas: std::ops::Range<i32>,
) -> impl Strategy<Value = TypeShape> {
    (replicas, restart_policy()).prop_map(move |(n, policy)| (name, n, policy))
}

/// The kind and its replica types, within what validation accepts.
fn kind_and_types() -> impl Strategy<Value = (&'static str, Vec<TypeShape>)> {
    let optional = |s: BoxedStrategy<TypeShape>| proptest::option::of(s);
    prop_oneof![
        (
            prop_oneof![Just("Chief"), Just("Master"), Just("")],
            replica_type("Chief", 1..2),
            optional(replica_type("PS", 0..3).boxed()),
            replica_type("Worker", 1..4),
            optional(replica_type("Evaluator", 1..2).boxed()),
        )
            .prop_map(|(chief, (_, n, policy), ps, worker, evaluator)| {
                let mut types = Vec::new();
                if !chief.is_empty() {
                    types.push((chief, n, policy));
                }
                types.extend(ps);
                types.push(worker);
                types.extend(evaluator);
                ("TFJob", types)
            }),
        (
            proptest::bool::ANY,
            replica_type("Master", 1..2),
            replica_type("Worker", 1..4)
        )
            .prop_map(|(master, m, w)| {
                let types = if master { vec![m, w] } else { vec![w] };
                ("PyTorchJob", types)
            }),
        (replica_type("Master", 1..2), replica_type("Worker", 0..3))
            .prop_map(|(m, w)| ("XGBoostJob", vec![m, w])),
        (replica_type("Master", 1..2), replica_type("Worker", 1..3))
            .prop_map(|(m, w)| ("PaddleJob", vec![m, w])),
        replica_type("Worker", 1..4).prop_map(|w| ("JAXJob", vec![w])),
        (replica_type("Launcher", 1..2), replica_type("Worker", 0..3))
            .prop_map(|(l, w)| ("MPIJob", vec![l, w])),
        (
            replica_type("Scheduler", 1..2),
            replica_type("Server", 0..3),
            replica_type("Worker", 1..4)
        )
            .prop_map(|(scheduler, server, worker)| ("MXJob", vec![scheduler, server, worker])),
        (
            replica_type("TunerTracker", 1..2),
            replica_type("TunerServer", 0..3),
            replica_type("Tuner", 1..2)
        )
            .prop_map(|(tracker, server, tuner)| ("MXJob", vec![tracker, server, tuner])),
    ]
}

#[derive(Debug, Clone)]
pub(crate) struct JobShape {
    kind: &'static str,
    types: Vec<TypeShape>,
    backoff_limit: Option<i32>,
    deadline: Option<i64>,
    ttl: Option<i32>,
    clean_pod_policy: Option<&'static str>,
    all_workers: bool,
    dynamic_worker: bool,
    elastic: bool,
}

pub(crate) fn job_shape() -> impl Strategy<Value = JobShape> {
    (
        kind_and_types(),
        proptest::option::of(0..4_i32),
        proptest::option::of(30..600_i64),
        proptest::option::of(0..120_i32),
        proptest::option::of(prop_oneof![Just("All"), Just("Running"), Just("None")]),
        proptest::bool::ANY,
        proptest::bool::weighted(0.2),
        proptest::bool::ANY,
    )
        .prop_map(
            |(
                (kind, types),
                backoff_limit,
                deadline,
                ttl,
                clean,
                all_workers,
                dynamic,
                elastic,
            )| {
                JobShape {
                    kind,
                    types,
                    backoff_limit,
                    deadline,
                    ttl,
                    clean_pod_policy: clean,
                    all_workers: all_workers && kind == "TFJob",
                    dynamic_worker: dynamic && kind == "TFJob",
                    elastic: elastic && kind == "PyTorchJob",
                }
            },
        )
}

pub(crate) fn build(shape: &JobShape) -> TrainingJob {
    let kind: trainctl_api::JobKind = shape.kind.parse().expect("a kind");
    let container = kind.default_container().unwrap_or("main");
    let mut run_policy = Vec::new();
    if let Some(n) = shape.backoff_limit {
        run_policy.push(format!("backoffLimit: {n}"));
    }
    if let Some(n) = shape.deadline {
        run_policy.push(format!("activeDeadlineSeconds: {n}"));
    }
    if let Some(n) = shape.ttl {
        run_policy.push(format!("ttlSecondsAfterFinished: {n}"));
    }
    if let Some(policy) = shape.clean_pod_policy {
        run_policy.push(format!("cleanPodPolicy: {policy}"));
    }
    let mut yaml = format!(
        "apiVersion: kubeflow.org/v1\nkind: {kind}\nmetadata: {{name: prop, namespace: ns}}\n\
         spec:\n  runPolicy: {{{}}}\n",
        run_policy.join(", ")
    );
    if shape.all_workers {
        yaml.push_str("  successPolicy: AllWorkers\n");
    }
    if shape.dynamic_worker {
        yaml.push_str("  enableDynamicWorker: true\n");
    }
    if shape.elastic {
        yaml.push_str("  elasticPolicy: {minReplicas: 1, maxReplicas: 4}\n");
    }
    if kind == trainctl_api::JobKind::MXJob {
        let tunes = shape.types.iter().any(|(name, _, _)| *name == "Tuner");
        let mode = if tunes { "MXTune" } else { "MXTrain" };
        writeln!(yaml, "  jobMode: {mode}").expect("writing to a String cannot fail");
    }
    writeln!(yaml, "  {}:", kind.replica_specs_field()).expect("writing to a String cannot fail");
    for (name, replicas, policy) in &shape.types {
        writeln!(yaml, "    {name}:\n      replicas: {replicas}")
            .expect("writing to a String cannot fail");
        if let Some(policy) = policy {
            writeln!(yaml, "      restartPolicy: {policy}")
                .expect("writing to a String cannot fail");
        }
        writeln!(
            yaml,
            "      template: {{spec: {{containers: [{{name: {container}, image: x}}]}}}}"
        )
        .expect("writing to a String cannot fail");
    }
    let mut manifests = trainctl_api::manifest::load_str("prop.yaml", &yaml);
    assert!(
        !manifests.has_errors(),
        "generated job must be valid:\n{yaml}\n{:#?}",
        manifests.diagnostics
    );
    manifests.jobs.remove(0).job
}
