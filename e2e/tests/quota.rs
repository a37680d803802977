//! A job that a `ResourceQuota` refuses, on a real control plane against the operator
//! `scripts/e2e` runs: the job says why its replicas are missing (docs/operator.md, "Where the
//! objects differ from upstream's").

use k8s_openapi::api::core::v1::{Pod, ResourceQuota};
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, PostParams};
use kube::runtime::wait::await_condition;
use serde_json::json;
use trainctl_api::JobKind;
use trainctl_e2e::{await_events, await_job, create_job, in_namespace, kubectl, within};

/// Three workers that run until deleted (the image is `trainctl_e2e::IMAGE`; kwok runs none).
const CAPPED: &str = "\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: capped}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 3
      restartPolicy: Never
      template:
        spec:
          containers: [{name: tensorflow, image: 'busybox:1.36'}]
";

/// A `ResourceQuota` of one pod refuses two of a three-worker job's pods: the job's events carry
/// `FailedCreatePod` with the API server's `exceeded quota` words, and so does its `Created`
/// condition; `kubectl describe` shows both.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn a_resource_quota_refusal_is_reported_on_the_job() {
    in_namespace("quota", |client, namespace| async move {
        let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), &namespace);
        let quota: ResourceQuota = serde_json::from_value(json!({
            "metadata": {"name": "one-pod"},
            "spec": {"hard": {"pods": "1"}},
        }))
        .expect("a quota");
        quotas
            .create(&PostParams::default(), &quota)
            .await
            .expect("the quota is created");
        within(
            "the quota to be counted",
            await_condition(
                quotas.clone(),
                "one-pod",
                |quota: Option<&ResourceQuota>| {
                    quota
                        .and_then(|quota| quota.status.as_ref())
                        .and_then(|status| status.hard.as_ref())
                        .is_some_and(|hard| hard.contains_key("pods"))
                },
            ),
        )
        .await
        .expect("the watch works");
        create_job(&client, &namespace, CAPPED).await;
        let refused = |events: &[(String, String, String)]| {
            events.iter().any(|(type_, reason, note)| {
                type_ == "Warning"
                    && reason == "FailedCreatePod"
                    && note.starts_with("Error creating: ")
                    && note.contains("exceeded quota: one-pod")
            })
        };
        await_events(
            &client,
            &namespace,
            "capped",
            "FailedCreatePod: exceeded quota",
            refused,
        )
        .await;
        let admitted = Api::<Pod>::namespaced(client.clone(), &namespace)
            .list(&kube::api::ListParams::default())
            .await
            .expect("pods listed");
        let admitted: Vec<String> = admitted.items.iter().map(ResourceExt::name_any).collect();
        assert_eq!(admitted.len(), 1, "the quota admits one pod: {admitted:?}");
        // The job says why too (upstream's did not): the Created condition names the first pod
        // the quota refused (the three are created at once: any one may be the one admitted)
        // with the quota's words, and counts the other.
        let refused = (0..3)
            .map(|index| format!("capped-worker-{index}"))
            .find(|name| !admitted.contains(name))
            .expect("two were refused");
        let why = format!(
            "TFJob capped is created. Pending: {refused} cannot be created (pods \"{refused}\" is \
             forbidden: exceeded quota: one-pod, requested: pods=1, used: pods=1, limited: \
             pods=1); 1 more cannot be created."
        );
        let says_why = |job: Option<&DynamicObject>| {
            job.and_then(|job| job.data["status"]["conditions"].as_array())
                .is_some_and(|conditions| conditions.iter().any(|c| c["message"] == *why))
        };
        let job = await_job(
            &client,
            &namespace,
            JobKind::TFJob,
            "capped",
            "to say why",
            says_why,
        )
        .await;
        assert_eq!(job.data["status"]["conditions"][0]["type"], "Created");
        assert_eq!(job.data["status"]["replicaStatuses"]["Worker"]["active"], 1);
        let described = kubectl(&["-n", &namespace, "describe", "tfjob", "capped"]);
        assert!(
            described.contains("FailedCreatePod") && described.contains(&why),
            "{described}"
        );
    })
    .await;
}
