//! The reconcile of one job: the pipeline every controller runs, each step a module.
//!
//! 1. **read and validate** the job, defaulted; one that cannot be read or is invalid fails
//!    with the reason, and nothing is created for it — [`job`], [`validate`] (pure);
//! 2. **fetch** the job's Pods and Services from the watches' caches ([`children`], found
//!    through [`owners`]) and, under gang scheduling, its PodGroup ([`gang`]);
//! 3. **observe**: translate the Pods and Services into the engine's [`Observed`] —
//!    [`observe`] (pure);
//! 4. **decide**: [`trainctl_engine::reconcile`] with `now` gives a [`Plan`];
//! 5. **apply** the plan: creation of the objects `trainctl render` prints (the refused ones
//!    noted for the next status: [`refusals`]; an elastic PyTorchJob's HorizontalPodAutoscaler:
//!    [`hpa`]), deletions, the status subresource, events (each
//!    replica exit once: [`exits`]; queued and written in the background: [`events`]), the
//!    job's deletion after its TTL — [`apply`];
//! 6. **wait** until the caches show what was created and deleted — [`children`] (the
//!    controller waits, after [`decide_and_apply`]).
//!
//! Level-triggered and idempotent: children have deterministic names, so a reconcile that failed
//! half-way is simply run again.
//!
//! The steps that call the API server take what reconciles share from the
//! [`Context`](context::Context) (the client, the settings of the objects built, the
//! [`metrics`], the event queue, the ledgers of exits and refusals); what can go wrong is an
//! [`Error`](error::Error).
//!
//! Imports go one way: this file (the pipeline) uses the steps, and no step uses it or anything
//! of `crate::runtime`. Among the steps, each uses only those listed before it: the pure ones
//! ([`job`], [`validate`], [`observe`], [`owners`], [`error`]); [`children`] (the caches, over
//! [`owners`]); the ledgers and the event queue ([`refusals`], [`exits`], [`events`]);
//! [`metrics`] (it labels an [`Error`](error::Error)); [`context`] (it holds the ledgers, the
//! queue and the metrics); [`discovery`]; [`gang`] and [`hpa`]; and [`apply`], which uses most
//! of them.
//!
//! What the API server serves is asked once at start ([`discovery`]), by [`gang`] and by the
//! runtime.
//!
//! [`Observed`]: trainctl_engine::Observed
//! [`Plan`]: trainctl_engine::Plan

pub(crate) mod apply;
pub(crate) mod cached_meta;
pub(crate) mod cached_pod;
pub(crate) mod cached_service;
pub(crate) mod children;
pub(crate) mod context;
pub(crate) mod discovery;
pub(crate) mod error;
mod events;
mod exits;
pub(crate) mod gang;
mod hpa;
pub mod job;
pub mod metrics;
mod observe;
pub(crate) mod owners;
mod refusals;
pub mod validate;

use jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::{Resource as _, ResourceExt as _};
use trainctl_api::JobKind;
use trainctl_engine::reconcile::{EventType, JobEvent, Transition};

use children::{Children, Written};
use context::Context;
use error::Error;
use job::JobObject;

/// One reconcile of a job of `kind` as of `now`: read and validate, fetch (from `children`),
/// observe, decide and apply, up to the wait for the caches: what was created and deleted goes
/// into `written`.
#[tracing::instrument(skip_all, fields(%kind, job = %object.name_any()))]
pub(crate) async fn decide_and_apply(
    kind: JobKind,
    object: &JobObject,
    ctx: &Context,
    children: &Children,
    now: Timestamp,
    written: &mut Written,
) -> Result<Action, Error> {
    if object.meta().deletion_timestamp.is_some() {
        // Kubernetes collects the children through their owner references.
        let uid = object.meta().uid.as_deref().unwrap_or_default();
        ctx.exits.forget(uid);
        ctx.refusals.forget(uid);
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
    let (pods, services) = children.of(&job);
    // No restart back-off of our own (`Observed::restart_backoff` stays `NONE`), as upstream:
    // the kubelet backs off in-place restarts, and re-created pods start at once.
    let mut observed = observe::observe(
        &job,
        pods.iter().map(AsRef::as_ref),
        services.iter().map(AsRef::as_ref),
        job::retired_restarts(&job),
    );
    drop((pods, services));
    observed.refused = ctx
        .refusals
        .of(job.metadata().uid.as_deref().unwrap_or_default());
    if let Some(scheduler) = ctx.build.gang_scheduler() {
        observed.gang = Some(gang::observe(ctx, &job, scheduler).await?);
    }
    let plan = trainctl_engine::reconcile(&job, &observed, now);
    tracing::debug!(?plan, "planned");
    apply::apply(ctx, &job, &observed, &plan, written).await?;
    Ok(plan
        .requeue_after
        .map_or_else(Action::await_change, |after| {
            Action::requeue(after.unsigned_abs())
        }))
}

/// Fails a job that cannot be read or is invalid, once, with `why`; nothing is created for it.
async fn refuse(
    kind: JobKind,
    object: &JobObject,
    ctx: &Context,
    why: &str,
    now: Timestamp,
) -> Result<Action, Error> {
    let namespace = object.namespace().unwrap_or_else(|| "default".to_owned());
    let name = object.name_any();
    let previous = object.recorded_status();
    let message = validate::message(kind, &namespace, &name, why);
    if let Some(status) = validate::refused_status(kind, previous.as_ref(), &message, now) {
        tracing::warn!(%message, "refusing the job");
        apply::write_status(ctx, kind, &namespace, &name, &status).await?;
        ctx.metrics
            .transitions(&namespace, kind, &[Transition::Failed]);
        let event = JobEvent::new(EventType::Warning, validate::refused_reason(kind), message);
        let regarding = object.object_ref(&job::api_resource(kind));
        ctx.events.record(&regarding, &event, "Validate", None);
    }
    Ok(Action::await_change())
}
