//! The controllers: one kube-runtime `Controller` per job kind, watching the kind's jobs (as
//! [`DynamicObject`]s, see [`crate::job`]) and the Pods and Services they own, and the reconcile
//! they all run.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use futures_util::future;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, DynamicObject, ListParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Resource as _, ResourceExt as _};
use trainctl_api::{JobKind, JobStatus, TrainingJob};
use trainctl_engine::naming::{self, OPERATOR_NAME_LABEL};
use trainctl_engine::reconcile::{EventType, JobEvent, ObservedGang};

use crate::context::Context;
use crate::error::Error;
use crate::{apply, gang, job, observe, validate};

/// How long the controller waits before retrying a job whose reconcile failed.
pub const RETRY_AFTER: Duration = Duration::from_secs(5);

/// Runs the controllers of every kind until their watches end; `namespace` limits them to one
/// namespace (`None`: the whole cluster).
pub async fn run(ctx: Arc<Context>, namespace: Option<&str>) {
    let controllers = JobKind::ALL.map(|kind| controller(kind, Arc::clone(&ctx), namespace));
    future::join_all(controllers).await;
}

/// The controller of one kind: reconciles a job when it changes, when a pod or service it
/// controls changes, and when its plan asks to be woken up.
async fn controller(kind: JobKind, ctx: Arc<Context>, namespace: Option<&str>) {
    let resource = job::api_resource(kind);
    let client = ctx.client.clone();
    let (jobs, pods, services) = match namespace {
        Some(namespace) => (
            Api::namespaced_with(client.clone(), namespace, &resource),
            Api::<Pod>::namespaced(client.clone(), namespace),
            Api::<Service>::namespaced(client, namespace),
        ),
        None => (
            Api::all_with(client.clone(), &resource),
            Api::<Pod>::all(client.clone()),
            Api::<Service>::all(client),
        ),
    };
    // Only this kind's children are cached, not every pod of the cluster.
    let children = watcher::Config::default()
        .labels(&format!("{OPERATOR_NAME_LABEL}={}", kind.operator_name()));
    let mut controller = Controller::new_with(jobs, watcher::Config::default(), resource)
        .owns(pods, children.clone())
        .owns(services, children);
    if let Some(scheduler) = ctx.build.gang_scheduler() {
        // Volcano admitting the gang (its PodGroup leaving `Pending`) is what lets pods be created.
        let resource = gang::pod_group_resource(&scheduler);
        let pod_groups: Api<DynamicObject> = match namespace {
            Some(namespace) => Api::namespaced_with(ctx.client.clone(), namespace, &resource),
            None => Api::all_with(ctx.client.clone(), &resource),
        };
        controller = controller.owns_with(pod_groups, resource, watcher::Config::default());
    }
    controller
        .run(
            move |object, ctx| reconcile(kind, object, ctx),
            error_policy,
            ctx,
        )
        .for_each(|outcome| async move {
            match outcome {
                Ok((job, _)) => tracing::debug!(%kind, job = %job.name, "reconciled"),
                Err(error) => tracing::warn!(%kind, %error, "reconcile failed"),
            }
        })
        .await;
}

/// Retries a failed reconcile after [`RETRY_AFTER`].
#[must_use]
#[expect(
    clippy::needless_pass_by_value,
    reason = "the signature kube-runtime's Controller::run asks for"
)]
pub fn error_policy(object: Arc<DynamicObject>, error: &Error, _ctx: Arc<Context>) -> Action {
    tracing::warn!(
        job = %object.name_any(),
        operation = error.metric_label(),
        %error,
        "reconcile failed; retrying"
    );
    Action::requeue(RETRY_AFTER)
}

/// Reconciles one job of `kind` now.
pub async fn reconcile(
    kind: JobKind,
    object: Arc<DynamicObject>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    reconcile_at(kind, &object, &ctx, Timestamp::now()).await
}

/// Reconciles one job of `kind` as of `now`: read and validate, fetch, observe, decide, apply.
#[tracing::instrument(skip_all, fields(%kind, job = %object.name_any()))]
pub async fn reconcile_at(
    kind: JobKind,
    object: &DynamicObject,
    ctx: &Context,
    now: Timestamp,
) -> Result<Action, Error> {
    if object.meta().deletion_timestamp.is_some() {
        // Kubernetes collects the children through their owner references.
        return Ok(Action::await_change());
    }
    let job = match job::read(kind, object) {
        Ok(job) => job,
        Err(why) => return refuse(kind, object, ctx, &why, now).await,
    };
    if job.run_policy().is_managed_elsewhere() {
        // MultiKueue owns the job: not even a refusal is ours to write.
        return Ok(Action::await_change());
    }
    if let Some(why) = validate::errors(&job) {
        return refuse(kind, object, ctx, &why, now).await;
    }
    let (pods, services) = fetch(ctx, &job).await?;
    // No restart back-off of our own (`Observed::restart_backoff` stays `NONE`), as upstream:
    // the kubelet backs off in-place restarts, and re-created pods start at once.
    let mut observed = observe::observe(&job, &pods, &services, job::retired_restarts(&job));
    if let Some(scheduler) = ctx.build.gang_scheduler() {
        let pod_group = gang::observe(ctx, &job, &scheduler).await?;
        observed.gang = Some(ObservedGang {
            scheduler,
            pod_group,
        });
    }
    let plan = trainctl_engine::reconcile(&job, &observed, now);
    tracing::debug!(?plan, "planned");
    apply::apply(ctx, &job, &observed, &plan).await?;
    Ok(plan
        .requeue_after
        .map_or_else(Action::await_change, |after| {
            Action::requeue(after.unsigned_abs())
        }))
}

/// Lists the job's pods and services by its labels (the API server's view, not a cache: the
/// plan must not create what exists).
async fn fetch(ctx: &Context, job: &TrainingJob) -> Result<(Vec<Pod>, Vec<Service>), Error> {
    let selector = naming::job_labels(job)
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join(",");
    let params = ListParams::default().labels(&selector);
    let pods = Api::<Pod>::namespaced(ctx.client.clone(), job.namespace())
        .list(&params)
        .await
        .map_err(|source| Error::ListPods {
            job: job::display_name(job),
            source,
        })?;
    let services = Api::<Service>::namespaced(ctx.client.clone(), job.namespace())
        .list(&params)
        .await
        .map_err(|source| Error::ListServices {
            job: job::display_name(job),
            source,
        })?;
    Ok((pods.items, services.items))
}

/// Fails a job that cannot be read or is invalid, once, with `why`; nothing is created for it.
async fn refuse(
    kind: JobKind,
    object: &DynamicObject,
    ctx: &Context,
    why: &str,
    now: Timestamp,
) -> Result<Action, Error> {
    let namespace = object.namespace().unwrap_or_else(|| "default".to_owned());
    let name = object.name_any();
    let previous: Option<JobStatus> = object
        .data
        .get("status")
        .and_then(|status| serde_json::from_value(status.clone()).ok());
    let message = validate::message(kind, &namespace, &name, why);
    if let Some(status) = validate::refused_status(kind, previous.as_ref(), &message, now) {
        tracing::warn!(%message, "refusing the job");
        apply::write_status(ctx, kind, &namespace, &name, &status).await?;
        let event = JobEvent::new(EventType::Warning, validate::refused_reason(kind), message);
        let regarding = object.object_ref(&job::api_resource(kind));
        ctx.publish(&regarding, &event, "Validate", None).await;
    }
    Ok(Action::await_change())
}
