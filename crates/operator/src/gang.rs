//! Gang scheduling (docs/semantics.md §3): the job's PodGroup, for volcano or scheduler-plugins,
//! read and written as a [`DynamicObject`] (neither scheduler's types are a dependency).

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch};
use trainctl_api::TrainingJob;
use trainctl_engine::podgroup::{self, GangScheduler, KIND, PodGroup};
use trainctl_engine::reconcile::PodGroupPhase;

use crate::apply_params;
use crate::context::Context;
use crate::error::Error;
use crate::job;

/// The API resource of `scheduler`'s PodGroups.
#[must_use]
pub fn pod_group_resource(scheduler: &GangScheduler) -> ApiResource {
    let (group, version) = match scheduler {
        GangScheduler::Volcano => ("scheduling.volcano.sh", "v1beta1"),
        GangScheduler::SchedulerPlugins(_) => ("scheduling.x-k8s.io", "v1alpha1"),
    };
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, KIND), "podgroups")
}

/// The phase a PodGroup reports; none yet reads as `Pending` (volcano's first phase).
#[must_use]
pub fn phase(pod_group: &DynamicObject) -> PodGroupPhase {
    match pod_group.data["status"]["phase"]
        .as_str()
        .unwrap_or_default()
    {
        "" | "Pending" => PodGroupPhase::Pending,
        "Inqueue" => PodGroupPhase::Inqueue,
        "Running" => PodGroupPhase::Running,
        "Completed" => PodGroupPhase::Completed,
        _ => PodGroupPhase::Unknown,
    }
}

fn api(ctx: &Context, job: &TrainingJob, scheduler: &GangScheduler) -> Api<DynamicObject> {
    Api::namespaced_with(
        ctx.client.clone(),
        job.namespace(),
        &pod_group_resource(scheduler),
    )
}

/// The phase of the job's PodGroup, or `None` when it does not exist.
pub async fn observe(
    ctx: &Context,
    job: &TrainingJob,
    scheduler: &GangScheduler,
) -> Result<Option<PodGroupPhase>, Error> {
    let found = api(ctx, job, scheduler)
        .get_opt(job.name())
        .await
        .map_err(|source| Error::GetPodGroup {
            job: job::display_name(job),
            source,
        })?;
    Ok(found.as_ref().map(phase))
}

/// Creates the job's PodGroup, or brings it to the job's current spec.
pub async fn ensure(
    ctx: &Context,
    job: &TrainingJob,
    scheduler: &GangScheduler,
) -> Result<(), Error> {
    let pod_group: PodGroup = podgroup::build_pod_group(job, scheduler);
    api(ctx, job, scheduler)
        .patch(job.name(), &apply_params(), &Patch::Apply(&pod_group))
        .await
        .map_err(|source| Error::Apply {
            kind: KIND,
            name: job.name().to_owned(),
            source,
        })?;
    Ok(())
}

/// Deletes the job's PodGroup (the job finished or is suspended); one already gone is deleted.
pub async fn delete(
    ctx: &Context,
    job: &TrainingJob,
    scheduler: &GangScheduler,
) -> Result<(), Error> {
    match api(ctx, job, scheduler)
        .delete(job.name(), &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
        Err(source) => Err(Error::Delete {
            kind: KIND,
            name: job.name().to_owned(),
            source,
        }),
    }
}

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
        assert_eq!(
            phase(&object(serde_json::json!({}))),
            PodGroupPhase::Pending
        );
        assert_eq!(
            phase(&object(serde_json::json!({"phase": "Inqueue"}))),
            PodGroupPhase::Inqueue
        );
        assert_eq!(
            phase(&object(serde_json::json!({"phase": "Strange"}))),
            PodGroupPhase::Unknown
        );
    }
}
