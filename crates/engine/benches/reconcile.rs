//! `reconcile` of a 1,000-replica PyTorchJob (a master and 999 workers):
//!
//! - `steady_state`: every replica runs and the status is up to date, so there is nothing to do
//!   (the common case of a level-triggered operator; goal < 200 µs);
//! - `create_all`: a new job, every pod and service to create;
//! - `finished`: a succeeded job, which should cost nothing.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use jiff::Timestamp;
use trainctl_api::{ReplicaType, TrainingJob, manifest};
use trainctl_engine::reconcile::{Observed, ObservedReplica, PodPhase, ReplicaSlot};
use trainctl_engine::{Plan, reconcile};

const NOW: Timestamp = Timestamp::constant(1_767_225_600, 0);

fn job(workers: u32) -> TrainingJob {
    let replica = |name: &str, replicas: u32| {
        format!(
            "    {name}:\n      replicas: {replicas}\n      template:\n        spec:\n          \
             containers:\n            - name: pytorch\n              image: pytorch/pytorch:2.9.1\n"
        )
    };
    let text = format!(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: big\n  namespace: bench\n\
         spec:\n  pytorchReplicaSpecs:\n{}{}",
        replica("Master", 1),
        replica("Worker", workers)
    );
    let mut manifests = manifest::load_str("big.yaml", &text);
    assert!(!manifests.has_errors(), "{:#?}", manifests.diagnostics);
    manifests.jobs.remove(0).job
}

/// Every slot of `job` with a pod in `phase`, and its service.
fn all(job: &TrainingJob, phase: PodPhase) -> Observed {
    let slots = trainctl_engine::objects::replica_slots(job);
    let mut observed = Observed::with_pods(slots.iter().map(|(replica_type, index)| {
        (
            ReplicaSlot::new(replica_type.clone(), *index),
            ObservedReplica::new(phase),
        )
    }));
    observed.services = observed.pods.keys().cloned().collect();
    observed
}

/// The job with the status its plan writes.
fn with_status(mut job: TrainingJob, plan: &Plan) -> TrainingJob {
    if let Some(status) = &plan.status {
        *job.status_mut() = Some(status.clone());
    }
    job
}

fn reconcile_1000_replicas(c: &mut Criterion) {
    let new_job = job(999);
    let running = all(&new_job, PodPhase::Running);
    let steady_job = with_status(new_job.clone(), &reconcile(&new_job, &running, NOW));
    let steady_plan = reconcile(&steady_job, &running, NOW);
    assert!(
        steady_plan.status.is_none() && steady_plan.create_pods.is_empty(),
        "steady state has nothing to do: {steady_plan:#?}"
    );

    let nothing = Observed::default();
    assert_eq!(reconcile(&new_job, &nothing, NOW).create_pods.len(), 1000);

    let succeeded = all(&new_job, PodPhase::Succeeded);
    let finished_job = with_status(steady_job.clone(), &reconcile(&steady_job, &succeeded, NOW));
    assert!(
        finished_job
            .status()
            .is_some_and(trainctl_api::JobStatus::is_finished)
    );
    assert!(!reconcile(&finished_job, &succeeded, NOW).has_work());
    assert_eq!(
        steady_job
            .replica_specs()
            .get(&ReplicaType::Worker)
            .map(trainctl_api::ReplicaSpec::replicas_or_default),
        Some(999)
    );

    let mut group = c.benchmark_group("reconcile_pytorchjob_1000_replicas");
    group.bench_function("steady_state", |b| {
        b.iter(|| reconcile(black_box(&steady_job), black_box(&running), NOW));
    });
    group.bench_function("create_all", |b| {
        b.iter(|| reconcile(black_box(&new_job), black_box(&nothing), NOW));
    });
    group.bench_function("finished", |b| {
        b.iter(|| reconcile(black_box(&finished_job), black_box(&succeeded), NOW));
    });
    group.finish();
}

criterion_group!(benches, reconcile_1000_replicas);
criterion_main!(benches);
