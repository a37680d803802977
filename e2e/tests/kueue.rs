//! Kueue queues kubeflow.org jobs per team on the real control plane (docs/operator.md,
//! "Sharing a cluster"): `scripts/e2e` runs Kueue 0.17 beside it (scripts/lib/cluster/kueue.sh:
//! its manager on 127.0.0.1 with the kubeflow.org integrations, its webhooks called by the API
//! server). One `ClusterQueue` holds 4 GPUs; each of two team namespaces has a `LocalQueue` in it.
//! Jobs labelled `kueue.x-k8s.io/queue-name` are suspended by Kueue's webhook when created,
//! admitted whole and in order (each needs the 4 GPUs), unsuspended, and run; a team whose job
//! the quota cannot hold waits with no pod, Kueue's words in `trainctl --kube get -o wide`.
//!
//! The same test runs against trainctl's operator and against the upstream Kubeflow training
//! operator v1.9.4: Kueue behaves the same with both. Each starts its own operator, so
//! `scripts/e2e` runs them (`kueue_*`) alone.

use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;
use trainctl_api::JobKind;
use trainctl_e2e::operator::{Operator, await_leader, within_for};
use trainctl_e2e::{
    EXIT_CODE_ANNOTATION, IMAGE, RUN_SECONDS_ANNOTATION, await_job, await_last_condition,
    create_job, jobs, pods_of_job,
};

/// How long Kueue and the operator may take to admit and run a job.
const ACT: Duration = Duration::from_secs(90);

/// The queue label Kueue reads on a job.
const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";

/// Kueue's `kind` (`v1beta2`, its storage version) as an API.
fn kueue(client: &Client, namespace: Option<&str>, kind: &str, plural: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
    match namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

async fn create(api: &Api<DynamicObject>, object: serde_json::Value) {
    let object: DynamicObject = serde_json::from_value(object).expect("an object");
    api.create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|error| panic!("{} created: {error}", object.name_any()));
}

/// The queues of a test: a `ResourceFlavor` and a `ClusterQueue` named after `prefix` (cluster-wide
/// objects: each test has its own), 4 GPUs in `StrictFIFO` order, and a `LocalQueue` `team` in
/// each of `teams`.
async fn make_queues(client: &Client, prefix: &str, teams: &[&str]) {
    let flavor = format!("{prefix}-flavor");
    create(
        &kueue(client, None, "ResourceFlavor", "resourceflavors"),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
               "metadata": {"name": flavor}}),
    )
    .await;
    create(
        &kueue(client, None, "ClusterQueue", "clusterqueues"),
        json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": prefix},
            "spec": {
                "namespaceSelector": {},
                "queueingStrategy": "StrictFIFO",
                "resourceGroups": [{
                    "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                    "flavors": [{"name": flavor, "resources": [
                        {"name": "cpu", "nominalQuota": "100"},
                        {"name": "memory", "nominalQuota": "100Gi"},
                        {"name": "nvidia.com/gpu", "nominalQuota": "4"},
                    ]}],
                }],
            },
        }),
    )
    .await;
    for team in teams {
        create(
            &kueue(client, Some(team), "LocalQueue", "localqueues"),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                   "metadata": {"name": "team", "namespace": team},
                   "spec": {"clusterQueue": prefix}}),
        )
        .await;
    }
}

/// Deletes what [`make_queues`] made (the namespaces take their queues).
async fn delete_queues(client: &Client, prefix: &str) {
    let params = DeleteParams::background();
    let _ = kueue(client, None, "ClusterQueue", "clusterqueues")
        .delete(prefix, &params)
        .await;
    let _ = kueue(client, None, "ResourceFlavor", "resourceflavors")
        .delete(&format!("{prefix}-flavor"), &params)
        .await;
}

/// A `PyTorchJob` in the `LocalQueue` `team`: a Master and 3 Workers of one GPU each, which run
/// 10 seconds and succeed.
fn queued_job(name: &str) -> String {
    let replica = |replicas: u32| {
        format!(
            "{{replicas: {replicas}, restartPolicy: Never, template: {{metadata: {{annotations: \
             {{{EXIT_CODE_ANNOTATION}: \"0\", {RUN_SECONDS_ANNOTATION}: \"10\"}}}}, spec: \
             {{containers: [{{name: pytorch, image: {IMAGE}, resources: {{requests: {{cpu: \
             \"1\", memory: 1Gi}}, limits: {{nvidia.com/gpu: 1}}}}}}]}}}}}}"
        )
    };
    format!(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {{name: {name}, labels: \
         {{{QUEUE_LABEL}: team}}}}\nspec:\n  pytorchReplicaSpecs:\n    Master: {}\n    Worker: \
         {}\n",
        replica(1),
        replica(3)
    )
}

fn suspended(job: &DynamicObject) -> bool {
    job.data["spec"]["runPolicy"]["suspend"] == true
}

/// `trainctl --kube get -o wide -n NAMESPACE`.
fn get_wide(namespace: &str) -> String {
    let binary = std::env::var("TRAINCTL_E2E_TRAINCTL")
        .expect("TRAINCTL_E2E_TRAINCTL: the trainctl binary (scripts/e2e sets it)");
    let output = Command::new(binary)
        .args(["--kube", "get", "-o", "wide", "-n", namespace])
        .env("NO_COLOR", "1")
        .output()
        .expect("trainctl runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Makes two team namespaces, runs `test` with them, and deletes them and the queues.
async fn with_teams<F, T>(prefix: &str, test: F)
where
    F: FnOnce(Client, [String; 2]) -> T,
    T: Future<Output = ()>,
{
    let client = trainctl_e2e::client().await;
    let millis = jiff::Timestamp::now().as_millisecond();
    let teams = [
        format!("{prefix}-a-{millis}"),
        format!("{prefix}-b-{millis}"),
    ];
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for team in &teams {
        let object: Namespace =
            serde_json::from_value(json!({"metadata": {"name": team}})).expect("a namespace");
        namespaces
            .create(&PostParams::default(), &object)
            .await
            .expect("namespace created");
    }
    make_queues(&client, prefix, &[&teams[0], &teams[1]]).await;
    let outcome = futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(Box::pin(
        test(client.clone(), teams.clone()),
    )))
    .await;
    for team in &teams {
        let _ = namespaces.delete(team, &DeleteParams::background()).await;
    }
    delete_queues(&client, prefix).await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// The test, with whichever operator runs: team A's first job, team B's, then team A's second,
/// each needing the whole quota, created a second apart. With `gang`, the operator runs with
/// `--gang-scheduler-name kubernetes`: each admitted job's pods name its PodGroup.
async fn queued_whole_and_in_order(client: Client, [a, b]: [String; 2], gang: bool) {
    let order = [
        (a.as_str(), "first"),
        (b.as_str(), "second"),
        (a.as_str(), "third"),
    ];
    for (i, (team, name)) in order.iter().enumerate() {
        if i > 0 {
            // Kueue orders by creation time, which the API server keeps to the second.
            tokio::time::sleep(Duration::from_millis(1100)).await;
        }
        let created = create_job(&client, team, &queued_job(name)).await;
        assert!(
            suspended(&created),
            "Kueue's webhook suspends {name} at creation"
        );
    }
    for (i, (team, name)) in order.iter().enumerate() {
        // Admitted: unsuspended, and its pods carry Kueue's podset label from the template Kueue
        // wrote at admission.
        let what = "unsuspended by Kueue";
        await_job(
            &client,
            team,
            JobKind::PyTorchJob,
            name,
            what,
            |job: Option<&DynamicObject>| job.is_some_and(|job| !suspended(job)),
        )
        .await;
        let pods = within_for(ACT, &format!("{name}'s 4 pods"), async {
            loop {
                let pods = pods_of_job(&client, team, name).await;
                if pods.len() == 4 {
                    return pods;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
        .await;
        for pod in pods.values() {
            assert!(
                pod.labels().contains_key("kueue.x-k8s.io/podset"),
                "{pod:?}"
            );
            let group = pod
                .spec
                .as_ref()
                .and_then(|spec| spec.scheduling_group.as_ref())
                .and_then(|group| group.pod_group_name.as_deref());
            assert_eq!(group, gang.then_some(*name), "{pod:?}");
        }
        // Those behind wait suspended, without pods, for as long as this one holds the GPUs
        // (read after them: one admitted behind must find this one finished); the next one says
        // why, in Kueue's words.
        for (later_team, later) in &order[i + 1..] {
            let job = jobs(&client, later_team, JobKind::PyTorchJob)
                .get(later)
                .await
                .expect("the job");
            let behind =
                suspended(&job) && pods_of_job(&client, later_team, later).await.is_empty();
            let holder = jobs(&client, team, JobKind::PyTorchJob)
                .get(name)
                .await
                .expect("the job");
            let finished =
                trainctl_e2e::last_condition(&holder).is_some_and(|(last, ..)| last == "Succeeded");
            assert!(
                behind || finished,
                "{later} is admitted while {name} holds the GPUs"
            );
        }
        if let Some((next_team, next)) = order.get(i + 1) {
            let waits = within_for(ACT, &format!("{next}'s reason"), async {
                loop {
                    let wide = get_wide(next_team);
                    if wide.contains("insufficient unused quota for nvidia.com/gpu") {
                        return wide;
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            })
            .await;
            let row = waits
                .lines()
                .find(|line| line.starts_with(&format!("pytorchjob/{next} ")))
                .unwrap_or_else(|| panic!("{next} in\n{waits}"));
            assert!(row.contains("Kueue (LocalQueue team):"), "{waits}");
        }
        await_last_condition(&client, team, JobKind::PyTorchJob, name, "Succeeded").await;
    }
}

#[tokio::test]
#[ignore = "needs the e2e control plane with Kueue: scripts/e2e"]
async fn kueue_queues_whole_jobs_in_order_with_trainctl() {
    with_teams("kueue-trainctl", |client, teams| async move {
        let operator = Operator::start("kueue-trainctl");
        await_leader(&client, &operator, Duration::from_secs(45)).await;
        queued_whole_and_in_order(client, teams, false).await;
        operator.stop().await;
    })
    .await;
}

/// Kueue decides when a job starts (its quota), Kubernetes' own gang scheduling where its pods
/// go, all together: both at once.
#[tokio::test]
#[ignore = "needs the e2e control plane with Kueue: scripts/e2e"]
async fn kueue_with_kubernetes_gang_scheduling() {
    with_teams("kueue-gang", |client, teams| async move {
        let operator = Operator::start_with("kueue-gang", &["--gang-scheduler-name=kubernetes"]);
        await_leader(&client, &operator, Duration::from_secs(45)).await;
        queued_whole_and_in_order(client, teams, true).await;
        operator.stop().await;
    })
    .await;
}

#[tokio::test]
#[ignore = "needs the e2e control plane with Kueue and the upstream operator: scripts/e2e"]
async fn kueue_queues_whole_jobs_in_order_with_upstream() {
    with_teams("kueue-upstream", |client, teams| async move {
        let mut operator = Operator::start_upstream("kueue-upstream");
        queued_whole_and_in_order(client, teams, false).await;
        operator.assert_running();
        // Not stopped with SIGTERM: upstream's v1.9.4 then panics ("close of closed channel",
        // cmd/training-operator.v1/main.go:182) and exits 2.
        operator.kill();
    })
    .await;
}
