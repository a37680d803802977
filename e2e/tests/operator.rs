//! The operator installed as users install it, on a real control plane: CRDs, leader election,
//! pods and services as the engine renders them, failure and TTL, validation, the MPI
//! launcher's RBAC, suspend and resume. Run by `scripts/e2e`.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::json;
use trainctl_api::JobKind;
use trainctl_e2e::{
    EXIT_CODE_ANNOTATION, IMAGE, OPERATOR_NAMESPACE, await_exists, await_last_condition,
    await_reasons, client, create_job, in_namespace, jobs, json_of, last_condition, repository,
    within,
};
use trainctl_engine::objects::{BuildOptions, JobObjects, build_objects};
use trainctl_operator::job;

/// The pod name `scripts/e2e` runs the operator under (`POD_NAME`), the start of its Lease
/// holder identity.
const OPERATOR_POD_NAME: &str = "trainctl-operator-e2e";

/// What the engine renders for the job as the cluster holds it (its uid in the owner
/// references), with the options `deploy/manifests` runs the operator with.
fn rendered(kind: JobKind, object: &DynamicObject) -> JobObjects {
    let job = job::read(kind, object).expect("the job reads");
    build_objects(&job, &BuildOptions::default())
}

/// A TFJob of two workers that exit with `code` (kwok ends them, as the annotation says).
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
        metadata:
          annotations: {{{EXIT_CODE_ANNOTATION}: \"{code}\"}}
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
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn the_crds_are_established_with_the_generated_schemas() {
    let client = client().await;
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
        let path = repository().join(format!("deploy/crds/kubeflow.org_{}.yaml", kind.plural()));
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
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn the_operator_holds_the_leader_lease() {
    let client = client().await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let lease = await_exists(leases, "trainctl-operator").await;
    let holder = lease
        .spec
        .and_then(|spec| spec.holder_identity)
        .unwrap_or_default();
    assert!(
        holder.starts_with(OPERATOR_POD_NAME),
        "the Lease is held by {holder:?}, not by the operator scripts/e2e runs"
    );
}

#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
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
            // The API server fills in the ports' default protocol (TCP).
            let ports = |container: &k8s_openapi::api::core::v1::Container| {
                container.ports.iter().flatten().map(|port| (port.name.clone(), port.container_port)).collect::<Vec<_>>()
            };
            assert_eq!(ports(&got.containers[0]), ports(&want.containers[0]));
        }
        // What the replica printed is the TF_CONFIG the engine renders.
        let tf_config = |pod: &Pod| {
            pod.spec.as_ref().and_then(|spec| spec.containers[0].env.as_ref()).and_then(|env| {
                env.iter().find(|var| var.name == "TF_CONFIG").and_then(|var| var.value.clone())
            })
        };
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
        let reasons = ["SuccessfulCreatePod", "SuccessfulCreateService", "TFJobSucceeded"];
        await_reasons(&client, &namespace, "echo", &reasons).await;
    })
    .await;
}

#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
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
        let reasons = ["ExitedWithCode", "TFJobFailed", "SuccessfulDeleteJob"];
        await_reasons(&client, &namespace, "broken", &reasons).await;
    })
    .await;
}

#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
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
#[ignore = "needs the e2e control plane: scripts/e2e"]
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
#[ignore = "needs the e2e control plane: scripts/e2e"]
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
        await_reasons(&client, &namespace, "sleeper", &["TFJobSuspended", "TFJobResumed"]).await;
    })
    .await;
}
