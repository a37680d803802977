//! Every fixture manifest, loopback addressing against cluster addressing, and TFJobs of any
//! shape.

use std::fmt::Write;
use std::path::Path;

use proptest::prelude::*;

use super::*;
use trainctl_api::JobKind;

use crate::env::mxnet::DMLC_NODE_HOST;
use crate::env::tensorflow::TF_CONFIG;

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

/// The same variables in both modes, but for the documented differences (docs/semantics.md
/// §4.3 and §4.8): on loopback, an elastic job's `PET_RDZV_CONF` also says which torchrun hosts
/// the c10d store (so a job without `rdzvConf` has it there only), and MXNet's replicas get
/// `DMLC_NODE_HOST`.
#[test]
fn loopback_env_has_the_same_shape_as_cluster_env_but_mxnets_node_host() {
    let mut mxnet_jobs = 0;
    for (file, job) in fixture_jobs() {
        let cluster = env_shape(&build_objects(&job, &BuildOptions::default()));
        let mut loopback = env_shape(&build_objects(&job, &loopback_options(&job)));
        if job.kind() == JobKind::MXJob {
            mxnet_jobs += 1;
            // ps-lite's servers and workers advertise 127.0.0.1 on this machine only.
            for containers in loopback.values_mut() {
                for names in containers {
                    assert_eq!(names.pop().as_deref(), Some(DMLC_NODE_HOST), "{file}");
                }
            }
        }
        // An elastic PyTorchJob's PET_RDZV_CONF also names the c10d store's host on this
        // machine only.
        for (pod, containers) in &mut loopback {
            for (index, names) in containers.iter_mut().enumerate() {
                if !cluster[pod][index]
                    .iter()
                    .any(|name| name == "PET_RDZV_CONF")
                {
                    names.retain(|name| name != "PET_RDZV_CONF");
                }
            }
        }
        assert_eq!(cluster, loopback, "{file}");
    }
    assert!(mxnet_jobs > 0, "the fixtures have MXJobs");
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
