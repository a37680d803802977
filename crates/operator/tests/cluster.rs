//! End to end on a real cluster, where `trainctl operator` runs as `deploy/` installs it:
//! `scripts/cluster-test` makes a kind cluster, loads the image, applies `deploy/` and runs
//! these tests. They are ignored everywhere else (no cluster can run where CI runs) and reach
//! the cluster through the kubeconfig, as kubectl does.
//!
//! Each test works in a namespace of its own, deleted at the end whatever happened. Nothing is
//! polled: each wait watches the object (kube-runtime's `await_condition`) under a timeout long
//! enough for a first image pull.

use std::collections::BTreeSet;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures_util::FutureExt as _;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Service, ServiceAccount};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, LogParams, Patch, PatchParams, PostParams,
};
use kube::runtime::wait::{Condition, await_condition, conditions};
use kube::{Client, ResourceExt};
use serde::Serialize;
use serde_json::{Value, json};
use trainctl_api::JobKind;
use trainctl_engine::objects::{BuildOptions, JobObjects, build_objects};
use trainctl_operator::job;

/// Long enough for a kind node's first pull of busybox.
const TIMEOUT: Duration = Duration::from_secs(180);

/// Where `deploy/manifests` installs the operator.
const OPERATOR_NAMESPACE: &str = "kubeflow";

/// A small image with a shell, for replicas that only print and exit.
const IMAGE: &str = "busybox:1.36";

/// Waits for `what` under [`TIMEOUT`]. The future is boxed: kube-runtime's watches are large.
fn within<T>(what: &str, future: impl Future<Output = T>) -> impl Future<Output = T> {
    let future = Box::pin(future);
    let what = what.to_owned();
    async move {
        tokio::time::timeout(TIMEOUT, future)
            .await
            .unwrap_or_else(|_| panic!("timed out after {TIMEOUT:?} waiting for {what}"))
    }
}

/// Runs `test` in a fresh namespace `trainctl-<name>-<millis>`, deleted afterwards even when
/// the test panics (the panic is then resumed).
async fn in_namespace<F, T>(name: &str, test: F)
where
    F: FnOnce(Client, String) -> T,
    T: Future<Output = ()>,
{
    let client = Client::try_default()
        .await
        .expect("a kubeconfig for the test cluster");
    let namespace = format!(
        "trainctl-{name}-{}",
        jiff::Timestamp::now().as_millisecond()
    );
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let object: Namespace =
        serde_json::from_value(json!({"metadata": {"name": namespace}})).expect("a namespace");
    namespaces
        .create(&PostParams::default(), &object)
        .await
        .expect("namespace created");
    let outcome = AssertUnwindSafe(Box::pin(test(client, namespace.clone())))
        .catch_unwind()
        .await;
    namespaces
        .delete(&namespace, &DeleteParams::background())
        .await
        .expect("namespace deleted");
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// The API of `kind`'s jobs in `namespace`.
fn jobs(client: &Client, namespace: &str, kind: JobKind) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, &job::api_resource(kind))
}

/// Creates the job of `manifest` (YAML) in `namespace`.
async fn create_job(client: &Client, namespace: &str, manifest: &str) -> DynamicObject {
    let object: DynamicObject = serde_saphyr::from_str(manifest).expect("a job manifest");
    let kind: JobKind = object
        .types
        .as_ref()
        .and_then(|types| types.kind.parse().ok())
        .expect("a job kind");
    jobs(client, namespace, kind)
        .create(&PostParams::default(), &object)
        .await
        .expect("the API server accepts the job")
}

/// The job's last condition, as `(type, status, reason, message)`.
fn last_condition(job: &DynamicObject) -> Option<(String, String, String, String)> {
    let condition = job.data["status"]["conditions"].as_array()?.last()?;
    let text = |key: &str| condition[key].as_str().unwrap_or_default().to_owned();
    Some((
        text("type"),
        text("status"),
        text("reason"),
        text("message"),
    ))
}

/// Holds once the job's last condition is `type_` and true.
fn last_condition_is(type_: &'static str) -> impl Condition<DynamicObject> {
    move |job: Option<&DynamicObject>| {
        job.and_then(last_condition)
            .is_some_and(|(last, status, _, _)| last == type_ && status == "True")
    }
}

/// Waits until the last condition of the job `name` of `kind` is `type_` and true; the job
/// then.
async fn await_last_condition(
    client: &Client,
    namespace: &str,
    kind: JobKind,
    name: &str,
    type_: &'static str,
) -> DynamicObject {
    within(
        &format!("{kind} {name} to be {type_}"),
        await_condition(
            jobs(client, namespace, kind),
            name,
            last_condition_is(type_),
        ),
    )
    .await
    .expect("the watch works")
    .expect("the job exists")
}

/// Waits until the object `name` exists; the object then.
async fn await_exists<K>(api: Api<K>, name: &str) -> K
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    within(
        &format!("{name} to exist"),
        await_condition(api, name, |object: Option<&K>| object.is_some()),
    )
    .await
    .expect("the watch works")
    .expect("it exists")
}

/// What the engine renders for the job as the cluster holds it (its uid in the owner
/// references), with the options `deploy/manifests` runs the operator with.
fn rendered(kind: JobKind, object: &DynamicObject) -> JobObjects {
    let job = job::read(kind, object).expect("the job reads");
    build_objects(&job, &BuildOptions::default())
}

fn json_of<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("serializes")
}

/// The reasons of the events about the job `name`.
async fn event_reasons(client: &Client, namespace: &str, name: &str) -> BTreeSet<String> {
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    events
        .list(&ListParams::default())
        .await
        .expect("events listed")
        .items
        .into_iter()
        .filter(|event| event.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .filter_map(|event| event.reason)
        .collect()
}

/// A TFJob of two workers that print their TF_CONFIG and exit with `code`.
fn echo_tfjob(name: &str, code: u8, ttl: Option<u32>) -> String {
    let ttl = ttl.map(|seconds| format!("  runPolicy: {{ttlSecondsAfterFinished: {seconds}}}\n"));
    format!(
        "\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {{name: {name}}}
spec:
{ttl}  tfReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: {IMAGE}
              command: [sh, -c, 'echo \"$TF_CONFIG\"; exit {code}']
",
        ttl = ttl.unwrap_or_default()
    )
}

#[tokio::test]
#[ignore = "needs a cluster running the operator: scripts/cluster-test"]
async fn the_crds_are_established_with_the_generated_schemas() {
    let client = Client::try_default()
        .await
        .expect("a kubeconfig for the test cluster");
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    for kind in JobKind::ALL {
        let name = format!("{}.kubeflow.org", kind.plural());
        let crd = within(
            &format!("{name} to be established"),
            await_condition(crds.clone(), &name, conditions::is_crd_established()),
        )
        .await
        .expect("the watch works")
        .expect("the CRD is installed");
        let path = format!(
            "{}/../../deploy/crds/kubeflow.org_{}.yaml",
            env!("CARGO_MANIFEST_DIR"),
            kind.plural()
        );
        let committed: CustomResourceDefinition =
            serde_saphyr::from_str(&std::fs::read_to_string(&path).expect("a committed CRD"))
                .expect("a CRD");
        assert_eq!(crd.spec.versions.len(), 1, "{name}");
        assert_eq!(
            json_of(&crd.spec.versions[0].schema),
            json_of(&committed.spec.versions[0].schema),
            "{name}: the installed schema is not the one deploy/crds holds"
        );
    }
}

#[tokio::test]
#[ignore = "needs a cluster running the operator: scripts/cluster-test"]
async fn the_operator_holds_the_leader_lease() {
    let client = Client::try_default()
        .await
        .expect("a kubeconfig for the test cluster");
    let leases: Api<Lease> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let lease = await_exists(leases, "trainctl-operator").await;
    let holder = lease
        .spec
        .and_then(|spec| spec.holder_identity)
        .unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(client, OPERATOR_NAMESPACE);
    let operators = pods
        .list(&ListParams::default().labels("app.kubernetes.io/name=trainctl-operator"))
        .await
        .expect("pods listed");
    assert!(
        operators
            .items
            .iter()
            .any(|pod| holder.starts_with(&pod.name_any())),
        "the Lease is held by {holder:?}, not by an operator pod"
    );
}

#[tokio::test]
#[ignore = "needs a cluster running the operator: scripts/cluster-test"]
async fn a_tfjob_runs_to_success_with_the_pods_and_services_the_engine_renders() {
    in_namespace("tfjob", |client, namespace| async move {
        create_job(&client, &namespace, &echo_tfjob("echo", 0, None)).await;
        let job = await_last_condition(&client, &namespace, JobKind::TFJob, "echo", "Succeeded").await;
        assert_eq!(
            last_condition(&job),
            Some((
                "Succeeded".to_owned(),
                "True".to_owned(),
                "TFJobSucceeded".to_owned(),
                format!("TFJob {namespace}/echo successfully completed."),
            ))
        );
        assert_eq!(job.data["status"]["replicaStatuses"]["Worker"]["succeeded"], 2);
        let expected = rendered(JobKind::TFJob, &job);
        let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
        let names: Vec<String> = expected.pods.iter().map(ResourceExt::name_any).collect();
        assert_eq!(names, ["echo-worker-0", "echo-worker-1"]);
        for want in &expected.pods {
            let got = pods.get(&want.name_any()).await.expect("the pod exists");
            assert_eq!(got.metadata.labels, want.metadata.labels, "{}", want.name_any());
            assert_eq!(got.metadata.owner_references, want.metadata.owner_references);
            let (got, want) = (got.spec.expect("a spec"), want.spec.clone().expect("a spec"));
            assert_eq!(got.restart_policy, want.restart_policy);
            assert_eq!(json_of(&got.containers[0].env), json_of(&want.containers[0].env));
            assert_eq!(json_of(&got.containers[0].ports), json_of(&want.containers[0].ports));
        }
        // What the replica printed is the TF_CONFIG the engine renders.
        let tf_config = |pod: &Pod| {
            pod.spec.as_ref().and_then(|spec| spec.containers[0].env.as_ref()).and_then(|env| {
                env.iter().find(|var| var.name == "TF_CONFIG").and_then(|var| var.value.clone())
            })
        };
        let printed = pods.logs("echo-worker-1", &LogParams::default()).await.expect("logs");
        assert_eq!(Some(printed.trim_end().to_owned()), tf_config(&expected.pods[1]));
        assert_eq!(
            tf_config(&expected.pods[1]).as_deref(),
            Some(
                format!(
                    r#"{{"cluster":{{"worker":["echo-worker-0.{namespace}.svc:2222","echo-worker-1.{namespace}.svc:2222"]}},"task":{{"type":"worker","index":1}},"environment":"cloud"}}"#
                )
                .as_str()
            )
        );
        let services: Api<Service> = Api::namespaced(client.clone(), &namespace);
        for want in &expected.services {
            let got = services.get(&want.name_any()).await.expect("the service exists");
            assert_eq!(got.metadata.labels, want.metadata.labels);
            assert_eq!(got.metadata.owner_references, want.metadata.owner_references);
            let (got, want) = (got.spec.expect("a spec"), want.spec.clone().expect("a spec"));
            assert_eq!(got.cluster_ip.as_deref(), Some("None"));
            assert_eq!(got.selector, want.selector);
            let ports = |spec: &k8s_openapi::api::core::v1::ServiceSpec| {
                spec.ports.iter().flatten().map(|port| (port.name.clone(), port.port)).collect::<Vec<_>>()
            };
            assert_eq!(ports(&got), ports(&want));
        }
        let reasons = event_reasons(&client, &namespace, "echo").await;
        for reason in ["SuccessfulCreatePod", "SuccessfulCreateService", "TFJobSucceeded"] {
            assert!(reasons.contains(reason), "no {reason} event among {reasons:?}");
        }
    })
    .await;
}

#[tokio::test]
#[ignore = "needs a cluster running the operator: scripts/cluster-test"]
async fn a_failed_worker_fails_the_job_and_its_ttl_deletes_it() {
    in_namespace("ttl", |client, namespace| async move {
        create_job(&client, &namespace, &echo_tfjob("broken", 3, Some(5))).await;
        let job =
            await_last_condition(&client, &namespace, JobKind::TFJob, "broken", "Failed").await;
        let (_, _, reason, message) = last_condition(&job).expect("a condition");
        assert_eq!(reason, "TFJobFailed");
        assert!(
            message.starts_with(&format!("TFJob {namespace}/broken has failed because ")),
            "{message}"
        );
        let uid = job.uid().expect("a uid");
        within(
            "the TTL to delete the job",
            await_condition(
                jobs(&client, &namespace, JobKind::TFJob),
                "broken",
                conditions::is_deleted(&uid),
            ),
        )
        .await
        .expect("the watch works");
        let reasons = event_reasons(&client, &namespace, "broken").await;
        for reason in ["ExitedWithCode", "TFJobFailed", "SuccessfulDeleteJob"] {
            assert!(
                reasons.contains(reason),
                "no {reason} event among {reasons:?}"
            );
        }
    })
    .await;
}

#[tokio::test]
#[ignore = "needs a cluster running the operator: scripts/cluster-test"]
async fn an_invalid_job_is_failed_with_the_reason_and_gets_no_pods() {
    in_namespace("invalid", |client, namespace| async move {
        let manifest = format!(
            "\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {{name: twoheads}}
spec:
  tfReplicaSpecs:
    Chief: {{template: {{spec: {{containers: [{{name: tensorflow, image: {IMAGE}}}]}}}}}}
    Master: {{template: {{spec: {{containers: [{{name: tensorflow, image: {IMAGE}}}]}}}}}}
"
        );
        create_job(&client, &namespace, &manifest).await;
        let job =
            await_last_condition(&client, &namespace, JobKind::TFJob, "twoheads", "Failed").await;
        let read = job::read(JobKind::TFJob, &job).expect("the job reads");
        let why = trainctl_operator::validate::errors(&read).expect("the job is invalid");
        let (_, _, reason, message) = last_condition(&job).expect("a condition");
        assert_eq!(reason, "TFJobFailed");
        assert_eq!(
            message,
            trainctl_operator::validate::message(JobKind::TFJob, &namespace, "twoheads", &why)
        );
        let pods: Api<Pod> = Api::namespaced(client, &namespace);
        assert!(
            pods.list(&ListParams::default())
                .await
                .expect("pods listed")
                .items
                .is_empty()
        );
    })
    .await;
}

#[tokio::test]
#[ignore = "needs a cluster running the operator: scripts/cluster-test"]
async fn the_operator_may_create_an_mpi_launchers_exec_role() {
    // Kubernetes refuses a Role granting more than its creator holds: this is the proof that
    // deploy/'s ClusterRole holds pods/exec, which the launcher's Role grants.
    in_namespace("mpi", |client, namespace| async move {
        let manifest = format!(
            "\
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {{name: pi}}
spec:
  mpiReplicaSpecs:
    Launcher:
      template: {{spec: {{containers: [{{name: launcher, image: {IMAGE}, command: [cat, /etc/mpi/hostfile]}}]}}}}
    Worker:
      replicas: 2
      template: {{spec: {{containers: [{{name: worker, image: {IMAGE}}}]}}}}
"
        );
        let job = create_job(&client, &namespace, &manifest).await;
        let expected = rendered(JobKind::MPIJob, &job);
        let role = await_exists(Api::<Role>::namespaced(client.clone(), &namespace), "pi-launcher").await;
        assert_eq!(json_of(&role.rules), json_of(&expected.roles[0].rules));
        let binding =
            await_exists(Api::<RoleBinding>::namespaced(client.clone(), &namespace), "pi-launcher").await;
        assert_eq!(json_of(&binding.subjects), json_of(&expected.role_bindings[0].subjects));
        await_exists(Api::<ServiceAccount>::namespaced(client.clone(), &namespace), "pi-launcher").await;
        let config = await_exists(Api::<ConfigMap>::namespaced(client.clone(), &namespace), "pi-config").await;
        assert_eq!(config.data, expected.config_maps[0].data);
        for pod in ["pi-launcher", "pi-worker-0", "pi-worker-1"] {
            await_exists(Api::<Pod>::namespaced(client.clone(), &namespace), pod).await;
        }
    })
    .await;
}

#[tokio::test]
#[ignore = "needs a cluster running the operator: scripts/cluster-test"]
async fn suspending_a_job_deletes_its_pods_and_resuming_brings_them_back() {
    in_namespace("suspend", |client, namespace| async move {
        let manifest = format!(
            "\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {{name: sleeper}}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template: {{spec: {{containers: [{{name: tensorflow, image: {IMAGE}, command: [sleep, '3600']}}]}}}}
"
        );
        create_job(&client, &namespace, &manifest).await;
        let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
        let first = await_exists(pods.clone(), "sleeper-worker-0").await;
        let api = jobs(&client, &namespace, JobKind::TFJob);
        let suspend = |on: bool| json!({"spec": {"runPolicy": {"suspend": on}}});
        api.patch("sleeper", &PatchParams::default(), &Patch::Merge(&suspend(true)))
            .await
            .expect("suspended");
        await_last_condition(&client, &namespace, JobKind::TFJob, "sleeper", "Suspended").await;
        within(
            "the suspended job's pod to go",
            await_condition(pods.clone(), "sleeper-worker-0", conditions::is_deleted(&first.uid().expect("a uid"))),
        )
        .await
        .expect("the watch works");
        api.patch("sleeper", &PatchParams::default(), &Patch::Merge(&suspend(false)))
            .await
            .expect("resumed");
        let again = await_exists(pods, "sleeper-worker-0").await;
        assert_ne!(again.uid(), first.uid(), "a new pod");
        let reasons = event_reasons(&client, &namespace, "sleeper").await;
        for reason in ["TFJobSuspended", "TFJobResumed"] {
            assert!(reasons.contains(reason), "no {reason} event among {reasons:?}");
        }
    })
    .await;
}
