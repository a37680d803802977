//! Gang scheduling (docs/semantics.md §3): the job's PodGroup, for volcano, scheduler-plugins or
//! Kubernetes' own scheduler (with its Workload), read and written as a [`DynamicObject`] (no
//! scheduler's types are a dependency).

use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PostParams,
};
use serde::Serialize;
use trainctl_api::TrainingJob;
use trainctl_engine::objects::workload::{self, WORKLOAD_KIND};
use trainctl_engine::podgroup::{self, GangScheduler, KIND, PodGroup};
use trainctl_engine::reconcile::{ObservedGang, PodGroupPhase};

use super::context::{Context, apply_params};
use super::error::Error;
use super::job;

/// The condition a `scheduling.k8s.io` PodGroup's scheduler writes.
const SCHEDULED_CONDITION: &str = "PodGroupScheduled";

/// The API resource of `scheduler`'s PodGroups.
#[must_use]
pub fn pod_group_resource(scheduler: &GangScheduler) -> ApiResource {
    let (group, version) = match scheduler {
        GangScheduler::Volcano => ("scheduling.volcano.sh", "v1beta1"),
        GangScheduler::SchedulerPlugins(_) => ("scheduling.x-k8s.io", "v1alpha1"),
        GangScheduler::Kubernetes => (workload::GROUP, workload::VERSION),
    };
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, KIND), KIND_PLURAL)
}

/// The API resource of Kubernetes' Workloads.
#[must_use]
pub fn workload_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(workload::GROUP, workload::VERSION, WORKLOAD_KIND),
        "workloads",
    )
}

/// What the runtime sees of a PodGroup: its phase and, for Kubernetes' own, why the scheduler
/// cannot place it. A volcano group without a phase is `Pending` (volcano's first phase); a
/// `scheduling.k8s.io` group is `Running` once its `PodGroupScheduled` condition is `True`, else
/// `Pending`, and says the condition's reason and message while it is `False`.
#[must_use]
pub fn seen(
    scheduler: &GangScheduler,
    pod_group: &DynamicObject,
) -> (PodGroupPhase, Option<String>) {
    if *scheduler == GangScheduler::Kubernetes {
        let placed = pod_group.data["status"]["conditions"]
            .as_array()
            .and_then(|conditions| {
                conditions
                    .iter()
                    .find(|condition| condition["type"] == SCHEDULED_CONDITION)
            });
        return match placed {
            Some(condition) if condition["status"] == "True" => (PodGroupPhase::Running, None),
            Some(condition) if condition["status"] == "False" => {
                let reason = condition["reason"].as_str().unwrap_or_default();
                let message = condition["message"].as_str().unwrap_or_default();
                let words = match (reason, message) {
                    ("", message) => message.to_owned(),
                    (reason, "") => reason.to_owned(),
                    (reason, message) => format!("{reason}: {message}"),
                };
                (
                    PodGroupPhase::Pending,
                    Some(words).filter(|w| !w.is_empty()),
                )
            }
            _ => (PodGroupPhase::Pending, None),
        };
    }
    let phase = match pod_group.data["status"]["phase"]
        .as_str()
        .unwrap_or_default()
    {
        "" | "Pending" => PodGroupPhase::Pending,
        "Inqueue" => PodGroupPhase::Inqueue,
        "Running" => PodGroupPhase::Running,
        "Completed" => PodGroupPhase::Completed,
        _ => PodGroupPhase::Unknown,
    };
    (phase, None)
}

fn api(ctx: &Context, job: &TrainingJob, resource: &ApiResource) -> Api<DynamicObject> {
    Api::namespaced_with(ctx.client.clone(), job.namespace(), resource)
}

/// The job's PodGroup as the runtime sees it. A `scheduling.k8s.io` PodGroup that is being
/// deleted counts as gone: Kubernetes keeps it (a finalizer) until its pods are gone, and the
/// job's next run waits for it to go before making a new one.
pub async fn observe(
    ctx: &Context,
    job: &TrainingJob,
    scheduler: GangScheduler,
) -> Result<ObservedGang, Error> {
    let found = api(ctx, job, &pod_group_resource(&scheduler))
        .get_opt(job.name())
        .await
        .map_err(|source| Error::GetPodGroup {
            job: job::display_name(job),
            source,
        })?
        .filter(|group| {
            scheduler != GangScheduler::Kubernetes || group.metadata.deletion_timestamp.is_none()
        });
    let (pod_group, unplaced) = match found.as_ref().map(|group| seen(&scheduler, group)) {
        Some((phase, unplaced)) => (Some(phase), unplaced),
        None => (None, None),
    };
    Ok(ObservedGang {
        scheduler,
        pod_group,
        unplaced,
    })
}

/// Creates the job's PodGroup, or brings it to the job's current spec. Kubernetes' own is
/// immutable: its Workload and PodGroup are created when the group is missing, and left as
/// they are otherwise.
pub async fn ensure(ctx: &Context, job: &TrainingJob, gang: &ObservedGang) -> Result<(), Error> {
    // Built only when sent: an existing Kubernetes group (every reconcile of a running job)
    // needs nothing.
    if gang.scheduler == GangScheduler::Kubernetes && gang.pod_group.is_some() {
        return Ok(());
    }
    let pod_group: PodGroup = podgroup::build_pod_group(job, &gang.scheduler);
    if gang.scheduler == GangScheduler::Kubernetes {
        // The Workload first: the API server refuses a PodGroup whose Workload is missing.
        create(
            ctx,
            job,
            &workload_resource(),
            WORKLOAD_KIND,
            &workload::build_workload(job),
        )
        .await?;
        return create(
            ctx,
            job,
            &pod_group_resource(&gang.scheduler),
            KIND,
            &pod_group,
        )
        .await;
    }
    api(ctx, job, &pod_group_resource(&gang.scheduler))
        .patch(job.name(), &apply_params(), &Patch::Apply(&pod_group))
        .await
        .map_err(|source| Error::Apply {
            kind: KIND,
            name: job.name().to_owned(),
            source,
        })?;
    Ok(())
}

/// Creates `object` (named like the job); one that exists already is left as it is (a
/// PodGroup still being deleted: the job's watch of PodGroups brings it back when it is gone).
async fn create(
    ctx: &Context,
    job: &TrainingJob,
    resource: &ApiResource,
    kind: &'static str,
    object: &impl Serialize,
) -> Result<(), Error> {
    let object: DynamicObject = serde_json::to_value(object)
        .and_then(serde_json::from_value)
        .expect("a built object is a Kubernetes object");
    match api(ctx, job, resource)
        .create(&PostParams::default(), &object)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_already_exists() => Ok(()),
        Err(source) => Err(Error::Apply {
            kind,
            name: job.name().to_owned(),
            source,
        }),
    }
}

/// Deletes the job's PodGroup (the job finished or is suspended), and Kubernetes' Workload with
/// it; one already gone is deleted.
pub async fn delete(
    ctx: &Context,
    job: &TrainingJob,
    scheduler: &GangScheduler,
) -> Result<(), Error> {
    delete_named(ctx, job, &pod_group_resource(scheduler), KIND).await?;
    if *scheduler == GangScheduler::Kubernetes {
        delete_named(ctx, job, &workload_resource(), WORKLOAD_KIND).await?;
    }
    Ok(())
}

async fn delete_named(
    ctx: &Context,
    job: &TrainingJob,
    resource: &ApiResource,
    kind: &'static str,
) -> Result<(), Error> {
    match api(ctx, job, resource)
        .delete(job.name(), &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
        Err(source) => Err(Error::Delete {
            kind,
            name: job.name().to_owned(),
            source,
        }),
    }
}

/// Why the gang scheduling the operator was started with cannot work on this cluster.
#[derive(Debug, thiserror::Error)]
pub enum Unusable {
    /// The API server does not serve the scheduler's PodGroups (or Workloads).
    #[error("--gang-scheduler-name {name}: {missing}{advice}")]
    NotServed {
        /// The name the operator was given.
        name: String,
        /// What is not served, in words.
        missing: String,
        /// What to do instead.
        advice: String,
    },
    /// The API server could not be asked.
    #[error(
        "--gang-scheduler-name {name}: cannot ask the API server whether it serves {api_version}: {source}"
    )]
    Discovery {
        /// The name the operator was given.
        name: String,
        /// The API asked about.
        api_version: String,
        /// What the client said.
        #[source]
        source: kube::Error,
    },
}

/// Whether the API server serves `resources` of `api_version` (all of them).
async fn serves(
    client: &kube::Client,
    name: &str,
    api_version: &str,
    resources: &[&str],
) -> Result<bool, Unusable> {
    let served = super::discovery::served_resources(client, api_version)
        .await
        .map_err(|source| Unusable::Discovery {
            name: name.to_owned(),
            api_version: api_version.to_owned(),
            source,
        })?;
    Ok(resources
        .iter()
        .all(|wanted| served.iter().any(|name| name == wanted)))
}

/// Checks, before the operator starts, that the API server serves what `scheduler` needs: a job
/// would otherwise get no pod at all while the log repeats 404s.
pub async fn check_served(
    client: &kube::Client,
    scheduler: &GangScheduler,
) -> Result<(), Unusable> {
    let name = match scheduler {
        GangScheduler::Volcano => podgroup::VOLCANO,
        GangScheduler::Kubernetes => podgroup::KUBERNETES,
        GangScheduler::SchedulerPlugins(name) => name,
    };
    let kubernetes = [KIND_PLURAL, "workloads"];
    let native_served = serves(client, name, workload::API_VERSION, &kubernetes).await?;
    let api_version = pod_group_resource(scheduler).api_version;
    if *scheduler == GangScheduler::Kubernetes {
        if native_served {
            return Ok(());
        }
        return Err(Unusable::NotServed {
            name: name.to_owned(),
            missing: format!(
                "the API server does not serve {api_version} podgroups and workloads, which \
                 Kubernetes' own gang scheduling needs"
            ),
            advice: ": it needs Kubernetes 1.36 or later with the feature gates \
                     GenericWorkload=true,GangScheduling=true on the API server, the controller \
                     manager and the scheduler, and --runtime-config=scheduling.k8s.io/v1alpha2=true \
                     on the API server (docs/operator.md, \"Sharing a cluster\")"
                .to_owned(),
        });
    }
    if serves(client, name, &api_version, &[KIND_PLURAL]).await? {
        return Ok(());
    }
    let whose = match scheduler {
        GangScheduler::Volcano => "volcano's PodGroups (is volcano installed?)".to_owned(),
        _ => format!(
            "scheduler-plugins' PodGroups (any name but `{}` and `{}` means a scheduler-plugins \
             scheduler, as upstream; is its PodGroup CRD installed?)",
            podgroup::VOLCANO,
            podgroup::KUBERNETES
        ),
    };
    let advice = if native_served {
        format!(
            "; this cluster serves Kubernetes' own gang scheduling: use --gang-scheduler-name {}",
            podgroup::KUBERNETES
        )
    } else {
        String::new()
    };
    Err(Unusable::NotServed {
        name: name.to_owned(),
        missing: format!("the API server does not serve {api_version} podgroups, {whose}"),
        advice,
    })
}

/// The plural of every scheduler's PodGroups.
const KIND_PLURAL: &str = "podgroups";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_scheduler_has_the_resource_of_the_pod_group_the_engine_builds() {
        use trainctl_engine::podgroup::{SCHEDULER_PLUGINS_API_VERSION, VOLCANO_API_VERSION};
        let volcano = pod_group_resource(&GangScheduler::Volcano);
        assert_eq!(volcano.api_version, VOLCANO_API_VERSION);
        assert_eq!(volcano.plural, "podgroups");
        let plugins = pod_group_resource(&GangScheduler::SchedulerPlugins("sp".to_owned()));
        assert_eq!(plugins.api_version, SCHEDULER_PLUGINS_API_VERSION);
        let kubernetes = pod_group_resource(&GangScheduler::Kubernetes);
        assert_eq!(kubernetes.api_version, "scheduling.k8s.io/v1alpha2");
        assert_eq!(kubernetes.kind, "PodGroup");
        assert_eq!(
            workload_resource().api_version,
            "scheduling.k8s.io/v1alpha2"
        );
        assert_eq!(workload_resource().plural, "workloads");
    }

    #[test]
    fn a_pod_group_without_a_phase_is_pending() {
        let object = |status: serde_json::Value| -> DynamicObject {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                "metadata": {"name": "mnist"}, "status": status,
            }))
            .expect("an object")
        };
        let volcano = |status| seen(&GangScheduler::Volcano, &object(status));
        assert_eq!(
            volcano(serde_json::json!({})),
            (PodGroupPhase::Pending, None)
        );
        assert_eq!(
            volcano(serde_json::json!({"phase": "Inqueue"})),
            (PodGroupPhase::Inqueue, None)
        );
        assert_eq!(
            volcano(serde_json::json!({"phase": "Strange"})),
            (PodGroupPhase::Unknown, None)
        );
    }

    #[test]
    fn a_kubernetes_pod_group_is_pending_until_scheduled_and_says_why_not() {
        let kubernetes = |conditions: serde_json::Value| {
            let group: DynamicObject = serde_json::from_value(serde_json::json!({
                "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                "metadata": {"name": "b"}, "status": {"conditions": conditions},
            }))
            .expect("an object");
            seen(&GangScheduler::Kubernetes, &group)
        };
        assert_eq!(
            kubernetes(serde_json::json!([])),
            (PodGroupPhase::Pending, None)
        );
        assert_eq!(
            kubernetes(serde_json::json!([{
                "type": "PodGroupScheduled", "status": "False", "reason": "Unschedulable",
                "message": "pod group is unschedulable",
            }])),
            (
                PodGroupPhase::Pending,
                Some("Unschedulable: pod group is unschedulable".to_owned())
            )
        );
        assert_eq!(
            kubernetes(serde_json::json!([
                {"type": "DisruptionTarget", "status": "False"},
                {"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled"},
            ])),
            (PodGroupPhase::Running, None)
        );
    }
}
