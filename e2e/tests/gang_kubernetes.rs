//! Kubernetes' own gang scheduling on the real control plane (docs/operator.md, "Sharing a
//! cluster"): `scripts/cluster` turns on the `GenericWorkload` and `GangScheduling` gates and
//! serves `scheduling.k8s.io/v1alpha2`; an operator started with
//! `--gang-scheduler-name=kubernetes` gives each job a Workload and a PodGroup, and the real
//! kube-scheduler places each job's pods all together or not at all on the kwok node (1,000
//! CPUs). Each test starts its own operator, so `scripts/e2e` runs them (`gang_*`) alone.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams};
use kube::runtime::wait::await_condition;
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use trainctl_api::JobKind;
use trainctl_e2e::operator::{History, Operator, await_leader, within_for};
use trainctl_e2e::{
    EXIT_CODE_ANNOTATION, IMAGE, RUN_SECONDS_ANNOTATION, await_exists, await_job,
    await_last_condition, create_job, in_namespace, jobs, pods_of_job, set_suspend,
};

/// How long an operator may take to hold the Lease (a predecessor killed by a failed test
/// holds it for its 15 s duration).
const LEADER: Duration = Duration::from_secs(45);

/// How long the operator and the scheduler may take to act on a change.
const ACT: Duration = Duration::from_secs(90);

/// The CPUs each pod of these tests requests: four fit on the kwok node's 1,000, five do not.
const POD_CPUS: u32 = 240;

/// `scheduling.k8s.io/v1alpha2` `kind`s (`podgroups`, `workloads`) in `namespace`.
fn scheduling(client: &Client, namespace: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("scheduling.k8s.io", "v1alpha2", kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
    Api::namespaced_with(client.clone(), namespace, &resource)
}

fn pod_groups(client: &Client, namespace: &str) -> Api<DynamicObject> {
    scheduling(client, namespace, "PodGroup", "podgroups")
}

fn workloads(client: &Client, namespace: &str) -> Api<DynamicObject> {
    scheduling(client, namespace, "Workload", "workloads")
}

/// A PyTorchJob of a Master and `workers` Workers, each pod requesting [`POD_CPUS`] CPUs and
/// running `seconds` (`None`: until deleted) before it succeeds; `min_available` as given.
fn pytorch_job(
    name: &str,
    workers: u32,
    seconds: Option<u32>,
    min_available: Option<u32>,
) -> String {
    let annotations = seconds.map_or_else(String::new, |seconds| {
        format!(
            "metadata: {{annotations: {{{EXIT_CODE_ANNOTATION}: \"0\", \
             {RUN_SECONDS_ANNOTATION}: \"{seconds}\"}}}}, "
        )
    });
    let replica = |replicas: u32| {
        format!(
            "{{replicas: {replicas}, restartPolicy: Never, template: {{{annotations}spec: \
             {{containers: [{{name: pytorch, image: {IMAGE}, resources: {{requests: {{cpu: \
             \"{POD_CPUS}\"}}}}}}]}}}}}}"
        )
    };
    let policy = min_available.map_or_else(String::new, |min| {
        format!("  runPolicy: {{schedulingPolicy: {{minAvailable: {min}}}}}\n")
    });
    format!(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {{name: {name}}}\nspec:\n\
         {policy}  pytorchReplicaSpecs:\n    Master: {}\n    Worker: {}\n",
        replica(1),
        replica(workers)
    )
}

/// The job's pods by name, with the node each is bound to (`None`: not placed).
async fn placements(
    client: &Client,
    namespace: &str,
    job: &str,
) -> BTreeMap<String, Option<String>> {
    pods_of_job(client, namespace, job)
        .await
        .into_iter()
        .map(|(name, pod)| (name, pod.spec.and_then(|spec| spec.node_name)))
        .collect()
}

fn placed(placements: &BTreeMap<String, Option<String>>) -> usize {
    placements.values().filter(|node| node.is_some()).count()
}

/// How many pods of `first` are pending or running, and how many of `second` are placed and
/// not finished, in one list of the namespace's pods.
async fn running_and_placed(
    client: &Client,
    namespace: &str,
    first: &str,
    second: &str,
) -> (usize, usize) {
    let pods = Api::<Pod>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await
        .expect("pods listed")
        .items;
    let of = |pod: &Pod, job: &str| {
        pod.labels()
            .get("training.kubeflow.org/job-name")
            .map(String::as_str)
            == Some(job)
    };
    let active = |pod: &Pod| {
        let phase = pod
            .status
            .as_ref()
            .and_then(|status| status.phase.as_deref());
        matches!(phase, Some("Pending" | "Running"))
    };
    let bound = |pod: &Pod| {
        pod.spec
            .as_ref()
            .is_some_and(|spec| spec.node_name.is_some())
    };
    (
        pods.iter()
            .filter(|pod| of(pod, first) && active(pod))
            .count(),
        pods.iter()
            .filter(|pod| of(pod, second) && active(pod) && bound(pod))
            .count(),
    )
}

/// Waits until `job` has `pods` pods of which `bound` are placed.
async fn await_placed(client: &Client, namespace: &str, job: &str, pods: usize, bound: usize) {
    let what = format!("{job}: {bound} of {pods} pods placed");
    within_for(ACT, &what, async {
        loop {
            let now = placements(client, namespace, job).await;
            if now.len() == pods && placed(&now) == bound {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
}

/// The job's `Created` message.
fn created_message(job: &DynamicObject) -> Option<String> {
    job.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|condition| condition["type"] == "Created")?["message"]
        .as_str()
        .map(str::to_owned)
}

/// Waits until the job's `Created` message says `says`, and returns the message.
async fn await_waiting_reason(client: &Client, namespace: &str, job: &str, says: &str) -> String {
    await_waiting_reason_without(client, namespace, job, says, None).await
}

/// Waits until the job's `Created` message says `says` and not `not`, and returns the message.
async fn await_waiting_reason_without(
    client: &Client,
    namespace: &str,
    job: &str,
    says: &str,
    not: Option<&str>,
) -> String {
    let wanted = says.to_owned();
    let unwanted = not.map(str::to_owned);
    let what = match not {
        Some(not) => format!("its Created message to say {says:?} and not {not:?}"),
        None => format!("its Created message to say {says:?}"),
    };
    let found = await_job(
        client,
        namespace,
        JobKind::PyTorchJob,
        job,
        &what,
        move |job: Option<&DynamicObject>| {
            job.and_then(created_message).is_some_and(|message| {
                message.contains(&wanted)
                    && unwanted
                        .as_ref()
                        .is_none_or(|unwanted| !message.contains(unwanted))
            })
        },
    )
    .await;
    created_message(&found).expect("a Created message")
}

/// The `PodGroupScheduled` condition of the job's PodGroup, once it is `status`.
async fn await_scheduled(client: &Client, namespace: &str, job: &str, status: &str) -> Value {
    let wanted = status.to_owned();
    let condition = |group: &DynamicObject| -> Option<Value> {
        group.data["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|condition| condition["type"] == "PodGroupScheduled")
            .cloned()
    };
    let holds = move |group: Option<&DynamicObject>| {
        group
            .and_then(condition)
            .is_some_and(|condition| condition["status"] == wanted.as_str())
    };
    let what = format!("PodGroup {job} PodGroupScheduled={status}");
    let groups = pod_groups(client, namespace);
    within_for(ACT, &what, await_condition(groups, job, holds))
        .await
        .expect("the PodGroup watch works")
        .as_ref()
        .and_then(condition)
        .expect("the condition")
}

/// Waits until `name` is gone from `api`.
async fn await_gone(api: &Api<DynamicObject>, name: &str, what: &str) {
    let gone = |object: Option<&DynamicObject>| object.is_none();
    within_for(ACT, what, await_condition(api.clone(), name, gone))
        .await
        .expect("the watch works");
}

/// `trainctl --kube ARGS -n NAMESPACE`'s standard output (it must succeed).
fn trainctl(namespace: &str, args: &[&str]) -> String {
    let binary = std::env::var("TRAINCTL_E2E_TRAINCTL")
        .expect("TRAINCTL_E2E_TRAINCTL: the trainctl binary (scripts/e2e sets it)");
    let output = Command::new(binary)
        .arg("--kube")
        .args(args)
        .args(["-n", namespace])
        .env("NO_COLOR", "1")
        .env("COLUMNS", "400")
        .output()
        .expect("trainctl runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "trainctl {args:?}: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

fn start_operator(name: &str) -> Operator {
    Operator::start_with(name, &["--gang-scheduler-name=kubernetes"])
}

/// Asserts that the job `name`, whose PodGroup cannot be placed, says why in the PodGroup's
/// words: in its `Created` message, in `trainctl --kube get -o wide` and in `describe`.
async fn assert_says_why_it_waits(client: &Client, namespace: &str, name: &str) {
    let condition = await_scheduled(client, namespace, name, "False").await;
    assert_eq!(condition["reason"], "Unschedulable", "{condition}");
    // 1.36.3's words for any cause: what is missing is only in each pod's condition.
    assert_eq!(
        condition["message"], "pod group is unschedulable",
        "{condition}"
    );
    let words = format!(
        "PodGroup {name} cannot be placed whole (Unschedulable: {})",
        condition["message"].as_str().expect("a message")
    );
    let message = await_waiting_reason(client, namespace, name, &words).await;
    assert!(
        message.starts_with(&format!("PyTorchJob {name} is created. Pending: {words}")),
        "{message}"
    );
    let wide = trainctl(namespace, &["get", "-o", "wide"]);
    let row = wide
        .lines()
        .find(|line| line.starts_with(&format!("pytorchjob/{name} ")))
        .unwrap_or_else(|| panic!("{name} in\n{wide}"));
    assert!(row.contains(" Pending ") && row.contains(&words), "{wide}");
    let described = trainctl(namespace, &["describe", &format!("pytorchjob/{name}")]);
    assert!(described.contains(&words), "{described}");
}

/// Asserts the Workload of job `a` and the PodGroup of job `b`: one template, gang of every
/// replica; the group made from its Workload's template and owned by its job.
async fn assert_workload_and_pod_group(client: &Client, namespace: &str) {
    let workload = await_exists(workloads(client, namespace), "a").await;
    assert_eq!(
        workload.data["spec"],
        json!({
            "controllerRef": {"apiGroup": "kubeflow.org", "kind": "PyTorchJob", "name": "a"},
            // 1.36.3 stores the gated `schedulingConstraints` (TopologyAwareWorkloadScheduling,
            // off here) as null in each template, though none was sent.
            "podGroupTemplates": [{
                "name": "replicas",
                "schedulingPolicy": {"gang": {"minCount": 4}},
                "schedulingConstraints": null,
            }]
        })
    );
    let group = await_exists(pod_groups(client, namespace), "b").await;
    assert_eq!(
        group.data["spec"]["podGroupTemplateRef"],
        json!({"workload": {"workloadName": "b", "podGroupTemplateName": "replicas"}})
    );
    assert_eq!(
        group.data["spec"]["schedulingPolicy"],
        json!({"gang": {"minCount": 4}})
    );
    // Kept until no pod names the group (kube-controller-manager's podgroup-protection).
    assert_eq!(
        group.finalizers(),
        ["scheduling.k8s.io/podgroup-protection"]
    );
    let owner = &group.metadata.owner_references.as_ref().expect("owned")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("PyTorchJob", "b")
    );
    assert_eq!(owner.controller, Some(true));
}

/// The experiment of issue 35: two `PyTorchJob`s of 4 pods that each fit alone and not together,
/// applied together. Pod by pod they deadlock half-placed; as gangs, one runs whole while the
/// other has no pod placed and says why (in the PodGroup's words, in `get -o wide` and
/// `describe` too), then runs whole once the first finishes. Each has its Workload and PodGroup,
/// which go when it finishes.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn gang_kubernetes_two_jobs_run_whole_or_wait_whole() {
    in_namespace("gang-k8s-two", |client, namespace| async move {
        let operator = start_operator("gang-k8s-two");
        await_leader(&client, &operator, LEADER).await;
        for name in ["a", "b"] {
            create_job(&client, &namespace, &pytorch_job(name, 3, Some(20), None)).await;
        }
        assert_workload_and_pod_group(&client, &namespace).await;

        // One job gets its 4 pods, the other none.
        let (first, second) = within_for(ACT, "one job placed whole", async {
            loop {
                let a = placements(&client, &namespace, "a").await;
                let b = placements(&client, &namespace, "b").await;
                if a.len() == 4 && b.len() == 4 && placed(&a) + placed(&b) == 4 {
                    return if placed(&a) == 4 {
                        ("a", "b")
                    } else {
                        ("b", "a")
                    };
                }
                assert!(
                    placed(&a) == 0 || placed(&b) == 0,
                    "both half-placed: {a:?} {b:?}"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
        .await;
        let pod = Api::<Pod>::namespaced(client.clone(), &namespace)
            .get(&format!("{second}-worker-0"))
            .await
            .expect("a pod of the waiting job");
        let spec = pod.spec.expect("a spec");
        assert_eq!(
            spec.scheduling_group.and_then(|g| g.pod_group_name),
            Some(second.to_owned())
        );
        assert_eq!(spec.scheduler_name.as_deref(), Some("default-scheduler"));

        assert_says_why_it_waits(&client, &namespace, second).await;

        // While a pod of the first runs, no pod of the second is placed (one list: one moment of
        // the cluster); then the second runs whole.
        within_for(ACT, &format!("{first} to succeed"), async {
            loop {
                let (first_running, second_placed) =
                    running_and_placed(&client, &namespace, first, second).await;
                assert!(
                    first_running == 0 || second_placed == 0,
                    "{second_placed} pods of {second} placed while {first_running} of {first} run"
                );
                let job = jobs(&client, &namespace, JobKind::PyTorchJob)
                    .get(first)
                    .await
                    .expect("the job read");
                if trainctl_e2e::last_condition(&job).is_some_and(|c| c.0 == "Succeeded") {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
        .await;
        await_gone(
            &pod_groups(&client, &namespace),
            first,
            "the finished job's PodGroup",
        )
        .await;
        await_gone(
            &workloads(&client, &namespace),
            first,
            "the finished job's Workload",
        )
        .await;
        await_placed(&client, &namespace, second, 4, 4).await;
        await_scheduled(&client, &namespace, second, "True").await;
        await_last_condition(
            &client,
            &namespace,
            JobKind::PyTorchJob,
            second,
            "Succeeded",
        )
        .await;
        operator.stop().await;
    })
    .await;
}

/// A job larger than the cluster places nothing and says why; with `minAvailable` below its
/// replica count, the group is placed once that many fit, and the rest wait as single pods.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn gang_kubernetes_too_large_places_nothing_and_min_available_places_that_many() {
    in_namespace("gang-k8s-sizes", |client, namespace| async move {
        let operator = start_operator("gang-k8s-sizes");
        await_leader(&client, &operator, LEADER).await;
        create_job(&client, &namespace, &pytorch_job("huge", 4, None, None)).await;
        let condition = await_scheduled(&client, &namespace, "huge", "False").await;
        assert_eq!(condition["reason"], "Unschedulable", "{condition}");
        await_waiting_reason(
            &client,
            &namespace,
            "huge",
            "PodGroup huge cannot be placed whole",
        )
        .await;
        await_placed(&client, &namespace, "huge", 5, 0).await;
        // The scheduler tries again; still nothing.
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(placed(&placements(&client, &namespace, "huge").await), 0);
        jobs(&client, &namespace, JobKind::PyTorchJob)
            .delete("huge", &DeleteParams::foreground())
            .await
            .expect("deleted");
        await_gone(
            &pod_groups(&client, &namespace),
            "huge",
            "the deleted job's PodGroup",
        )
        .await;

        create_job(&client, &namespace, &pytorch_job("some", 4, None, Some(4))).await;
        let group = await_exists(pod_groups(&client, &namespace), "some").await;
        assert_eq!(
            group.data["spec"]["schedulingPolicy"],
            json!({"gang": {"minCount": 4}})
        );
        await_placed(&client, &namespace, "some", 5, 4).await;
        // Which 4 is the scheduler's choice (the Master may wait): the fifth waits alone, and the
        // job names it. The group is not blamed, though 1.36's scheduler may write
        // `PodGroupScheduled=False` again after the fifth pod's own attempt.
        await_waiting_reason_without(
            &client,
            &namespace,
            "some",
            "is pending (Unschedulable: ",
            Some("cannot be placed whole"),
        )
        .await;
        operator.stop().await;
    })
    .await;
}

/// Suspending gives the places back (pods, PodGroup and Workload go) and resuming takes them
/// again (new ones); an operator restarted mid-gang adopts the group and creates nothing twice;
/// deleting the job removes its group.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn gang_kubernetes_suspend_resume_restart_and_delete() {
    in_namespace("gang-k8s-life", |client, namespace| async move {
        let operator = start_operator("gang-k8s-life");
        await_leader(&client, &operator, LEADER).await;
        create_job(&client, &namespace, &pytorch_job("life", 3, None, None)).await;
        await_placed(&client, &namespace, "life", 4, 4).await;
        let groups = pod_groups(&client, &namespace);
        let group = await_exists(groups.clone(), "life").await;

        set_suspend(&client, &namespace, JobKind::PyTorchJob, "life", true).await;
        await_gone(&groups, "life", "the suspended job's PodGroup").await;
        await_gone(
            &workloads(&client, &namespace),
            "life",
            "the suspended job's Workload",
        )
        .await;
        await_placed(&client, &namespace, "life", 0, 0).await;
        // The places are free: a job of 4 fits now.
        create_job(&client, &namespace, &pytorch_job("other", 3, Some(3), None)).await;
        await_last_condition(
            &client,
            &namespace,
            JobKind::PyTorchJob,
            "other",
            "Succeeded",
        )
        .await;

        set_suspend(&client, &namespace, JobKind::PyTorchJob, "life", false).await;
        await_placed(&client, &namespace, "life", 4, 4).await;
        let again = await_exists(groups.clone(), "life").await;
        assert_ne!(
            again.uid(),
            group.uid(),
            "a new PodGroup for the resumed job"
        );
        let workload = await_exists(workloads(&client, &namespace), "life").await;

        // A new operator adopts what is there.
        let pods = History::start::<Pod>(&client, &namespace, "pods").await;
        operator.stop().await;
        let successor = start_operator("gang-k8s-life-2");
        await_leader(&client, &successor, LEADER).await;
        tokio::time::sleep(Duration::from_secs(5)).await;
        let record = pods.record();
        let mut names = trainctl_e2e::operator::worker_names("life", 3);
        names.extend(trainctl_e2e::operator::worker_names("other", 3));
        names.extend(["life-master-0".to_owned(), "other-master-0".to_owned()]);
        record.assert_created_once("pods", &names);
        assert_eq!(
            groups.get("life").await.expect("the PodGroup").uid(),
            again.uid()
        );
        let same = workloads(&client, &namespace)
            .get("life")
            .await
            .expect("the Workload");
        assert_eq!(same.uid(), workload.uid());
        assert!(
            !successor.log().contains("already exists"),
            "the successor created something twice:\n{}",
            successor.log()
        );

        jobs(&client, &namespace, JobKind::PyTorchJob)
            .delete("life", &DeleteParams::background())
            .await
            .expect("the job deleted");
        await_gone(&groups, "life", "the deleted job's PodGroup").await;
        await_gone(
            &workloads(&client, &namespace),
            "life",
            "the deleted job's Workload",
        )
        .await;
        await_placed(&client, &namespace, "life", 0, 0).await;
        successor.stop().await;
    })
    .await;
}
