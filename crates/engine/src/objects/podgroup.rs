//! Gang scheduling (docs/semantics.md §3): the PodGroup of a job, for volcano, the
//! scheduler-plugins coscheduling plugin or Kubernetes' own scheduler ([`super::workload`]), and
//! the fields that tie each pod to it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};
use trainctl_api::{ReplicaSpec, ReplicaType, TrainingJob};

use super::owner::owner_reference;
use super::workload::{self, KubernetesPodGroup};

pub use super::gang::min_member;
use trainctl_api::quantity::Amount;

/// The gang-scheduler name that selects volcano.
pub const VOLCANO: &str = "volcano";
/// The gang-scheduler name that selects Kubernetes' own gang scheduling; any name other than
/// this one and [`VOLCANO`] selects scheduler-plugins, as upstream.
pub const KUBERNETES: &str = "kubernetes";
/// `apiVersion` of volcano's PodGroup.
pub const VOLCANO_API_VERSION: &str = "scheduling.volcano.sh/v1beta1";
/// `apiVersion` of scheduler-plugins' PodGroup.
pub const SCHEDULER_PLUGINS_API_VERSION: &str = "scheduling.x-k8s.io/v1alpha1";
/// `kind` of both PodGroups.
pub const KIND: &str = "PodGroup";
/// The volcano queue of a job that names none.
pub const DEFAULT_VOLCANO_QUEUE: &str = "default";
/// Pod annotation naming the volcano PodGroup.
pub const VOLCANO_GROUP_NAME_ANNOTATION: &str = "scheduling.k8s.io/group-name";
/// Pod annotation naming the volcano task (the lowercase replica type).
pub const VOLCANO_TASK_SPEC_ANNOTATION: &str = "volcano.sh/task-spec";
/// Pod label naming the scheduler-plugins PodGroup.
pub const SCHEDULER_PLUGINS_POD_GROUP_LABEL: &str = "scheduling.x-k8s.io/pod-group";

/// Which gang scheduler the operator was started with (`--gang-scheduler-name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GangScheduler {
    /// Volcano (`volcano`).
    Volcano,
    /// The scheduler-plugins coscheduling plugin, under the scheduler name given.
    SchedulerPlugins(String),
    /// Kubernetes' own scheduler (`kubernetes`): `scheduling.k8s.io/v1alpha2` Workload and
    /// PodGroup, 1.36 and later with the `GenericWorkload` and `GangScheduling` feature gates.
    Kubernetes,
}

impl GangScheduler {
    /// The scheduler for a `--gang-scheduler-name`; `None` for an empty name (no gang scheduling).
    #[must_use]
    pub fn from_name(name: &str) -> Option<GangScheduler> {
        match name {
            "" => None,
            VOLCANO => Some(GangScheduler::Volcano),
            KUBERNETES => Some(GangScheduler::Kubernetes),
            other => Some(GangScheduler::SchedulerPlugins(other.to_owned())),
        }
    }

    /// The `schedulerName` pods get unless their template names a scheduler; `None` for
    /// Kubernetes' own, which is the default scheduler.
    #[must_use]
    pub fn scheduler_name(&self) -> Option<&str> {
        match self {
            GangScheduler::Volcano => Some(VOLCANO),
            GangScheduler::SchedulerPlugins(name) => Some(name),
            GangScheduler::Kubernetes => None,
        }
    }
}

/// The PodGroup of a job, in the flavour of its gang scheduler.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum PodGroup {
    /// `scheduling.volcano.sh/v1beta1` PodGroup.
    Volcano(VolcanoPodGroup),
    /// `scheduling.x-k8s.io/v1alpha1` PodGroup.
    SchedulerPlugins(SchedulerPluginsPodGroup),
    /// `scheduling.k8s.io/v1alpha2` PodGroup.
    Kubernetes(KubernetesPodGroup),
}

impl PodGroup {
    /// The PodGroup's metadata.
    #[must_use]
    pub fn metadata(&self) -> &ObjectMeta {
        match self {
            PodGroup::Volcano(group) => &group.metadata,
            PodGroup::SchedulerPlugins(group) => &group.metadata,
            PodGroup::Kubernetes(group) => &group.metadata,
        }
    }
}

/// A volcano PodGroup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VolcanoPodGroup {
    /// Always [`VOLCANO_API_VERSION`].
    pub api_version: String,
    /// Always [`KIND`].
    pub kind: String,
    /// Name and namespace of the job, the job's annotations, the job as controller owner.
    pub metadata: ObjectMeta,
    /// What the gang needs.
    pub spec: VolcanoPodGroupSpec,
}

/// The spec of a volcano PodGroup.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VolcanoPodGroupSpec {
    /// Pods that must be schedulable together.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub min_member: i32,
    /// The volcano queue.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub queue: String,
    /// Priority class of the gang.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub priority_class_name: String,
    /// Resources the first `minMember` pods need together.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub min_resources: BTreeMap<String, Quantity>,
}

/// A scheduler-plugins (coscheduling) PodGroup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SchedulerPluginsPodGroup {
    /// Always [`SCHEDULER_PLUGINS_API_VERSION`].
    pub api_version: String,
    /// Always [`KIND`].
    pub kind: String,
    /// Name and namespace of the job, the job's annotations, the job as controller owner.
    pub metadata: ObjectMeta,
    /// What the gang needs.
    pub spec: SchedulerPluginsPodGroupSpec,
}

/// The spec of a scheduler-plugins PodGroup.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SchedulerPluginsPodGroupSpec {
    /// Pods that must be schedulable together.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub min_member: i32,
    /// Resources the first `minMember` pods need together.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub min_resources: BTreeMap<String, Quantity>,
    /// Seconds the gang may wait to be scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_timeout_seconds: Option<i32>,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// `schedulingPolicy.minResources`, else the sum of what the first `min_member` pods request.
///
/// Upstream orders replica types by their priority class's value, which only the cluster knows;
/// without it every type ranks equally and we take them in the kind's canonical order (the
/// coordinating type first: Chief, Master, Launcher). A container's need for a resource is its
/// request, else its limit (what the API server defaults the request to).
#[must_use]
pub fn min_resources(job: &TrainingJob, min_member: i32) -> BTreeMap<String, Quantity> {
    if let Some(given) = job
        .run_policy()
        .scheduling_policy
        .as_ref()
        .and_then(|policy| policy.min_resources.clone())
    {
        return given;
    }
    let specs = job.replica_specs();
    let canonical = job.kind().replica_types();
    let ordered = canonical
        .iter()
        .filter_map(|replica_type| specs.get(replica_type))
        .chain(
            specs
                .iter()
                .filter(|(replica_type, _)| !canonical.contains(replica_type))
                .map(|(_, spec)| spec),
        );
    let mut totals: BTreeMap<String, Amount> = BTreeMap::new();
    let mut counted = 0;
    for spec in ordered {
        let pods = spec
            .replicas_or_default()
            .min(min_member.saturating_sub(counted))
            .max(0);
        counted += pods;
        for (resource, amount) in pod_needs(spec) {
            for _ in 0..pods {
                let sum = match totals.get(&resource) {
                    Some(total) => total.checked_add(amount),
                    None => Some(amount),
                };
                if let Some(sum) = sum {
                    totals.insert(resource.clone(), sum);
                }
            }
        }
    }
    totals
        .into_iter()
        .map(|(resource, amount)| (resource, Quantity(amount.to_string())))
        .collect()
}

/// What one pod of a replica spec needs, per resource, summed over its containers.
fn pod_needs(spec: &ReplicaSpec) -> Vec<(String, Amount)> {
    let mut needs = Vec::new();
    for container in spec.containers() {
        let Some(resources) = &container.resources else {
            continue;
        };
        let requests = resources.requests.clone().unwrap_or_default();
        let limits = resources.limits.clone().unwrap_or_default();
        let mut effective = limits;
        effective.extend(requests);
        needs.extend(
            effective
                .into_iter()
                .filter_map(|(name, quantity)| Some((name, Amount::parse(&quantity.0).ok()?))),
        );
    }
    needs
}

/// The job's PodGroup for `scheduler`: named like the job, in its namespace, with its annotations.
#[must_use]
pub fn build_pod_group(job: &TrainingJob, scheduler: &GangScheduler) -> PodGroup {
    let metadata = ObjectMeta {
        name: Some(job.name().to_owned()),
        namespace: Some(job.namespace().to_owned()),
        annotations: job.metadata().annotations.clone().filter(|a| !a.is_empty()),
        owner_references: Some(vec![owner_reference(job)]),
        ..ObjectMeta::default()
    };
    let policy = job
        .run_policy()
        .scheduling_policy
        .clone()
        .unwrap_or_default();
    let min_member = min_member(job);
    match scheduler {
        GangScheduler::Volcano => PodGroup::Volcano(VolcanoPodGroup {
            api_version: VOLCANO_API_VERSION.to_owned(),
            kind: KIND.to_owned(),
            metadata,
            spec: VolcanoPodGroupSpec {
                min_member,
                queue: policy
                    .queue
                    .filter(|q| !q.is_empty())
                    .unwrap_or_else(|| DEFAULT_VOLCANO_QUEUE.to_owned()),
                priority_class_name: policy.priority_class.unwrap_or_default(),
                min_resources: min_resources(job, min_member),
            },
        }),
        GangScheduler::SchedulerPlugins(_) => {
            PodGroup::SchedulerPlugins(SchedulerPluginsPodGroup {
                api_version: SCHEDULER_PLUGINS_API_VERSION.to_owned(),
                kind: KIND.to_owned(),
                metadata,
                spec: SchedulerPluginsPodGroupSpec {
                    min_member,
                    min_resources: min_resources(job, min_member),
                    schedule_timeout_seconds: policy.schedule_timeout_seconds,
                },
            })
        }
        GangScheduler::Kubernetes => PodGroup::Kubernetes(KubernetesPodGroup {
            api_version: workload::API_VERSION.to_owned(),
            kind: KIND.to_owned(),
            metadata,
            spec: workload::pod_group_spec(job),
        }),
    }
}

/// Ties a pod to the job's PodGroup: the scheduler name (unless the template names one) and the
/// group annotation (volcano, with the task) or label (scheduler-plugins); under Kubernetes' own
/// gang scheduling, `spec.schedulingGroup`.
pub fn decorate_pod(
    metadata: &mut ObjectMeta,
    spec: &mut PodSpec,
    job: &TrainingJob,
    replica_type: &ReplicaType,
    scheduler: &GangScheduler,
) {
    if let Some(name) = scheduler.scheduler_name()
        && spec.scheduler_name.as_deref().is_none_or(str::is_empty)
    {
        spec.scheduler_name = Some(name.to_owned());
    }
    match scheduler {
        GangScheduler::Volcano => {
            let annotations = metadata.annotations.get_or_insert_with(BTreeMap::new);
            annotations.insert(
                VOLCANO_GROUP_NAME_ANNOTATION.to_owned(),
                job.name().to_owned(),
            );
            annotations.insert(
                VOLCANO_TASK_SPEC_ANNOTATION.to_owned(),
                replica_type.lowercase(),
            );
        }
        GangScheduler::SchedulerPlugins(_) => {
            metadata.labels.get_or_insert_with(BTreeMap::new).insert(
                SCHEDULER_PLUGINS_POD_GROUP_LABEL.to_owned(),
                job.name().to_owned(),
            );
        }
        GangScheduler::Kubernetes => workload::decorate_pod(spec, job),
    }
}

#[cfg(test)]
mod tests;
