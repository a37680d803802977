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

use super::gang::min_member;
use super::owner::owner_reference;

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
mod tests;
