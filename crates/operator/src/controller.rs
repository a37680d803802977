//! The controllers: one kube-runtime `Controller` per job kind, watching the kind's jobs (as
//! [`JobObject`]s, see [`crate::job`]) and the Pods and Services they own, and the reconcile
//! they all run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future;
use futures_util::{StreamExt as _, TryStreamExt as _};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PartialObjectMeta};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Resource as _, ResourceExt as _};
use tokio::sync::{Semaphore, watch};
use trainctl_api::{JobKind, TrainingJob};
use trainctl_engine::naming::{self, OPERATOR_NAME_LABEL};
use trainctl_engine::reconcile::{EventType, JobEvent, ObservedGang, Transition};

use crate::context::Context;
use crate::error::Error;
use crate::health::Health;
use crate::job::JobObject;
use crate::watch::on_its_own;
use crate::{apply, gang, job, observe, validate};

/// How long the controller waits before retrying a job whose reconcile failed.
pub const RETRY_AFTER: Duration = Duration::from_secs(5);

/// What the controllers watch and how many reconciles they run at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// The kinds that get a controller.
    pub kinds: Vec<JobKind>,
    /// The namespaces watched; empty: every namespace.
    pub namespaces: Vec<String>,
    /// How many reconciles of one kind run at once, across its namespaces.
    pub threads: usize,
}

/// Runs one controller per kind and namespace of `scope` until `stopping` turns true (then
/// they take no new work and return once their in-flight reconciles have finished). `health`
/// hears when every job cache has had its first list, and tracks the reconciles in flight.
pub async fn run(
    ctx: Arc<Context>,
    scope: &Scope,
    stopping: watch::Receiver<bool>,
    health: Arc<Health>,
) {
    let mut stores = Vec::new();
    let mut controllers = Vec::new();
    let namespaces: Vec<Option<&str>> = if scope.namespaces.is_empty() {
        vec![None]
    } else {
        scope
            .namespaces
            .iter()
            .map(|ns| Some(ns.as_str()))
            .collect()
    };
    for &kind in &scope.kinds {
        // One gate per kind, shared by its namespaces: `--controller-threads` is per kind, as
        // upstream's MaxConcurrentReconciles is per controller.
        let gate = Arc::new(Semaphore::new(scope.threads.max(1)));
        for &namespace in &namespaces {
            let lane = Lane {
                kind,
                gate: Arc::clone(&gate),
                stopping: stopping.clone(),
                health: Arc::clone(&health),
            };
            let (store, controller) = controller(lane, Arc::clone(&ctx), namespace);
            stores.push(store);
            controllers.push(controller);
        }
    }
    let synced = async {
        let ready = future::join_all(stores.iter().map(Store::wait_until_ready)).await;
        if ready.iter().all(Result::is_ok) {
            tracing::info!("the job caches are synced");
            health.caches_synced();
        }
    };
    future::join(future::join_all(controllers), synced).await;
}

/// What the reconciles of one kind share: the gate bounding how many run at once, the stop
/// signal, the health tracker.
#[derive(Clone)]
struct Lane {
    kind: JobKind,
    gate: Arc<Semaphore>,
    stopping: watch::Receiver<bool>,
    health: Arc<Health>,
}

/// Resolves once `stopping` turns true (or its sender is gone).
async fn stopped(mut stopping: watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stopping| *stopping).await;
}

/// The controller of one kind in one namespace (`None`: all): reconciles a job when it
/// changes, when a pod or service it controls changes, and when its plan asks to be woken up.
/// Returns its job cache and the controller, to be awaited.
fn controller(
    lane: Lane,
    ctx: Arc<Context>,
    namespace: Option<&str>,
) -> (Store<JobObject>, impl Future<Output = ()> + use<>) {
    let kind = lane.kind;
    let resource = job::api_resource(kind);
    let client = ctx.client.clone();
    let (jobs, pods, services) = match namespace {
        Some(namespace) => (
            Api::<JobObject>::namespaced_with(client.clone(), namespace, &resource),
            Api::<PartialObjectMeta<Pod>>::namespaced(client.clone(), namespace),
            Api::<PartialObjectMeta<Service>>::namespaced(client, namespace),
        ),
        None => (
            Api::all_with(client.clone(), &resource),
            Api::<PartialObjectMeta<Pod>>::all(client.clone()),
            Api::<PartialObjectMeta<Service>>::all(client),
        ),
    };
    // The job watch feeds the cache and the triggers, and counts the deletions it sees.
    let writer = reflector::store::Writer::new(resource.clone());
    let store = writer.as_reader();
    let metrics = Arc::clone(&ctx.metrics);
    let jobs = reflector::reflector(writer, watcher(jobs, watcher::Config::default()))
        .inspect_ok(move |event| {
            if let watcher::Event::Delete(job) = event {
                metrics.deleted(&job.namespace().unwrap_or_default(), kind);
            }
        })
        .applied_objects();
    // Only this kind's children are watched, not every pod of the cluster. Each watch backs off
    // on its own (crate::watch).
    let children = watcher::Config::default()
        .labels(&format!("{OPERATOR_NAME_LABEL}={}", kind.operator_name()));
    // Metadata only: the owner reference is all a trigger reads.
    let pods = watcher(pods, children.clone()).touched_objects();
    let services = watcher(services, children).touched_objects();
    let mut controller = Controller::for_stream_with(
        on_its_own(kind, "jobs", jobs),
        store.clone(),
        resource.clone(),
    )
    .owns_stream(on_its_own(kind, "pods", pods))
    .owns_stream(on_its_own(kind, "services", services))
    .graceful_shutdown_on(stopped(lane.stopping.clone()));
    if let Some(scheduler) = ctx.build.gang_scheduler() {
        // Volcano admitting the gang (its PodGroup leaving `Pending`) is what lets pods be created.
        let resource = gang::pod_group_resource(&scheduler);
        let pod_groups: Api<PartialObjectMeta<DynamicObject>> = match namespace {
            Some(namespace) => Api::namespaced_with(ctx.client.clone(), namespace, &resource),
            None => Api::all_with(ctx.client.clone(), &resource),
        };
        let pod_groups = watcher(pod_groups, watcher::Config::default()).touched_objects();
        controller =
            controller.owns_stream_with(on_its_own(kind, "podgroups", pod_groups), resource);
    }
    let cache = store.clone();
    let running = controller
        .run(
            move |object, ctx| {
                reconcile_in_turn(lane.clone(), cache.clone(), resource.clone(), object, ctx)
            },
            error_policy,
            ctx,
        )
        .for_each(move |outcome| async move {
            match outcome {
                Ok((job, _)) => tracing::debug!(%kind, job = %job.name, "reconciled"),
                // The error policy logged it.
                Err(controller::Error::ReconcilerFailed(..)) => {}
                // A child's event for a job deleted since: nothing to do.
                Err(controller::Error::ObjectNotFound(job)) => {
                    tracing::debug!(%kind, %job, "the job is gone");
                }
                Err(error) => tracing::warn!(%kind, %error, "watching failed; retrying"),
            }
        });
    (store, running)
}

/// Waits for a free thread of the kind (counted in `trainctl_queue_depth` meanwhile), then
/// reconciles the job as the cache holds it by then; a job that was deleted meanwhile, or a
/// wait interrupted by shutdown, is dropped. Times the reconcile and counts its error.
async fn reconcile_in_turn(
    lane: Lane,
    cache: Store<JobObject>,
    resource: ApiResource,
    object: Arc<JobObject>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let kind = lane.kind;
    let queued = ctx.metrics.queued(kind);
    let _permit = tokio::select! {
        permit = lane.gate.acquire() => permit.expect("the gate is never closed"),
        () = stopped(lane.stopping.clone()) => return Ok(Action::await_change()),
    };
    drop(queued);
    let Some(object) = cache.get(&ObjectRef::from_obj_with(object.as_ref(), resource)) else {
        return Ok(Action::await_change());
    };
    let started = Instant::now();
    let job = format!(
        "{kind} {}/{}",
        object.namespace().unwrap_or_default(),
        object.name_any()
    );
    let _in_flight = lane.health.reconcile_started(job, started);
    // Boxed: a reconcile waiting at the gate is a task of its own (kube spawns one per job that
    // needs it), and inline its future would reserve room for the whole reconcile's state
    // (1.8 kB); 4,500 jobs waiting at once held 8 MB.
    let outcome = Box::pin(reconcile(kind, object, Arc::clone(&ctx))).await;
    ctx.metrics
        .reconciled(kind, started.elapsed(), outcome.as_ref().err());
    outcome
}

/// Retries a failed reconcile after [`RETRY_AFTER`].
#[must_use]
#[expect(
    clippy::needless_pass_by_value,
    reason = "the signature kube-runtime's Controller::run asks for"
)]
pub fn error_policy(object: Arc<JobObject>, error: &Error, _ctx: Arc<Context>) -> Action {
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
    object: Arc<JobObject>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    reconcile_at(kind, &object, &ctx, Timestamp::now()).await
}

/// Reconciles one job of `kind` as of `now`: read and validate, fetch, observe, decide, apply.
#[tracing::instrument(skip_all, fields(%kind, job = %object.name_any()))]
pub async fn reconcile_at(
    kind: JobKind,
    object: &JobObject,
    ctx: &Context,
    now: Timestamp,
) -> Result<Action, Error> {
    if object.meta().deletion_timestamp.is_some() {
        // Kubernetes collects the children through their owner references.
        ctx.exits
            .forget(object.meta().uid.as_deref().unwrap_or_default());
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
        ctx.publish(&regarding, &event, "Validate", None).await;
    }
    Ok(Action::await_change())
}
