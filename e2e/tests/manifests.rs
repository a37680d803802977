//! Our users' manifests and upstream's examples on a real API server, and what it showed that
//! the mock did not: a template's own `TF_CONFIG`, `ExitedWithCode` events, the scheduler's
//! why for a pending pod, pending pods in no count, the MPI launcher's labels, and
//! `kubectl get` columns. Run by `scripts/e2e`.

use std::path::PathBuf;

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use serde_json::json;
use trainctl_api::JobKind;
use trainctl_e2e::{
    EXIT_CODE_ANNOTATION, IMAGE, RUN_SECONDS_ANNOTATION, await_events, await_exists, await_job,
    await_last_condition, create_job, in_namespace, job_events, jobs, json_of, kubectl, repository,
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

/// Every seed and upstream example, created as `trainctl --kube submit` creates it (v1alpha1
/// converted to v1) in a namespace of its own (two examples share a name), gets each pod the
/// engine renders, with the env and labels it renders, and the Created condition. Pods that
/// cannot run here (claims and ConfigMaps the cluster lacks) stay Pending: they exist all the
/// same.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn every_seed_and_upstream_example_gets_the_pods_the_engine_renders() {
    for path in fixtures() {
        let text = std::fs::read_to_string(&path).expect("a fixture");
        let source = path.display().to_string();
        let manifests = trainctl_api::manifest::load_str(&source, &text);
        if manifests.jobs.is_empty() {
            // batch-job-tensorflow.yaml: a plain batch/v1 Job, not ours to run.
            continue;
        }
        assert!(
            !manifests.has_errors(),
            "{source}: {:#?}",
            manifests.diagnostics
        );
        in_namespace("fixture", |client, namespace| async move {
            for loaded in manifests.jobs {
                let mut job = loaded.job;
                job.metadata_mut().namespace = Some(namespace.clone());
                let object: DynamicObject = serde_json::from_value(json_of(&job)).expect("a job");
                let kind = job.kind();
                let stored = jobs(&client, &namespace, kind)
                    .create(&PostParams::default(), &object)
                    .await
                    .unwrap_or_else(|error| panic!("{source}: the API server refuses it: {error}"));
                let name = stored.name_any();
                await_job(
                    &client,
                    &namespace,
                    kind,
                    &name,
                    "to be created",
                    is_created,
                )
                .await;
                let read = job::read(kind, &stored).expect("the job reads");
                let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
                for want in build_objects(&read, &BuildOptions::default()).pods {
                    let got = await_exists(pods.clone(), &want.name_any()).await;
                    assert_eq!(
                        main_env(&got),
                        main_env(&want),
                        "{source}: {}",
                        want.name_any()
                    );
                    assert_eq!(got.metadata.labels, want.metadata.labels, "{source}");
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
