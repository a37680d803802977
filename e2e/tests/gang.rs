//! Gang scheduling on the real control plane (docs/semantics.md §3): operators started with
//! `--gang-scheduler-name` give each job a PodGroup named and owned as upstream's, with the
//! scheduling policy's fields; under volcano they create no pod until the PodGroup is admitted;
//! the pods carry the scheduler's name and the group's annotation or label; the PodGroup goes
//! when the job finishes or is suspended (the operator deletes it) and when the job is deleted
//! (the garbage collector does, through the owner reference).
//!
//! No gang scheduler runs here: `scripts/e2e` installs PodGroup CRDs of our own
//! (`testdata/crds`) and the PodGroup rule of docs/deploy.md, and the tests play the scheduler's
//! part: they write the PodGroup's `status.phase` and bind the pods to the node. Each test
//! starts its own operator with the flag, so `scripts/e2e` runs them (`gang_*`) alone, after
//! the other tests, with its own operator stopped.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use kube::runtime::wait::await_condition;
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use trainctl_api::JobKind;
use trainctl_e2e::operator::{History, Operator, await_leader, within_for};
use trainctl_e2e::{
    EXIT_CODE_ANNOTATION, IMAGE, RUN_SECONDS_ANNOTATION, await_exists, await_job,
    await_last_condition, create_job, in_namespace, jobs, json_of, set_suspend,
};
use trainctl_engine::objects::{BuildOptions, build_objects};
use trainctl_operator::job;

/// How long an operator may take to hold the Lease (a predecessor killed by a failed test
/// holds it for its 15 s duration).
const LEADER: Duration = Duration::from_secs(45);

/// How long the operator may take to act on a change.
const ACT: Duration = Duration::from_secs(60);

/// The kwok node (scripts/cluster), where the tests bind the pods as the scheduler would.
const NODE: &str = "kwok-node-0";

/// The scheduler-plugins scheduler's name in these tests (any name but `volcano` selects
/// scheduler-plugins).
const PLUGINS: &str = "scheduler-plugins-scheduler";

/// The PodGroups of volcano (`true`) or of scheduler-plugins in `namespace`, as their CRDs
/// serve them: written here, not taken from the operator, so a PodGroup of another group or
/// version would not be found.
fn pod_groups(client: &Client, namespace: &str, volcano: bool) -> Api<DynamicObject> {
    let (group, version) = if volcano {
        ("scheduling.volcano.sh", "v1beta1")
    } else {
        ("scheduling.x-k8s.io", "v1alpha1")
    };
    let gvk = GroupVersionKind::gvk(group, version, "PodGroup");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "podgroups");
    Api::namespaced_with(client.clone(), namespace, &resource)
}

/// The objects the engine renders for the stored TFJob under the gang scheduler `scheduler`.
fn rendered(stored: &DynamicObject, scheduler: &str) -> trainctl_engine::objects::JobObjects {
    let read = job::read(JobKind::TFJob, stored).expect("the job reads");
    let options = BuildOptions {
        gang_scheduler: Some(scheduler.to_owned()),
        ..BuildOptions::default()
    };
    build_objects(&read, &options)
}

/// The controller owner reference every object of the job carries (docs/semantics.md §3).
fn owned_by(job: &DynamicObject) -> Value {
    json!([{
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "name": job.name_any(),
        "uid": job.uid().expect("a uid"),
        "controller": true,
        "blockOwnerDeletion": true,
    }])
}

/// Asserts the PodGroup's metadata and spec: the job's name, annotations and owner, and `spec`;
/// and that it is what the engine renders.
fn assert_pod_group(group: &DynamicObject, job: &DynamicObject, scheduler: &str, spec: &Value) {
    assert_eq!(group.name_any(), job.name_any());
    assert_eq!(
        json_of(&group.metadata.annotations),
        json!({"team": "vision"}),
        "the job's annotations"
    );
    assert_eq!(json_of(&group.metadata.owner_references), owned_by(job));
    assert_eq!(&group.data["spec"], spec, "{group:?}");
    let want = json_of(&rendered(job, scheduler).pod_group.expect("a PodGroup"));
    assert_eq!(group.data["spec"], want["spec"]);
    assert_eq!(
        json_of(&group.metadata.owner_references),
        want["metadata"]["ownerReferences"]
    );
}

/// The job's pods, by name, once there are `count`.
async fn await_pods(client: &Client, namespace: &str, count: usize) -> BTreeMap<String, Pod> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    within_for(ACT, &format!("{count} pods"), async {
        loop {
            let pods = api.list(&ListParams::default()).await.expect("pods listed");
            if pods.items.len() >= count {
                return pods
                    .items
                    .into_iter()
                    .map(|pod| (pod.name_any(), pod))
                    .collect();
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
}

/// Asserts that each pod is the one the engine renders under `scheduler`: its scheduler name,
/// labels and annotations (the group's among them), and that no scheduler has placed it.
fn assert_gang_pods(pods: &BTreeMap<String, Pod>, job: &DynamicObject, scheduler: &str) {
    let want = rendered(job, scheduler).pods;
    let mut names: Vec<String> = want.iter().map(kube::ResourceExt::name_any).collect();
    names.sort();
    assert_eq!(pods.keys().cloned().collect::<Vec<_>>(), names);
    for want in &want {
        let got = &pods[&want.name_any()];
        let scheduler_name = |pod: &Pod| pod.spec.as_ref().and_then(|s| s.scheduler_name.clone());
        assert_eq!(scheduler_name(got).as_deref(), Some(scheduler));
        assert_eq!(scheduler_name(got), scheduler_name(want));
        assert_eq!(got.metadata.labels, want.metadata.labels);
        assert_eq!(got.metadata.annotations, want.metadata.annotations);
        assert_eq!(
            got.spec.as_ref().and_then(|s| s.node_name.as_deref()),
            None,
            "{}: no scheduler named {scheduler} runs here",
            want.name_any()
        );
    }
}

/// Binds the pod to the node, as a scheduler does (a `Binding` to the pod's `binding`
/// subresource).
async fn bind(client: &Client, namespace: &str, pod: &str) {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let binding = json!({
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod},
        "target": {"apiVersion": "v1", "kind": "Node", "name": NODE},
    });
    api.create_subresource::<_, Value>("binding", pod, &PostParams::default(), &binding)
        .await
        .unwrap_or_else(|error| panic!("{pod} bound to {NODE}: {error}"));
}

/// Waits until the PodGroup `name` is gone.
async fn await_gone(groups: &Api<DynamicObject>, name: &str, what: &str) {
    let gone = |group: Option<&DynamicObject>| group.is_none();
    within_for(ACT, what, await_condition(groups.clone(), name, gone))
        .await
        .expect("the PodGroup watch works");
}

/// Waits until the job's `Created` condition says `message`.
async fn await_created_message(client: &Client, namespace: &str, name: &str, message: &str) {
    let wanted = message.to_owned();
    let says = move |job: Option<&DynamicObject>| {
        job.and_then(|job| job.data["status"]["conditions"].as_array())
            .and_then(|conditions| conditions.iter().find(|c| c["type"] == "Created"))
            .is_some_and(|created| created["message"] == wanted.as_str())
    };
    let what = format!("Created to say {message:?}");
    await_job(client, namespace, JobKind::TFJob, name, &what, says).await;
}

/// Under volcano: the PodGroup with the scheduling policy's minAvailable, queue, priority class
/// and minResources; no pod while it is Pending (the job says why); once the test admits it
/// (phase `Inqueue`, as volcano's scheduler writes), the pods with `schedulerName: volcano`
/// and the group's annotations; bound and run, the job succeeds and the operator deletes the
/// PodGroup.
/// Asserts that `namespace` holds no Service.
async fn assert_no_services(client: &Client, namespace: &str) {
    let services = Api::<Service>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await
        .expect("services listed");
    let names: Vec<String> = services.items.iter().map(ResourceExt::name_any).collect();
    assert!(
        names.is_empty(),
        "services created while the PodGroup was Pending: {names:?}"
    );
}

#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn gang_volcano_creates_pods_once_the_pod_group_is_admitted() {
    in_namespace("gang-volcano", |client, namespace| async move {
        let mut pods = History::start::<Pod>(&client, &namespace, "pods").await;
        let operator = Operator::start_with("gang-volcano", &["--gang-scheduler-name=volcano"]);
        await_leader(&client, &operator, LEADER).await;
        let replica = |replicas: u32| {
            format!(
                "{{replicas: {replicas}, restartPolicy: Never, template: {{metadata: \
                 {{annotations: {{{EXIT_CODE_ANNOTATION}: \"0\", {RUN_SECONDS_ANNOTATION}: \
                 \"2\"}}}}, spec: {{containers: [{{name: tensorflow, image: {IMAGE}}}]}}}}}}"
            )
        };
        let manifest = format!(
            "\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {{name: gang, annotations: {{team: vision}}}}
spec:
  runPolicy:
    schedulingPolicy:
      minAvailable: 2
      queue: training
      priorityClass: high-priority
      minResources: {{cpu: \"3\", memory: 1Gi}}
  tfReplicaSpecs:
    Chief: {}
    Worker: {}
",
            replica(1),
            replica(2)
        );
        let job = create_job(&client, &namespace, &manifest).await;
        let groups = pod_groups(&client, &namespace, true);
        let group = await_exists(groups.clone(), "gang").await;
        let spec = json!({
            "minMember": 2,
            "queue": "training",
            "priorityClassName": "high-priority",
            "minResources": {"cpu": "3", "memory": "1Gi"},
        });
        assert_pod_group(&group, &job, "volcano", &spec);

        await_created_message(
            &client,
            &namespace,
            "gang",
            "TFJob gang is created. Pending: waiting for the gang scheduler to admit PodGroup \
             gang (phase Pending).",
        )
        .await;
        // A pod planned before the PodGroup was seen Pending would show by now.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let record = pods.record();
        assert!(
            record.uids.is_empty(),
            "pods created while the PodGroup was Pending: {:?}",
            record.uids
        );
        // Nor services, as upstream (its reconcile returns before pods and services alike).
        assert_no_services(&client, &namespace).await;

        groups
            .patch_status(
                "gang",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"phase": "Inqueue"}})),
            )
            .await
            .expect("the PodGroup admitted");
        pods.until(ACT, "3 pods", |live| live == 3).await;
        let created = await_pods(&client, &namespace, 3).await;
        assert_gang_pods(&created, &job, "volcano");
        assert_eq!(
            created["gang-worker-1"]
                .annotations()
                .get("volcano.sh/task-spec"),
            Some(&"worker".to_owned())
        );
        assert_eq!(
            created["gang-chief-0"]
                .annotations()
                .get("scheduling.k8s.io/group-name"),
            Some(&"gang".to_owned())
        );

        for pod in created.keys() {
            bind(&client, &namespace, pod).await;
        }
        await_last_condition(&client, &namespace, JobKind::TFJob, "gang", "Succeeded").await;
        await_gone(&groups, "gang", "the finished job's PodGroup to be deleted").await;
        assert!(
            jobs(&client, &namespace, JobKind::TFJob)
                .get_opt("gang")
                .await
                .expect("the job read")
                .is_some(),
            "the job is still there: the operator deleted its PodGroup, not the garbage collector"
        );
        operator.stop().await;
    })
    .await;
}

/// Under scheduler-plugins: the PodGroup with minMember (every replica), the minResources the
/// first minMember pods request and the schedule timeout; the pods at once (only volcano waits),
/// with the scheduler's name and the group's label. Suspended, the job's PodGroup goes;
/// resumed, it comes back; the job deleted while no operator runs, the garbage collector
/// deletes it.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn gang_scheduler_plugins_pod_group_follows_the_job() {
    in_namespace("gang-plugins", |client, namespace| async move {
        let flag = format!("--gang-scheduler-name={PLUGINS}");
        let operator = Operator::start_with("gang-plugins", &[&flag]);
        await_leader(&client, &operator, LEADER).await;
        let manifest = format!(
            "\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {{name: coscheduled, annotations: {{team: vision}}}}
spec:
  runPolicy:
    schedulingPolicy: {{scheduleTimeoutSeconds: 120}}
  tfReplicaSpecs:
    Worker:
      replicas: 3
      template:
        spec:
          containers:
          - name: tensorflow
            image: {IMAGE}
            resources: {{requests: {{cpu: 500m, memory: 256Mi}}}}
"
        );
        let job = create_job(&client, &namespace, &manifest).await;
        let groups = pod_groups(&client, &namespace, false);
        let group = await_exists(groups.clone(), "coscheduled").await;
        let spec = json!({
            "minMember": 3,
            "minResources": {"cpu": "1500m", "memory": "768Mi"},
            "scheduleTimeoutSeconds": 120,
        });
        assert_pod_group(&group, &job, PLUGINS, &spec);
        assert_eq!(
            group.data.get("status"),
            None,
            "no scheduler wrote a status"
        );

        let created = await_pods(&client, &namespace, 3).await;
        assert_gang_pods(&created, &job, PLUGINS);
        for pod in created.values() {
            assert_eq!(
                pod.labels().get("scheduling.x-k8s.io/pod-group"),
                Some(&"coscheduled".to_owned())
            );
            assert_eq!(pod.annotations().get("scheduling.k8s.io/group-name"), None);
        }

        set_suspend(&client, &namespace, JobKind::TFJob, "coscheduled", true).await;
        await_gone(&groups, "coscheduled", "the suspended job's PodGroup to go").await;
        set_suspend(&client, &namespace, JobKind::TFJob, "coscheduled", false).await;
        let api = jobs(&client, &namespace, JobKind::TFJob);
        let again = await_exists(groups.clone(), "coscheduled").await;
        assert_ne!(again.uid(), group.uid(), "a new PodGroup");
        assert_pod_group(&again, &job, PLUGINS, &spec);

        // With no operator running, only the garbage collector can delete the PodGroup.
        operator.stop().await;
        api.delete("coscheduled", &DeleteParams::background())
            .await
            .expect("the job deleted");
        await_gone(
            &groups,
            "coscheduled",
            "the garbage collector to delete the PodGroup",
        )
        .await;
    })
    .await;
}
