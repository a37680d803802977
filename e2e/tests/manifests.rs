//! Our users' manifests and upstream's examples applied with kubectl on a real API server, and
//! what it showed that the mock did not: a template's own `TF_CONFIG`, `ExitedWithCode`
//! events, the scheduler's why for a pending pod, pending pods in no count, the MPI launcher's
//! labels, and `kubectl get` columns. Run by `scripts/e2e`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use serde_json::json;
use trainctl_api::manifest::{Companion, Manifests};
use trainctl_api::{JobKind, TrainingJob};
use trainctl_e2e::{
    EXIT_CODE_ANNOTATION, IMAGE, RUN_SECONDS_ANNOTATION, await_events, await_exists, await_job,
    await_last_condition, create_job, in_namespace, job_events, json_of, kubectl, repository,
};
use trainctl_engine::objects::{BuildOptions, build_objects};
use trainctl_operator::job;

/// Every job manifest of `testdata/fixtures/seeds` and `upstream`.
fn fixtures() -> Vec<PathBuf> {
    let root = repository().join("testdata/fixtures");
    let mut files: Vec<PathBuf> = ["seeds", "upstream"]
        .iter()
        .flat_map(|dir| std::fs::read_dir(root.join(dir)).expect("the fixtures exist"))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

/// Holds once the job has the condition `Created` (the newest may be another by then).
fn is_created(job: Option<&DynamicObject>) -> bool {
    job.and_then(|job| job.data["status"]["conditions"].as_array())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|condition| condition["type"] == "Created" && condition["status"] == "True")
        })
}

/// The main container's env of a pod, as JSON, as the API server stores it: `value: ""` is
/// absent (Go's `omitempty`; the kubelet reads it as empty) and a `fieldRef` has its default
/// `apiVersion: v1`.
fn main_env(pod: &Pod) -> serde_json::Value {
    let mut env = json_of(&pod.spec.as_ref().map(|spec| &spec.containers[0].env));
    for var in env.as_array_mut().into_iter().flatten() {
        let var = var.as_object_mut().expect("an env var");
        if var.get("value") == Some(&json!("")) {
            var.remove("value");
        }
        if let Some(field) = var
            .get_mut("valueFrom")
            .and_then(|from| from.get_mut("fieldRef"))
        {
            let field = field.as_object_mut().expect("a fieldRef");
            field.entry("apiVersion").or_insert_with(|| json!("v1"));
        }
    }
    env
}

/// The manifest without the namespace its documents name (a `namespace:` line right under a
/// top-level `metadata:`), every other line as it is.
fn without_namespaces(text: &str) -> String {
    let mut in_metadata = false;
    let mut out = String::new();
    for line in text.lines() {
        if !line.starts_with([' ', '#']) && !line.trim().is_empty() {
            in_metadata = line.trim_end() == "metadata:";
        } else if in_metadata && line.starts_with("  namespace:") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Runs `command` with `input` on its standard input; its output.
fn run_with_input(command: &mut Command, input: &[u8]) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    child
        .stdin
        .take()
        .expect("its stdin")
        .write_all(input)
        .expect("its input written");
    child.wait_with_output().expect("the command ends")
}

/// What `kubectl apply` prints for each job and companion of `manifests` it creates, sorted.
fn created_lines(manifests: &Manifests) -> Vec<String> {
    let mut lines: Vec<String> = manifests
        .jobs
        .iter()
        .map(|loaded| {
            let job = &loaded.job;
            format!(
                "{}.kubeflow.org/{} created",
                job.kind().singular(),
                job.name()
            )
        })
        .chain(
            manifests
                .companions
                .iter()
                .map(|companion| match companion {
                    Companion::ConfigMap(map) => format!("configmap/{} created", map.name_any()),
                    Companion::Secret(secret) => format!("secret/{} created", secret.name_any()),
                }),
        )
        .collect();
    lines.sort();
    lines
}

/// Applies the fixture `path` with kubectl in `namespace`, as its users would; what kubectl
/// printed, sorted.
///
/// Each fixture goes to a namespace of its own (two examples share a name, and most name
/// `kubeflow`, the operator's own, or the seeds' `kubeflow-user-example-com`, which the
/// allreduce test below uses as it is). kubectl refuses `-n` for an object that names another
/// namespace, so it is given the fixture less its `namespace:` lines (the loader must read the
/// same jobs from it, namespace aside). A v1alpha1 TFJob cannot be applied: the CRDs serve v1
/// only, as upstream's did, and kubectl says so; its users convert it with
/// `trainctl --kube validate -o yaml` (README) and apply that, as here.
fn apply(path: &Path, text: &str, manifests: &Manifests, namespace: &str) -> Vec<String> {
    let source = path.display().to_string();
    let stripped = without_namespaces(text);
    let reloaded = trainctl_api::manifest::load_str(&source, &stripped);
    let namespace_of = |companion: &mut Companion| match companion {
        Companion::ConfigMap(map) => map.metadata.namespace.take(),
        Companion::Secret(secret) => secret.metadata.namespace.take(),
    };
    // Each job and companion with its namespace taken out, and the namespaces taken.
    let unnamespaced = |manifests: &Manifests| {
        let mut namespaces = Vec::new();
        let mut jobs: Vec<TrainingJob> = manifests.jobs.iter().map(|l| l.job.clone()).collect();
        for job in &mut jobs {
            namespaces.push(job.metadata_mut().namespace.take());
        }
        let mut companions = manifests.companions.clone();
        namespaces.extend(companions.iter_mut().map(namespace_of));
        (json_of(&jobs), companions, namespaces)
    };
    let (jobs, companions, _) = unnamespaced(manifests);
    let (jobs_left, companions_left, namespaces_left) = unnamespaced(&reloaded);
    assert_eq!(jobs_left, jobs, "{source} less its namespaces");
    assert_eq!(companions_left, companions, "{source} less its namespaces");
    assert!(
        namespaces_left.iter().all(Option::is_none),
        "{source} less its namespaces: {namespaces_left:?}"
    );
    let copy = std::env::temp_dir().join(format!(
        "{namespace}-{}",
        path.file_name()
            .and_then(|n| n.to_str())
            .expect("a file name")
    ));
    std::fs::write(&copy, &stripped).expect("the copy written");
    let copy_path = copy.to_str().expect("a UTF-8 path");
    let is_v1alpha1 = text
        .lines()
        .any(|line| line.trim_end() == "apiVersion: kubeflow.org/v1alpha1");
    let output = if is_v1alpha1 {
        let refused = Command::new("kubectl")
            .args(["apply", "-f", copy_path, "-n", namespace])
            .output()
            .expect("kubectl runs");
        let error = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(1), "{source}: {error}");
        assert!(
            error.contains(
                "no matches for kind \"TFJob\" in version \"kubeflow.org/v1alpha1\"\nensure CRDs \
                 are installed first"
            ),
            "{source}: {error}"
        );
        let trainctl = std::env::var("TRAINCTL_E2E_TRAINCTL")
            .expect("TRAINCTL_E2E_TRAINCTL: the trainctl binary (scripts/e2e sets it)");
        let converted = Command::new(trainctl)
            // What the API server checks, not this machine: the job is for the cluster.
            .args(["--kube", "validate", "-f", copy_path, "-o", "yaml"])
            .output()
            .expect("trainctl validate runs");
        assert!(converted.status.success(), "{source}: {converted:?}");
        run_with_input(
            Command::new("kubectl").args(["apply", "-f", "-", "-n", namespace]),
            &converted.stdout,
        )
    } else {
        Command::new("kubectl")
            .args(["apply", "-f", copy_path, "-n", namespace])
            .output()
            .expect("kubectl runs")
    };
    std::fs::remove_file(&copy).expect("the copy removed");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{source}: kubectl apply: {}\n{stdout}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let mut lines: Vec<String> = stdout.lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

/// Every seed and upstream example applied with `kubectl apply -f FILE -n NS` (see [`apply`]),
/// in a namespace of its own: kubectl creates each object of the file, and each job gets the
/// Created condition and each pod and service the engine renders, with the env and labels it
/// renders, and the HorizontalPodAutoscaler it renders (the elastic imagenet example). Pods that cannot run here (claims the cluster lacks, GPUs) stay Pending: they exist
/// all the same. The seed that is a plain batch/v1 Job is applied too: not ours to run.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn every_seed_and_upstream_example_gets_the_pods_the_engine_renders() {
    for path in fixtures() {
        let text = std::fs::read_to_string(&path).expect("a fixture");
        let source = path.display().to_string();
        let manifests = trainctl_api::manifest::load_str(&source, &text);
        // batch-job-tensorflow.yaml holds no job of ours (the loader says so): the others, none
        // but valid jobs.
        assert!(
            manifests.jobs.is_empty() || !manifests.has_errors(),
            "{source}: {:#?}",
            manifests.diagnostics
        );
        in_namespace("fixture", |client, namespace| async move {
            let applied = apply(&path, &text, &manifests, &namespace);
            if manifests.jobs.is_empty() {
                // batch-job-tensorflow.yaml: a plain batch/v1 Job.
                assert_eq!(applied, ["job.batch/tensorflow-training-job created"]);
                return;
            }
            assert_eq!(applied, created_lines(&manifests), "{source}");
            for loaded in manifests.jobs {
                let kind = loaded.job.kind();
                let name = loaded.job.name().to_owned();
                let stored = await_job(
                    &client,
                    &namespace,
                    kind,
                    &name,
                    "to be created",
                    is_created,
                )
                .await;
                let read = job::read(kind, &stored).expect("the job reads");
                let want = build_objects(&read, &BuildOptions::default());
                let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
                for want in want.pods {
                    let got = await_exists(pods.clone(), &want.name_any()).await;
                    assert_eq!(
                        main_env(&got),
                        main_env(&want),
                        "{source}: {}",
                        want.name_any()
                    );
                    assert_eq!(got.metadata.labels, want.metadata.labels, "{source}");
                }
                let services: Api<Service> = Api::namespaced(client.clone(), &namespace);
                for want in want.services {
                    let got = await_exists(services.clone(), &want.name_any()).await;
                    let ports = |service: &Service| {
                        let spec = service.spec.as_ref().expect("a spec");
                        let ports = spec.ports.iter().flatten();
                        let ports: Vec<_> = ports.map(|p| (p.name.clone(), p.port)).collect();
                        (spec.cluster_ip.clone(), spec.selector.clone(), ports)
                    };
                    assert_eq!(ports(&got), ports(&want), "{source}: {}", want.name_any());
                    assert_eq!(got.metadata.labels, want.metadata.labels, "{source}");
                }
                if let Some(want) = want.hpa {
                    let hpas: Api<HorizontalPodAutoscaler> =
                        Api::namespaced(client.clone(), &namespace);
                    let got = await_exists(hpas, &want.name_any()).await;
                    assert_eq!(json_of(&got.spec), json_of(&want.spec), "{source}");
                    assert_eq!(
                        got.metadata.owner_references,
                        want.metadata.owner_references
                    );
                }
            }
        })
        .await;
    }
}

/// The `allreduce-tfjob` seed declares its own `TF_CONFIG`: applied with kubectl as its users
/// do, its chief is created (the create of the pod used to be refused for the duplicate) and
/// runs with the operator's `TF_CONFIG` alone, as upstream's kubelet would have used it.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn the_allreduce_seed_applied_with_kubectl_runs_with_one_tf_config() {
    // The seed's own namespace, which only this test uses.
    let namespace = "kubeflow-user-example-com";
    let client = trainctl_e2e::client().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let object: Namespace =
        serde_json::from_value(json!({"metadata": {"name": namespace}})).expect("a namespace");
    match namespaces.create(&PostParams::default(), &object).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.is_already_exists() => {}
        Err(error) => panic!("namespace {namespace}: {error}"),
    }
    let path = repository().join("testdata/fixtures/seeds/allreduce-tfjob.yaml");
    let applied = kubectl(&["apply", "-f", path.to_str().expect("a UTF-8 path")]);
    assert_eq!(applied.trim(), "tfjob.kubeflow.org/allreduce-tfjob created");
    let job = await_last_condition(
        &client,
        namespace,
        JobKind::TFJob,
        "allreduce-tfjob",
        "Running",
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let chief = await_exists(pods, "allreduce-tfjob-chief-0").await;
    let env = chief.spec.as_ref().expect("a spec").containers[0]
        .env
        .clone()
        .unwrap_or_default();
    let tf_configs: Vec<_> = env.iter().filter(|var| var.name == "TF_CONFIG").collect();
    assert_eq!(tf_configs.len(), 1, "{env:?}");
    assert!(
        tf_configs[0].value_from.is_none(),
        "the operator's TF_CONFIG, not the fieldRef"
    );
    let read = job::read(JobKind::TFJob, &job).expect("the job reads");
    let want = build_objects(&read, &BuildOptions::default());
    assert_eq!(main_env(&chief), main_env(&want.pods[0]));
    namespaces
        .delete(namespace, &DeleteParams::background())
        .await
        .expect("namespace deleted");
}

/// Upstream's `ExitedWithCode` ("Pod: <ns>.<pod> exited with code <n>") once for every replica
/// that exits, the ones that succeed included.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn every_replica_that_exits_gets_one_exited_with_code_event() {
    in_namespace("exits", |client, namespace| async move {
        let manifest = format!(
            "\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {{name: exits}}
spec:
  tfReplicaSpecs:
    Chief:
      restartPolicy: Never
      template:
        metadata: {{annotations: {{{EXIT_CODE_ANNOTATION}: \"0\", {RUN_SECONDS_ANNOTATION}: \"3\"}}}}
        spec: {{containers: [{{name: tensorflow, image: {IMAGE}}}]}}
    Worker:
      replicas: 2
      restartPolicy: Never
      template:
        metadata: {{annotations: {{{EXIT_CODE_ANNOTATION}: \"0\"}}}}
        spec: {{containers: [{{name: tensorflow, image: {IMAGE}}}]}}
"
        );
        create_job(&client, &namespace, &manifest).await;
        await_last_condition(&client, &namespace, JobKind::TFJob, "exits", "Succeeded").await;
        let exited = |events: &[(String, String, String)]| {
            events
                .iter()
                .filter(|(_, reason, _)| reason == "ExitedWithCode")
                .map(|(type_, _, note)| format!("{type_} {note}"))
                .collect::<Vec<_>>()
        };
        await_events(&client, &namespace, "exits", "three exits", |events| {
            exited(events).len() >= 3
        })
        .await;
        // Reconciles go on after the job succeeded (the pods' last updates): a moment for any
        // repeat to show.
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        let mut exits = exited(&job_events(&client, &namespace, "exits").await);
        exits.sort();
        let expected: Vec<String> = ["exits-chief-0", "exits-worker-0", "exits-worker-1"]
            .iter()
            .map(|pod| format!("Normal Pod: {namespace}.{pod} exited with code 0"))
            .collect();
        assert_eq!(exits, expected);
    })
    .await;
}

/// A pod the scheduler cannot place says why, in the scheduler's words, and a pending pod is
/// in no count of the replica statuses (upstream counts running pods only).
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn an_unschedulable_pod_says_why_and_is_not_active() {
    in_namespace("pending", |client, namespace| async move {
        let manifest = format!(
            "\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {{name: tfevent}}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      template:
        spec:
          containers: [{{name: tensorflow, image: {IMAGE}, volumeMounts: [{{name: logs, mountPath: /logs}}]}}]
          volumes: [{{name: logs, persistentVolumeClaim: {{claimName: tfevent-volume}}}}]
"
        );
        create_job(&client, &namespace, &manifest).await;
        let why = "persistentvolumeclaim \"tfevent-volume\" not found";
        let job = await_job(&client, &namespace, JobKind::TFJob, "tfevent", "to say why", |job: Option<&DynamicObject>| {
            job.and_then(|job| job.data["status"]["conditions"][0]["message"].as_str().map(str::to_owned))
                .is_some_and(|message| message.contains(why))
        })
        .await;
        let message = job.data["status"]["conditions"][0]["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("TFJob tfevent is created. Pending: tfevent-worker-0 is pending (Unschedulable: "),
            "{message}"
        );
        assert_eq!(job.data["status"]["replicaStatuses"]["Worker"].get("active"), None, "{job:?}");
        let pending_why = |events: &[(String, String, String)]| {
            events.iter().any(|(type_, reason, note)| {
                type_ == "Normal" && reason == "TFJobPending" && note.contains(why)
            })
        };
        await_events(&client, &namespace, "tfevent", "a Pending event with the why", pending_why)
            .await;
    })
    .await;
}

/// The MPIJob launcher carries no replica-index label (upstream's has none); its workers do.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn the_mpi_launcher_has_no_replica_index_label() {
    in_namespace("mpi-labels", |client, namespace| async move {
        let manifest = format!(
            "\
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {{name: pi}}
spec:
  mpiReplicaSpecs:
    Launcher:
      template: {{spec: {{containers: [{{name: launcher, image: {IMAGE}}}]}}}}
    Worker:
      replicas: 2
      template: {{spec: {{containers: [{{name: worker, image: {IMAGE}}}]}}}}
"
        );
        create_job(&client, &namespace, &manifest).await;
        await_last_condition(&client, &namespace, JobKind::MPIJob, "pi", "Running").await;
        let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
        let index = |pod: &Pod| {
            pod.labels()
                .get("training.kubeflow.org/replica-index")
                .cloned()
        };
        let launcher = await_exists(pods.clone(), "pi-launcher").await;
        assert_eq!(index(&launcher), None);
        let worker = await_exists(pods, "pi-worker-1").await;
        assert_eq!(index(&worker).as_deref(), Some("1"));
    })
    .await;
}

/// `kubectl get tfjobs` shows the CRD's columns: the newest condition as STATE, and AGE.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn kubectl_get_tfjobs_shows_state_and_age() {
    in_namespace("columns", |client, namespace| async move {
        let manifest = format!(
            "\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {{name: columns}}
spec:
  tfReplicaSpecs:
    Worker: {{template: {{spec: {{containers: [{{name: tensorflow, image: {IMAGE}}}]}}}}}}
"
        );
        create_job(&client, &namespace, &manifest).await;
        await_last_condition(&client, &namespace, JobKind::TFJob, "columns", "Running").await;
        let table = kubectl(&["get", "tfjobs", "-n", &namespace]);
        let lines: Vec<Vec<&str>> = table
            .lines()
            .map(|line| line.split_whitespace().collect())
            .collect();
        assert_eq!(lines[0], ["NAME", "STATE", "AGE"], "{table}");
        assert_eq!(lines[1][..2], ["columns", "Running"], "{table}");
        assert_eq!(lines.len(), 2, "{table}");
    })
    .await;
}
