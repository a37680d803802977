//! Validate + render of a TFJob with 1,000 workers and 100 parameter servers.
//!
//! Every pod's `TF_CONFIG` lists all 1,101 addresses, so the output grows with the square of the
//! job size: this is the worst case of `trainctl render` and of the operator's pod creation.

use criterion::{Criterion, criterion_group, criterion_main};
use trainctl_api::manifest;
use trainctl_engine::{BuildOptions, build_objects};

/// A chief, `workers` workers and `ps` parameter servers.
fn tfjob(workers: u32, ps: u32) -> String {
    let replica = |name: &str, replicas: u32| {
        format!(
            "    {name}:\n      replicas: {replicas}\n      template:\n        spec:\n          \
             containers:\n            - name: tensorflow\n              image: tensorflow/tensorflow:2.21.0\n              \
             command: [python, train.py]\n"
        )
    };
    format!(
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: big\n  namespace: bench\nspec:\n  \
         tfReplicaSpecs:\n{}{}{}",
        replica("Chief", 1),
        replica("Worker", workers),
        replica("PS", ps)
    )
}

fn validate_and_render(c: &mut Criterion) {
    let text = tfjob(1000, 100);
    let options = BuildOptions::default();
    let load = || {
        let mut manifests = manifest::load_str("big.yaml", &text);
        assert!(!manifests.has_errors());
        manifests.jobs.remove(0).job
    };
    let job = load();

    let mut group = c.benchmark_group("tfjob_1000_workers_100_ps");
    group.sample_size(20);
    group.bench_function("validate", |b| b.iter(load));
    group.bench_function("render", |b| b.iter(|| build_objects(&job, &options)));
    group.bench_function("validate_render_json", |b| {
        b.iter(|| {
            let objects = build_objects(&load(), &options);
            serde_json::to_vec(&(&objects.services, &objects.pods)).expect("objects serialize")
        });
    });
    group.finish();
}

criterion_group!(benches, validate_and_render);
criterion_main!(benches);
