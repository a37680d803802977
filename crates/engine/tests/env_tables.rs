//! docs/semantics.md §4 against the code: each framework's table names exactly the variables the
//! engine injects into the containers of that framework's jobs (every job of
//! `testdata/fixtures`, and the jobs below for the branches the fixtures do not reach), on a
//! cluster and on this machine.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use trainctl_api::{JobKind, TrainingJob};
use trainctl_engine::{Addressing, BuildOptions, build_objects};

/// Jobs for the branches the fixtures leave out: every optional elastic setting, Paddle's
/// parameter-server mode, an MPI launcher without a GPU.
const EXTRA_JOBS: &str = r"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: elastic-everything}
spec:
  elasticPolicy:
    minReplicas: 1
    maxReplicas: 3
    maxRestarts: 5
    rdzvId: abc
    rdzvConf: [{key: timeout, value: '900'}]
    standalone: true
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: pytorch, image: torch}]}}
---
apiVersion: kubeflow.org/v1
kind: PaddleJob
metadata: {name: paddle-ps}
spec:
  paddleReplicaSpecs:
    Master:
      replicas: 1
      template: {spec: {containers: [{name: paddle, image: paddle}]}}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: paddle, image: paddle}]}}
---
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: mpi-cpu}
spec:
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template: {spec: {containers: [{name: launcher, image: mpi, command: [mpirun, hostname]}]}}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: worker, image: mpi}]}}
";

/// The section of docs/semantics.md that documents `kind`'s environment.
fn section(kind: JobKind) -> &'static str {
    match kind {
        JobKind::TFJob => "### 4.2 TensorFlow",
        JobKind::PyTorchJob => "### 4.3 PyTorch",
        JobKind::XGBoostJob => "### 4.4 XGBoost",
        JobKind::PaddleJob => "### 4.5 Paddle",
        JobKind::JAXJob => "### 4.6 JAX",
        JobKind::MPIJob => "### 4.7 MPI",
        JobKind::MXJob => "### 4.8 MXNet",
    }
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The variables the table of `heading` names: every backquoted name in its rows' first cells.
fn documented(semantics: &str, heading: &str) -> BTreeSet<String> {
    let start = semantics
        .find(&format!("{heading}\n"))
        .unwrap_or_else(|| panic!("docs/semantics.md has a section `{heading}`"));
    let body = &semantics[start + heading.len()..];
    let end = body.find("\n#").unwrap_or(body.len());
    let names: BTreeSet<String> = body[..end]
        .lines()
        .filter(|line| line.starts_with("| `"))
        .filter_map(|line| line.split('|').nth(1))
        .flat_map(|cell| cell.split('`').skip(1).step_by(2))
        .map(str::to_owned)
        .collect();
    assert!(!names.is_empty(), "`{heading}` has a table of variables");
    names
}

/// Every job of the fixtures and of [`EXTRA_JOBS`].
fn jobs() -> Vec<(String, TrainingJob)> {
    let mut files = Vec::new();
    for dir in ["seeds", "upstream"] {
        let folder = repository().join("testdata/fixtures").join(dir);
        for entry in std::fs::read_dir(&folder).expect("the fixtures' folder") {
            let path = entry.expect("a fixture").path();
            if path
                .extension()
                .is_some_and(|extension| extension == "yaml")
            {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut jobs = Vec::new();
    for path in files {
        let name = path.display().to_string();
        let loaded = trainctl_api::manifest::load_file(&path);
        jobs.extend(loaded.jobs.into_iter().map(|job| (name.clone(), job.job)));
    }
    let extra = trainctl_api::manifest::load_str("env_tables.rs", EXTRA_JOBS);
    assert!(!extra.has_errors(), "the extra jobs are valid");
    jobs.extend(
        extra
            .jobs
            .into_iter()
            .map(|job| ("env_tables.rs".to_owned(), job.job)),
    );
    jobs
}

/// The variables the engine adds to `job`'s containers under `options`: what a container has
/// that its template does not declare.
fn injected(job: &TrainingJob, options: &BuildOptions) -> BTreeSet<String> {
    let declared: BTreeSet<String> = job
        .replica_specs()
        .values()
        .filter_map(|spec| spec.template.spec.as_ref())
        .flat_map(|pod| &pod.containers)
        .flat_map(|container| container.env.iter().flatten())
        .map(|var| var.name.clone())
        .collect();
    build_objects(job, options)
        .pods
        .iter()
        .filter_map(|pod| pod.spec.as_ref())
        .flat_map(|pod| &pod.containers)
        .flat_map(|container| container.env.iter().flatten())
        .map(|var| var.name.clone())
        .filter(|name| !declared.contains(name))
        .collect()
}

#[test]
fn each_frameworks_table_names_exactly_the_variables_it_gets() {
    let semantics =
        std::fs::read_to_string(repository().join("docs/semantics.md")).expect("docs/semantics.md");
    let loopback = BuildOptions {
        addressing: Addressing::Loopback {
            ports: BTreeMap::new(),
        },
        ..BuildOptions::default()
    };
    let mut found: BTreeMap<JobKind, BTreeSet<String>> = BTreeMap::new();
    for (_, job) in jobs() {
        let names = found.entry(job.kind()).or_default();
        names.extend(injected(&job, &BuildOptions::default()));
        names.extend(injected(&job, &loopback));
    }
    for kind in JobKind::ALL {
        let documented = documented(&semantics, section(kind));
        let injected = found.remove(&kind).unwrap_or_default();
        assert_eq!(
            documented, injected,
            "{kind:?}: docs/semantics.md's table (left) against what the code injects (right)"
        );
    }
}
