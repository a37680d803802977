//! The run policies on a real control plane, against the operator `scripts/e2e` runs: restart
//! policies and exit-code classes, `backoffLimit`, `activeDeadlineSeconds`, TF `successPolicy`,
//! `cleanPodPolicy` (docs/semantics.md §5-§6).

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, ResourceExt};
use serde_json::json;
use trainctl_api::JobKind;
use trainctl_e2e::{
    EXIT_CODE_ANNOTATION, IMAGE, RUN_SECONDS_ANNOTATION, await_exists, await_job,
    await_last_condition, await_reasons, create_job, in_namespace, last_condition, within,
};

/// A TFJob `name` of `replicas` workers under `restart_policy`, whose pods exit with `exit` (kwok
/// ends them after one second) or run until deleted; `spec` is put into the job's spec as is
/// (`runPolicy`, `successPolicy`), indented by two spaces.
fn tfjob(name: &str, replicas: u32, restart_policy: &str, exit: Option<u8>, spec: &str) -> String {
    let annotations = exit.map_or_else(String::new, |code| {
        format!(
            "        metadata:\n          annotations: {{{EXIT_CODE_ANNOTATION}: \"{code}\", \
             {RUN_SECONDS_ANNOTATION}: \"1\"}}\n"
        )
    });
    format!(
        "\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {{name: {name}}}
spec:
{spec}  tfReplicaSpecs:
    Worker:
      replicas: {replicas}
      restartPolicy: {restart_policy}
      template:
{annotations}        spec:
          containers: [{{name: tensorflow, image: {IMAGE}}}]
"
    )
}

/// The job's last condition, as `(type, reason, message)` of a true condition.
fn finished(job: &DynamicObject) -> (String, String) {
    let (_, status, reason, message) = last_condition(job).expect("a condition");
    assert_eq!(status, "True", "{job:?}");
    (reason, message)
}

/// The pods of `namespace`.
fn pods(client: &Client, namespace: &str) -> Api<Pod> {
    Api::namespaced(client.clone(), namespace)
}

/// Waits until the pod `name` is `phase`; the pod then.
async fn await_phase(pods: &Api<Pod>, name: &str, phase: &'static str) -> Pod {
    within(
        &format!("{name} to be {phase}"),
        await_condition(pods.clone(), name, move |pod: Option<&Pod>| {
            pod.and_then(|pod| pod.status.as_ref())
                .and_then(|status| status.phase.as_deref())
                == Some(phase)
        }),
    )
    .await
    .expect("the watch works")
    .expect("the pod exists")
}

/// Waits until the pod `name` of `uid` is gone from the API.
async fn await_gone(pods: &Api<Pod>, name: &str, uid: &str) {
    within(
        &format!("{name} to be deleted"),
        await_condition(pods.clone(), name, conditions::is_deleted(uid)),
    )
    .await
    .expect("the watch works");
}

/// Makes kwok end the running pod `name` with exit code `code` now (its run-seconds, counted
/// from the container's start, are already past).
async fn end_pod(pods: &Api<Pod>, name: &str, code: u8) {
    let patch = json!({"metadata": {"annotations": {
        EXIT_CODE_ANNOTATION: code.to_string(),
        RUN_SECONDS_ANNOTATION: "0",
    }}});
    pods.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("the pod is annotated");
}

/// The true-condition types of the job.
fn true_conditions(job: &DynamicObject) -> Vec<String> {
    job.data["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|condition| condition["status"] == "True")
        .filter_map(|condition| condition["type"].as_str().map(str::to_owned))
        .collect()
}

/// `ExitCode` with exit code 1 (a permanent error) fails the job at once: the pod is neither
/// re-created nor deleted.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn exit_code_policy_fails_the_job_on_a_permanent_exit_code() {
    in_namespace("exitcode-1", |client, namespace| async move {
        create_job(
            &client,
            &namespace,
            &tfjob("perm", 1, "ExitCode", Some(1), ""),
        )
        .await;
        let job = await_last_condition(&client, &namespace, JobKind::TFJob, "perm", "Failed").await;
        assert_eq!(
            finished(&job),
            (
                "TFJobFailed".to_owned(),
                format!("TFJob {namespace}/perm has failed because 1 Worker replica(s) failed.")
            )
        );
        assert!(!true_conditions(&job).contains(&"Restarting".to_owned()));
        let pods = pods(&client, &namespace);
        let pod = pods
            .get("perm-worker-0")
            .await
            .expect("the failed pod stays");
        assert_eq!(
            pod.spec.and_then(|spec| spec.restart_policy).as_deref(),
            Some("Never")
        );
        assert_eq!(
            pod.status.and_then(|status| status.phase).as_deref(),
            Some("Failed")
        );
        await_reasons(&client, &namespace, "perm", &["TFJobFailed"]).await;
        let events = trainctl_e2e::job_events(&client, &namespace, "perm").await;
        assert!(
            !events
                .iter()
                .any(|(_, reason, _)| reason == "TFJobRestarting"),
            "{events:?}"
        );
    })
    .await;
}

/// `ExitCode` with exit code 137 (killed) deletes the pod and creates it again, a new pod
/// (new uid), with `Restarting` on the job; with `backoffLimit: 1` the second kill fails it.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn exit_code_policy_recreates_a_killed_pod_until_the_backoff_limit() {
    in_namespace("exitcode-137", |client, namespace| async move {
        let spec = "  runPolicy: {backoffLimit: 1}\n";
        create_job(
            &client,
            &namespace,
            &tfjob("killed", 1, "ExitCode", Some(137), spec),
        )
        .await;
        let pods = pods(&client, &namespace);
        let first = await_exists(pods.clone(), "killed-worker-0").await;
        let first_uid = first.uid().expect("a uid");
        let job =
            await_last_condition(&client, &namespace, JobKind::TFJob, "killed", "Restarting").await;
        assert_eq!(
            finished(&job),
            (
                "TFJobRestarting".to_owned(),
                "TFJob killed is restarting because 1 Worker replica(s) failed.".to_owned()
            )
        );
        let uid = first_uid.clone();
        let second = within(
            "a new killed-worker-0",
            await_condition(pods.clone(), "killed-worker-0", move |pod: Option<&Pod>| {
                pod.and_then(|pod| pod.metadata.uid.as_deref())
                    .is_some_and(|new| new != uid)
            }),
        )
        .await
        .expect("the watch works")
        .expect("the pod exists");
        assert_ne!(second.uid(), Some(first_uid));
        let job =
            await_last_condition(&client, &namespace, JobKind::TFJob, "killed", "Failed").await;
        assert_eq!(
            finished(&job),
            (
                "TFJobFailed".to_owned(),
                "Job killed has failed because it has reached the specified backoff limit"
                    .to_owned()
            )
        );
        await_reasons(
            &client,
            &namespace,
            "killed",
            &["TFJobRestarting", "TFJobFailed"],
        )
        .await;
    })
    .await;
}

/// `OnFailure` restarts the container in place: the same pod, its `restartCount` growing, the
/// last exit code 2, and the job not failed (no `backoffLimit`).
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn on_failure_restarts_in_place_without_failing_the_job() {
    in_namespace("onfailure", |client, namespace| async move {
        create_job(
            &client,
            &namespace,
            &tfjob("flaky", 1, "OnFailure", Some(2), ""),
        )
        .await;
        let pods = pods(&client, &namespace);
        let first = await_exists(pods.clone(), "flaky-worker-0").await;
        let restarted = within(
            "flaky-worker-0 to restart twice",
            await_condition(pods.clone(), "flaky-worker-0", |pod: Option<&Pod>| {
                pod.and_then(|pod| pod.status.as_ref())
                    .and_then(|status| status.container_statuses.as_ref())
                    .and_then(|statuses| statuses.first())
                    .is_some_and(|status| status.restart_count >= 2)
            }),
        )
        .await
        .expect("the watch works")
        .expect("the pod exists");
        assert_eq!(
            restarted.uid(),
            first.uid(),
            "restarted in place, not re-created"
        );
        let status = restarted.status.expect("a status");
        let container = &status.container_statuses.expect("container statuses")[0];
        let exit_code = container
            .last_state
            .as_ref()
            .and_then(|state| state.terminated.as_ref())
            .map(|terminated| terminated.exit_code);
        assert_eq!(exit_code, Some(2));
        let job = trainctl_e2e::jobs(&client, &namespace, JobKind::TFJob)
            .get("flaky")
            .await
            .expect("the job exists");
        let types = true_conditions(&job);
        assert!(!types.contains(&"Failed".to_owned()), "{job:?}");
        assert!(!types.contains(&"Restarting".to_owned()), "{job:?}");
    })
    .await;
}

/// `Never` with exit code 1 fails the job; the failed pod stays.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn never_fails_the_job_on_a_failed_pod() {
    in_namespace("never", |client, namespace| async move {
        create_job(&client, &namespace, &tfjob("once", 1, "Never", Some(1), "")).await;
        let job = await_last_condition(&client, &namespace, JobKind::TFJob, "once", "Failed").await;
        assert_eq!(
            finished(&job),
            (
                "TFJobFailed".to_owned(),
                format!("TFJob {namespace}/once has failed because 1 Worker replica(s) failed.")
            )
        );
        assert_eq!(job.data["status"]["replicaStatuses"]["Worker"]["failed"], 1);
        let pod = pods(&client, &namespace)
            .get("once-worker-0")
            .await
            .expect("the pod stays");
        assert_eq!(
            pod.status.and_then(|status| status.phase).as_deref(),
            Some("Failed")
        );
    })
    .await;
}

/// `backoffLimit: 1` counts in-place restarts: `OnFailure` with exit code 3 fails the job with
/// the backoff message, and the restarting pod is stopped (deleted).
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn backoff_limit_counts_in_place_restarts() {
    in_namespace("backoff", |client, namespace| async move {
        let spec = "  runPolicy: {backoffLimit: 1}\n";
        create_job(
            &client,
            &namespace,
            &tfjob("retry", 1, "OnFailure", Some(3), spec),
        )
        .await;
        let pod = await_exists(pods(&client, &namespace), "retry-worker-0").await;
        let job =
            await_last_condition(&client, &namespace, JobKind::TFJob, "retry", "Failed").await;
        assert_eq!(
            finished(&job),
            (
                "TFJobFailed".to_owned(),
                "Job retry has failed because it has reached the specified backoff limit"
                    .to_owned()
            )
        );
        assert!(job.data["status"]["completionTime"].is_string(), "{job:?}");
        let uid = pod.uid().expect("a uid");
        await_gone(&pods(&client, &namespace), "retry-worker-0", &uid).await;
    })
    .await;
}

/// `activeDeadlineSeconds: 5` fails a job whose pods run forever, on time, and deletes the
/// running pods.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn active_deadline_fails_the_job_and_deletes_its_running_pods() {
    in_namespace("deadline", |client, namespace| async move {
        let spec = "  runPolicy: {activeDeadlineSeconds: 5}\n";
        let started = std::time::Instant::now();
        create_job(&client, &namespace, &tfjob("slow", 2, "Never", None, spec)).await;
        let pods = pods(&client, &namespace);
        let mut uids = Vec::new();
        for name in ["slow-worker-0", "slow-worker-1"] {
            uids.push(
                await_phase(&pods, name, "Running")
                    .await
                    .uid()
                    .expect("a uid"),
            );
        }
        let job = await_last_condition(&client, &namespace, JobKind::TFJob, "slow", "Failed").await;
        let elapsed = started.elapsed();
        assert!(
            elapsed >= Duration::from_secs(4),
            "failed after {elapsed:?}"
        );
        assert!(
            elapsed < Duration::from_secs(20),
            "failed only after {elapsed:?}"
        );
        assert_eq!(
            finished(&job),
            (
                "TFJobFailed".to_owned(),
                "Job slow has failed because it was active longer than specified deadline"
                    .to_owned()
            )
        );
        for (name, uid) in ["slow-worker-0", "slow-worker-1"].iter().zip(&uids) {
            await_gone(&pods, name, uid).await;
        }
        await_reasons(
            &client,
            &namespace,
            "slow",
            &["SuccessfulDeletePod", "TFJobFailed"],
        )
        .await;
    })
    .await;
}

/// `successPolicy: AllWorkers`: worker 0 succeeding does not finish the job while worker 1 runs;
/// the job succeeds once both have.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn all_workers_success_policy_waits_for_every_worker() {
    in_namespace("allworkers", |client, namespace| async move {
        let spec = "  successPolicy: AllWorkers\n";
        create_job(&client, &namespace, &tfjob("all", 2, "Never", None, spec)).await;
        let pods = pods(&client, &namespace);
        for name in ["all-worker-0", "all-worker-1"] {
            await_phase(&pods, name, "Running").await;
        }
        end_pod(&pods, "all-worker-0", 0).await;
        await_phase(&pods, "all-worker-0", "Succeeded").await;
        await_job(
            &client,
            &namespace,
            JobKind::TFJob,
            "all",
            "to count worker 0 succeeded",
            |job: Option<&DynamicObject>| {
                job.is_some_and(|job| {
                    job.data["status"]["replicaStatuses"]["Worker"]["succeeded"] == 1
                })
            },
        )
        .await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        let job = trainctl_e2e::jobs(&client, &namespace, JobKind::TFJob)
            .get("all")
            .await
            .expect("the job exists");
        assert_eq!(true_conditions(&job), ["Created", "Running"], "{job:?}");
        assert_eq!(
            pods.get("all-worker-1")
                .await
                .expect("worker 1")
                .status
                .and_then(|s| s.phase)
                .as_deref(),
            Some("Running")
        );
        end_pod(&pods, "all-worker-1", 0).await;
        let job =
            await_last_condition(&client, &namespace, JobKind::TFJob, "all", "Succeeded").await;
        assert_eq!(
            finished(&job),
            (
                "TFJobSucceeded".to_owned(),
                format!("TFJob {namespace}/all successfully completed.")
            )
        );
        assert_eq!(
            job.data["status"]["replicaStatuses"]["Worker"]["succeeded"],
            2
        );
    })
    .await;
}

/// The default success policy: worker 0 succeeding finishes the job while worker 1 still runs;
/// worker 1 counts as succeeded and, under the default `cleanPodPolicy: None`, keeps running.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn worker_zero_alone_finishes_a_tfjob_by_default() {
    in_namespace("worker0", |client, namespace| async move {
        create_job(&client, &namespace, &tfjob("chief", 2, "Never", None, "")).await;
        let pods = pods(&client, &namespace);
        for name in ["chief-worker-0", "chief-worker-1"] {
            await_phase(&pods, name, "Running").await;
        }
        end_pod(&pods, "chief-worker-0", 0).await;
        let job =
            await_last_condition(&client, &namespace, JobKind::TFJob, "chief", "Succeeded").await;
        assert_eq!(
            finished(&job),
            (
                "TFJobSucceeded".to_owned(),
                format!("TFJob {namespace}/chief successfully completed.")
            )
        );
        assert_eq!(
            job.data["status"]["replicaStatuses"]["Worker"]["succeeded"], 2,
            "{job:?}"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        let worker = pods.get("chief-worker-1").await.expect("worker 1 is kept");
        assert_eq!(
            worker.status.and_then(|s| s.phase).as_deref(),
            Some("Running")
        );
    })
    .await;
}

/// Runs a two-worker TFJob under `cleanPodPolicy: policy` to success (worker 0 succeeds, worker
/// 1 still runs); the names of the pods that remain two seconds after every pod the policy
/// deletes is gone.
async fn pods_left_after_success(policy: &str, deleted: &[&str]) -> Vec<String> {
    let label = format!("clean-{}", policy.to_lowercase());
    let mut left = Vec::new();
    let slot = &mut left;
    in_namespace(&label, |client, namespace| async move {
        let spec = format!("  runPolicy: {{cleanPodPolicy: {policy}}}\n");
        create_job(
            &client,
            &namespace,
            &tfjob("clean", 2, "Never", None, &spec),
        )
        .await;
        let pods = pods(&client, &namespace);
        let mut uids = Vec::new();
        for name in ["clean-worker-0", "clean-worker-1"] {
            uids.push(
                await_phase(&pods, name, "Running")
                    .await
                    .uid()
                    .expect("a uid"),
            );
        }
        end_pod(&pods, "clean-worker-0", 0).await;
        await_last_condition(&client, &namespace, JobKind::TFJob, "clean", "Succeeded").await;
        for (name, uid) in ["clean-worker-0", "clean-worker-1"].iter().zip(&uids) {
            if deleted.iter().any(|gone| gone == name) {
                await_gone(&pods, name, uid).await;
            }
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        let mut names: Vec<String> = pods
            .list(&kube::api::ListParams::default())
            .await
            .expect("pods listed")
            .items
            .iter()
            .map(ResourceExt::name_any)
            .collect();
        names.sort();
        *slot = names;
    })
    .await;
    left
}

/// `cleanPodPolicy: Running` deletes the pod still running at success, keeps the succeeded one.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn clean_pod_policy_running_deletes_only_running_pods() {
    let left = pods_left_after_success("Running", &["clean-worker-1"]).await;
    assert_eq!(left, ["clean-worker-0"]);
}

/// `cleanPodPolicy: All` deletes every pod at success.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn clean_pod_policy_all_deletes_every_pod() {
    let left = pods_left_after_success("All", &["clean-worker-0", "clean-worker-1"]).await;
    assert!(left.is_empty(), "{left:?}");
}

/// `cleanPodPolicy: None` keeps every pod at success.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn clean_pod_policy_none_keeps_every_pod() {
    let left = pods_left_after_success("None", &[]).await;
    assert_eq!(left, ["clean-worker-0", "clean-worker-1"]);
}
