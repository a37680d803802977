//! The controllers: one kube-runtime `Controller` per job kind, watching the kind's jobs (as
//! `JobObject`s, see [`crate::job`]) and the Pods and Services they own (cached as
//! `Children`), each running a job's reconcile (`decide_and_apply`) in its turn.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future;
use futures_util::{StreamExt as _, TryStreamExt as _};
use jiff::Timestamp;
use kube::ResourceExt as _;
use kube::api::{Api, ApiResource, DynamicObject, PartialObjectMeta};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use tokio::sync::watch;
use trainctl_api::JobKind;
use trainctl_engine::naming::OPERATOR_NAME_LABEL;

use super::gate::Gate;
use super::health::Health;
use super::pacing::Pacing;
use super::watch::on_its_own;
use crate::reconcile::cached_pod::CachedPod;
use crate::reconcile::cached_service::CachedService;
use crate::reconcile::children::{self, Children, Written, first_list};
use crate::reconcile::context::Context;
use crate::reconcile::error::Error;
use crate::reconcile::job::JobObject;
use crate::reconcile::owners::Owners;
use crate::reconcile::{decide_and_apply, gang, job};

/// How long the controller waits before retrying a job whose reconcile failed.
pub(crate) const RETRY_AFTER: Duration = Duration::from_secs(5);

/// How many pods a page of the pods' list holds (kube's default: 500). A page is held whole,
/// twice, while it is read, and a TFJob's pods each carry the whole cluster in `TF_CONFIG` (45 KB
/// in a job of 1,000 Workers): with pages of 500, the first list after a restart on such a job
/// peaked at 90.6 MiB, against 36.2 MiB for creating it.
const POD_LIST_PAGE: u32 = 100;

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
    let mut child_stores = Vec::new();
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
        let gate = Gate::new(scope.threads);
        for &namespace in &namespaces {
            let lane = Lane {
                kind,
                gate: Arc::clone(&gate),
                stopping: stopping.clone(),
                health: Arc::clone(&health),
                pacing: Arc::default(),
            };
            let (store, children, controller) = controller(lane, Arc::clone(&ctx), namespace);
            controllers.push(unless_stopped_unlisted(
                controller,
                store.clone(),
                stopping.clone(),
            ));
            stores.push(store);
            child_stores.push(children);
        }
    }
    let synced = async {
        // Not kube's `Store::wait_until_ready`, which each controller waits on: it wakes only
        // the last task that waited.
        let listed = stores.iter().map(|ready| {
            let mut ready = ready.clone();
            async move { ready.wait_for(|ready| *ready).await.is_ok() }
        });
        let (jobs, _) = future::join(
            future::join_all(listed),
            future::join_all(child_stores.iter().map(Children::wait_until_ready)),
        )
        .await;
        if jobs.into_iter().all(|listed| listed) {
            tracing::info!("the job caches are synced");
            health.caches_synced();
        }
        // Done: the controllers' end is what ends this function.
        std::future::pending::<()>().await;
    };
    // Not a join: a controller stopped before its children's caches had their first list leaves
    // them never ready, and `synced` would wait for ever.
    tokio::select! {
        _ = future::join_all(controllers) => {}
        () = synced => {}
    }
}

/// Runs `controller` to its end, unless a stop comes before its job cache had its first list
/// (`listed`): then it ends at once. No reconcile can be in flight then (kube's runner holds them
/// until the cache is ready), and kube's runner would wait for that readiness for ever, the stop
/// having ended the watch that brings it.
async fn unless_stopped_unlisted(
    controller: impl Future<Output = ()>,
    listed: watch::Receiver<bool>,
    stopping: watch::Receiver<bool>,
) {
    let stopped_unlisted = async move {
        stopped(stopping).await;
        if *listed.borrow() {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        () = controller => {}
        () = stopped_unlisted => {}
    }
}

/// What the reconciles of one kind share: the gate bounding how many run at once, the stop
/// signal, the health tracker.
#[derive(Clone)]
struct Lane {
    kind: JobKind,
    gate: Arc<Gate>,
    stopping: watch::Receiver<bool>,
    health: Arc<Health>,
    /// When each job was last reconciled.
    pacing: Arc<Pacing>,
}

/// A job's key for [`Pacing`]: its namespace and name.
fn pacing_key(object: &JobObject) -> String {
    format!(
        "{}/{}",
        object.namespace().unwrap_or_default(),
        object.name_any()
    )
}

/// Resolves once `stopping` turns true (or its sender is gone).
async fn stopped(mut stopping: watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stopping| *stopping).await;
}

/// The controller of one kind in one namespace (`None`: all): reconciles a job when it
/// changes, when a pod or service it controls changes, and when its plan asks to be woken up.
/// Returns what turns true once its job cache had its first list, its children's caches, and
/// the controller, to be awaited.
fn controller(
    lane: Lane,
    ctx: Arc<Context>,
    namespace: Option<&str>,
) -> (
    watch::Receiver<bool>,
    Children,
    impl Future<Output = ()> + use<>,
) {
    let kind = lane.kind;
    let resource = job::api_resource(kind);
    let client = ctx.client.clone();
    let (jobs, pods, services) = match namespace {
        Some(namespace) => (
            Api::<JobObject>::namespaced_with(client.clone(), namespace, &resource),
            Api::<CachedPod>::namespaced(client.clone(), namespace),
            Api::<CachedService>::namespaced(client, namespace),
        ),
        None => (
            Api::all_with(client.clone(), &resource),
            Api::<CachedPod>::all(client.clone()),
            Api::<CachedService>::all(client),
        ),
    };
    // The job watch feeds the cache and the triggers, and counts the deletions it sees.
    let writer = reflector::store::Writer::new(resource.clone());
    let store = writer.as_reader();
    let metrics = Arc::clone(&ctx.metrics);
    let pacing = Arc::clone(&lane.pacing);
    let jobs =
        watcher(jobs, watcher::Config::default()).modify(|job| job.metadata.managed_fields = None);
    let (jobs_listed, jobs_ready) = watch::channel(false);
    let mut jobs_listed = first_list(jobs_listed);
    let jobs = reflector::reflector(writer, jobs)
        .inspect_ok(move |event| {
            jobs_listed(event);
            if let watcher::Event::Delete(job) = event {
                metrics.deleted(&job.namespace().unwrap_or_default(), kind);
                pacing.forget(&pacing_key(job));
            }
        })
        .applied_objects();
    // Only this kind's children are watched, not every pod of the cluster. Each watch backs off
    // on its own (runtime::watch). The caches keep what reconciles read (reconcile::children):
    // the pods decoded into what is read (reconcile::cached_pod), the services' metadata.
    let selector = watcher::Config::default()
        .labels(&format!("{OPERATOR_NAME_LABEL}={}", kind.operator_name()));
    let (pod_store, pod_writer) = reflector::store();
    let (service_store, service_writer) = reflector::store();
    let (pods_listed, pods_ready) = watch::channel(false);
    let (services_listed, services_ready) = watch::channel(false);
    let (pod_owners, service_owners) = (Owners::default(), Owners::default());
    let children = Children::new(
        (pod_store, pod_owners.clone()),
        (service_store, service_owners.clone()),
        [pods_ready, services_ready],
        children::READ_YOUR_WRITES,
    );
    let pods = watcher(pods, selector.clone().page_size(POD_LIST_PAGE)).modify(CachedPod::slim);
    let pods = reflector::reflector(pod_writer, pods)
        .inspect_ok(move |event| pod_owners.observe(event))
        .inspect_ok(first_list(pods_listed))
        .touched_objects();
    let services = watcher(services, selector).modify(CachedService::slim);
    let services = reflector::reflector(service_writer, services)
        .inspect_ok(move |event| service_owners.observe(event))
        .inspect_ok(first_list(services_listed))
        .touched_objects();
    let mut controller = Controller::for_stream_with(
        on_its_own(kind, "jobs", jobs),
        store.clone(),
        resource.clone(),
    )
    .owns_stream(on_its_own(kind, "pods", pods))
    .owns_stream(on_its_own(kind, "services", services))
    .graceful_shutdown_on(stopped(lane.stopping.clone()));
    if let Some(scheduler) = ctx.build.gang_scheduler() {
        // Volcano admitting the gang (its PodGroup leaving `Pending`) is what lets pods be
        // created; Kubernetes' own PodGroup existing, and its scheduler's conditions, the words.
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
    let lane = Arc::new((lane, children.clone()));
    let running = controller
        .run(
            move |object, ctx| {
                let lane = Arc::clone(&lane);
                reconcile_in_turn(lane, cache.clone(), resource.clone(), object, ctx)
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
    (jobs_ready, children, running)
}

/// Waits for the job's turn ([`crate::runtime::pacing`]), for a free thread of the kind (counted in
/// `trainctl_queue_depth` meanwhile; a follow-up before a first reconcile, see
/// [`crate::runtime::gate`]) and for the children's caches to have had their first
/// list, then reconciles the job as the cache holds it by then; a job that was deleted
/// meanwhile, or a wait interrupted by shutdown, is dropped. Times the reconcile and counts its
/// error.
async fn reconcile_in_turn(
    lane: Arc<(Lane, Children)>,
    cache: Store<JobObject>,
    resource: ApiResource,
    object: Arc<JobObject>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let (lane, children) = lane.as_ref();
    let kind = lane.kind;
    let key = pacing_key(&object);
    let paced = lane.pacing.delay(
        &key,
        object.metadata.generation,
        tokio::time::Instant::now(),
    );
    if !paced.is_zero() {
        tokio::select! {
            () = tokio::time::sleep(paced) => {}
            () = stopped(lane.stopping.clone()) => return Ok(Action::await_change()),
        }
    }
    let queued = ctx.metrics.queued(kind);
    let turn = lane.pacing.turn(&key, object.metadata.generation);
    let ready = async {
        let permit = lane.gate.enter(turn).await;
        // Without its first list, a cache would show a job none of its children.
        children.wait_until_ready().await;
        permit
    };
    let permit = tokio::select! {
        permit = ready => permit,
        () = stopped(lane.stopping.clone()) => return Ok(Action::await_change()),
    };
    drop(queued);
    let Some(object) = cache.get(&ObjectRef::from_obj_with(object.as_ref(), resource)) else {
        lane.pacing.forget(&key);
        return Ok(Action::await_change());
    };
    let generation = object.metadata.generation;
    lane.pacing
        .started(&key, generation, tokio::time::Instant::now());
    let started = Instant::now();
    let job = format!(
        "{kind} {}/{}",
        object.namespace().unwrap_or_default(),
        object.name_any()
    );
    let _in_flight = lane.health.reconcile_started(job, started);
    // Boxed: a reconcile waiting at the gate is a task of its own (kube spawns one per job that
    // needs it), and inline its future would reserve room for the whole reconcile's state in
    // every task waiting at the gate.
    let mut written = Written::default();
    let outcome = Box::pin(decide_and_apply(
        kind,
        &object,
        &ctx,
        children,
        Timestamp::now(),
        &mut written,
    ))
    .await;
    ctx.metrics
        .reconciled(kind, started.elapsed(), outcome.as_ref().err());
    // The wait for the caches is no work: the thread goes to the next job. This job's next
    // reconcile still waits for it (kube never runs two reconciles of one job at once).
    drop(permit);
    children.await_written(&written).await;
    outcome
}

/// Retries a failed reconcile after [`RETRY_AFTER`].
#[must_use]
#[expect(
    clippy::needless_pass_by_value,
    reason = "the signature kube-runtime's Controller::run asks for"
)]
pub(crate) fn error_policy(object: Arc<JobObject>, error: &Error, _ctx: Arc<Context>) -> Action {
    tracing::warn!(
        job = %object.name_any(),
        operation = error.metric_label(),
        %error,
        "reconcile failed; retrying"
    );
    Action::requeue(RETRY_AFTER)
}
