//! Kubernetes' own gang scheduling (1.36 and later, `scheduling.k8s.io/v1alpha2`;
//! docs/semantics.md §3): the job's `Workload`, the `PodGroup` made from its template, and the
//! field that ties each pod to that group.
//!
//! As the Kubernetes enhancement proposals (KEP-4671, KEP-5832) ask of a workload controller, the
//! job gets a Workload first (what the job is: one pod group template, gang with `minCount`),
//! then the PodGroup (this run of the job, referring to the template, its policy copied), then
//! pods whose `spec.schedulingGroup.podGroupName` names the group. Both objects are immutable
//! once made; both are named like the job and owned by it (the garbage collector deletes them
//! with the job).

use k8s_openapi::api::core::v1::{PodSchedulingGroup, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};
use trainctl_api::TrainingJob;

use super::owner_reference;
use super::podgroup::min_member;

/// The API group of the Workload and of the PodGroup.
pub const GROUP: &str = "scheduling.k8s.io";
/// The version of that group that Kubernetes 1.36 serves (alpha).
pub const VERSION: &str = "v1alpha2";
/// `apiVersion` of the Workload and of the PodGroup.
pub const API_VERSION: &str = "scheduling.k8s.io/v1alpha2";
/// `kind` of the Workload.
pub const WORKLOAD_KIND: &str = "Workload";
/// The name of the Workload's one pod group template: every replica of the job is one group.
pub const POD_GROUP_TEMPLATE: &str = "replicas";

/// A `scheduling.k8s.io/v1alpha2` Workload: the job's pod group templates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Workload {
    /// Always [`API_VERSION`].
    pub api_version: String,
    /// Always [`WORKLOAD_KIND`].
    pub kind: String,
    /// Name and namespace of the job, the job as controller owner.
    pub metadata: ObjectMeta,
    /// The job and its template.
    pub spec: WorkloadSpec,
}

/// The spec of a Workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpec {
    /// The job the Workload stands for (for tools to link back to it).
    pub controller_ref: TypedLocalObjectReference,
    /// One template, [`POD_GROUP_TEMPLATE`].
    pub pod_group_templates: Vec<PodGroupTemplate>,
}

/// A reference to an object in the same namespace, by API group, kind and name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypedLocalObjectReference {
    /// `kubeflow.org`.
    pub api_group: String,
    /// The job's kind.
    pub kind: String,
    /// The job's name.
    pub name: String,
}

/// A pod group template of a Workload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupTemplate {
    /// The template's name within the Workload.
    pub name: String,
    /// How the group's pods are scheduled.
    pub scheduling_policy: SchedulingPolicy,
}

/// How a group's pods are scheduled: exactly one of the two is set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SchedulingPolicy {
    /// All or nothing: no pod is placed until `minCount` of them can be placed together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gang: Option<GangPolicy>,
    /// Each pod on its own, as without a group (a job with no replica to count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic: Option<BasicPolicy>,
}

/// The gang policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GangPolicy {
    /// Pods that must be placeable together for any of them to be placed; at least 1.
    pub min_count: i32,
}

/// The basic policy, which has no field.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BasicPolicy {}

/// A `scheduling.k8s.io/v1alpha2` PodGroup: one run of the job's group of pods (built by
/// [`super::podgroup::build_pod_group`], as the other schedulers' groups).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubernetesPodGroup {
    /// Always [`API_VERSION`].
    pub api_version: String,
    /// Always `PodGroup`.
    pub kind: String,
    /// Name and namespace of the job, the job's annotations, the job as controller owner.
    pub metadata: ObjectMeta,
    /// The template it was made from and that template's policy.
    pub spec: KubernetesPodGroupSpec,
}

/// The spec of a `scheduling.k8s.io` PodGroup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubernetesPodGroupSpec {
    /// The Workload's template the group was made from.
    pub pod_group_template_ref: PodGroupTemplateReference,
    /// The template's policy, copied.
    pub scheduling_policy: SchedulingPolicy,
}

/// Where a PodGroup's template is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupTemplateReference {
    /// In a Workload.
    pub workload: WorkloadTemplateReference,
}

/// A Workload's pod group template, by names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadTemplateReference {
    /// The Workload.
    pub workload_name: String,
    /// The template within it.
    pub pod_group_template_name: String,
}

/// The job's scheduling policy: gang with `minCount` = `schedulingPolicy.minAvailable`, else
/// every replica; basic for a job with no replica (`minCount` must be at least 1).
#[must_use]
pub fn scheduling_policy(job: &TrainingJob) -> SchedulingPolicy {
    let min_count = min_member(job);
    if min_count >= 1 {
        SchedulingPolicy {
            gang: Some(GangPolicy { min_count }),
            basic: None,
        }
    } else {
        SchedulingPolicy {
            gang: None,
            basic: Some(BasicPolicy {}),
        }
    }
}

/// The job's Workload: named like the job, owned by it, one template.
#[must_use]
pub fn build_workload(job: &TrainingJob) -> Workload {
    Workload {
        api_version: API_VERSION.to_owned(),
        kind: WORKLOAD_KIND.to_owned(),
        metadata: ObjectMeta {
            name: Some(job.name().to_owned()),
            namespace: Some(job.namespace().to_owned()),
            owner_references: Some(vec![owner_reference(job)]),
            ..ObjectMeta::default()
        },
        spec: WorkloadSpec {
            controller_ref: TypedLocalObjectReference {
                api_group: trainctl_api::GROUP.to_owned(),
                kind: job.kind().as_str().to_owned(),
                name: job.name().to_owned(),
            },
            pod_group_templates: vec![PodGroupTemplate {
                name: POD_GROUP_TEMPLATE.to_owned(),
                scheduling_policy: scheduling_policy(job),
            }],
        },
    }
}

/// The spec of the job's PodGroup: made from the Workload's template, its policy copied.
#[must_use]
pub fn pod_group_spec(job: &TrainingJob) -> KubernetesPodGroupSpec {
    KubernetesPodGroupSpec {
        pod_group_template_ref: PodGroupTemplateReference {
            workload: WorkloadTemplateReference {
                workload_name: job.name().to_owned(),
                pod_group_template_name: POD_GROUP_TEMPLATE.to_owned(),
            },
        },
        scheduling_policy: scheduling_policy(job),
    }
}

/// Ties a pod to the job's PodGroup (`spec.schedulingGroup.podGroupName`). The pod keeps its
/// scheduler: Kubernetes' own scheduler places gangs.
pub fn decorate_pod(spec: &mut PodSpec, job: &TrainingJob) {
    spec.scheduling_group = Some(PodSchedulingGroup {
        pod_group_name: Some(job.name().to_owned()),
    });
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use trainctl_api::ReplicaType;

    use crate::objects::podgroup::GangScheduler;
    use crate::objects::{BuildOptions, build_objects, build_pod};
    use crate::test_jobs::load_job;

    const JOB: &str = r"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: a
  namespace: team
  uid: '42'
  annotations: {team: vision}
spec:
  runPolicy:
    schedulingPolicy: {minAvailable: 3, queue: ignored, priorityClass: ignored}
  pytorchReplicaSpecs:
    Master:
      template: {spec: {containers: [{name: pytorch, image: t}]}}
    Worker:
      replicas: 3
      template: {spec: {schedulerName: mine, containers: [{name: pytorch, image: t}]}}
";

    fn kubernetes() -> BuildOptions {
        BuildOptions {
            gang_scheduler: Some("kubernetes".to_owned()),
            ..BuildOptions::default()
        }
    }

    fn owner() -> serde_json::Value {
        json!([{
            "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "a", "uid": "42",
            "controller": true, "blockOwnerDeletion": true,
        }])
    }

    #[test]
    fn kubernetes_is_its_own_gang_scheduler_and_other_names_stay_scheduler_plugins() {
        assert_eq!(
            GangScheduler::from_name("kubernetes"),
            Some(GangScheduler::Kubernetes)
        );
        assert_eq!(
            GangScheduler::from_name("default-scheduler"),
            Some(GangScheduler::SchedulerPlugins(
                "default-scheduler".to_owned()
            ))
        );
    }

    #[test]
    fn the_workload_names_the_job_and_holds_one_gang_template() {
        let objects = build_objects(&load_job(JOB), &kubernetes());
        assert_eq!(
            serde_json::to_value(objects.workload.expect("a Workload")).expect("serializable"),
            json!({
                "apiVersion": "scheduling.k8s.io/v1alpha2",
                "kind": "Workload",
                "metadata": {"name": "a", "namespace": "team", "ownerReferences": owner()},
                "spec": {
                    "controllerRef": {"apiGroup": "kubeflow.org", "kind": "PyTorchJob", "name": "a"},
                    "podGroupTemplates": [
                        {"name": "replicas", "schedulingPolicy": {"gang": {"minCount": 3}}}
                    ]
                }
            })
        );
    }

    #[test]
    fn the_pod_group_is_made_from_the_template_with_its_policy_copied() {
        let objects = build_objects(&load_job(JOB), &kubernetes());
        assert_eq!(
            serde_json::to_value(objects.pod_group.expect("a PodGroup")).expect("serializable"),
            json!({
                "apiVersion": "scheduling.k8s.io/v1alpha2",
                "kind": "PodGroup",
                "metadata": {
                    "name": "a", "namespace": "team", "annotations": {"team": "vision"},
                    "ownerReferences": owner()
                },
                "spec": {
                    "podGroupTemplateRef": {
                        "workload": {"workloadName": "a", "podGroupTemplateName": "replicas"}
                    },
                    "schedulingPolicy": {"gang": {"minCount": 3}}
                }
            })
        );
    }

    #[test]
    fn min_count_is_every_replica_without_min_available_and_basic_for_min_available_0() {
        let every = load_job(&JOB.replace("minAvailable: 3, ", ""));
        assert_eq!(
            serde_json::to_value(super::scheduling_policy(&every)).expect("serializable"),
            json!({"gang": {"minCount": 4}})
        );
        let none = load_job(&JOB.replace("minAvailable: 3", "minAvailable: 0"));
        assert_eq!(
            serde_json::to_value(super::scheduling_policy(&none)).expect("serializable"),
            json!({"basic": {}})
        );
    }

    #[test]
    fn pods_name_the_group_and_keep_their_scheduler() {
        let job = load_job(JOB);
        let master = build_pod(&job, &ReplicaType::Master, 0, &kubernetes()).expect("a Master");
        let spec = serde_json::to_value(master.spec).expect("serializable");
        assert_eq!(spec["schedulingGroup"], json!({"podGroupName": "a"}));
        assert_eq!(spec.get("schedulerName"), None, "the default scheduler");
        let worker = build_pod(&job, &ReplicaType::Worker, 2, &kubernetes()).expect("a Worker");
        let spec = worker.spec.expect("a spec");
        assert_eq!(spec.scheduler_name.as_deref(), Some("mine"));
        assert_eq!(
            spec.scheduling_group.and_then(|group| group.pod_group_name),
            Some("a".to_owned())
        );
        assert_eq!(
            master
                .metadata
                .labels
                .map(|l| l.contains_key("scheduling.x-k8s.io/pod-group")),
            Some(false)
        );
    }

    #[test]
    fn other_gang_schedulers_get_no_workload() {
        for name in ["volcano", "coscheduler"] {
            let options = BuildOptions {
                gang_scheduler: Some(name.to_owned()),
                ..BuildOptions::default()
            };
            assert_eq!(build_objects(&load_job(JOB), &options).workload, None);
        }
    }
}
