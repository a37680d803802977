//! Apply: executing the engine's [`Plan`] against the API server.
//!
//! In this order, so that a failure part-way leaves nothing counted twice:
//!
//! 1. **delete** the planned pods and services (a pod already gone is deleted);
//! 2. persist the **restart ledger** the plan moved those pods' restarts into — only once every
//!    deletion was issued: a deletion that failed is planned, and counted, again; then ensure
//!    or delete the gang's PodGroup, and apply or delete an elastic PyTorchJob's
//!    HorizontalPodAutoscaler ([`hpa`](super::hpa));
//! 3. **create** the missing services, then pods: a `POST` (field manager [`FIELD_MANAGER`]) of
//!    exactly the objects `trainctl render` prints, a bounded number at a time, as upstream
//!    creates them; an MPIJob's ConfigMap and launcher RBAC (server-side applied) come first.
//!    A create, unlike a server-side apply, takes every pod template the API server validates:
//!    apply keys lists such as `env`, `ports` and `imagePullSecrets` and refuses a duplicate key
//!    that validation allows (and upstream's operator relied on). An object that already exists
//!    (created before the operator restarted) counts as created, without a second event;
//! 4. write the **status** (server-side apply of the status subresource: fields the engine no
//!    longer sets, such as a count that fell to zero, are removed);
//! 5. record the **events**: each replica exit once (`ExitedWithCode`), those of the plan, and
//!    one per creation and deletion;
//! 6. **delete the job** when its TTL after finishing ran out.
//!
//! A failed creation, or HorizontalPodAutoscaler, does not stop the steps after it (the status
//! is counted from the pods, not from the plan); it is returned afterwards so that the
//! controller retries. What was created and deleted
//! is noted in a [`Written`], for the reconcile to wait until its cache shows it
//! ([`crate::reconcile::children`]).

use std::collections::BTreeMap;
use std::fmt::Debug;

use futures_util::StreamExt as _;
use futures_util::future::{self, Either};
use futures_util::stream;
use k8s_openapi::api::core::v1::{ObjectReference, Pod, Service};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt as _};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::json;
use trainctl_api::{JobKind, JobStatus, TrainingJob};
use trainctl_engine::env::JobEnv;
use trainctl_engine::objects::{JobObjects, build_objects, build_pod_with, build_service};
use trainctl_engine::reconcile::{Deletion, JobEvent, PodGroupAction};
use trainctl_engine::{Observed, Plan, ReplicaSlot};

use super::children::Written;
use super::context::{Context, FIELD_MANAGER, apply_params, child_reference};
use super::error::Error;
use super::gang;
use super::hpa;
use super::job::{self, RETIRED_RESTARTS_ANNOTATION};
use super::refusals::Attempt;

/// How many creations (or deletions) of one job are in flight at once.
pub const PARALLELISM: usize = 32;

/// How many creations are prepared at once (their objects are built only when sent).
const CHUNK: usize = 8 * PARALLELISM;

/// Executes `plan` for `job`, whose pods and services were `observed`; notes in `written` the
/// children it created and deleted.
pub(crate) async fn apply(
    ctx: &Context,
    job: &TrainingJob,
    observed: &Observed,
    plan: &Plan,
    written: &mut Written,
) -> Result<(), Error> {
    job.namespace().clone_into(&mut written.namespace);
    let run = Run::new(ctx, job);
    run.delete(&plan.delete_services, &plan.delete_pods, written)
        .await?;
    if plan.retired_restarts != observed.retired_restarts {
        run.persist_ledger(plan.retired_restarts).await?;
    }
    if let Some(gang) = &observed.gang {
        match plan.pod_group {
            Some(PodGroupAction::Ensure) => gang::ensure(ctx, job, gang).await?,
            Some(PodGroupAction::Delete) => gang::delete(ctx, job, &gang.scheduler).await?,
            None => {}
        }
    }
    let autoscaled = match plan.hpa {
        Some(action) => hpa::carry_out(ctx, job, action).await,
        None => Ok(()),
    };
    let created = run
        .create(&plan.create_services, &plan.create_pods, written)
        .await;
    if let Some(status) = &plan.status {
        write_status(ctx, job.kind(), job.namespace(), job.name(), status).await?;
    }
    // Counted once the status recording them is written: a failed write plans them again.
    ctx.metrics
        .transitions(job.namespace(), job.kind(), &plan.transitions);
    let regarding = job::object_reference(job);
    let uid = job.metadata().uid.as_deref().unwrap_or_default();
    for exit in ctx.exits.unreported(uid, &plan.exits) {
        let pod = child_reference(job, "Pod", &exit.slot.name(job.name()));
        ctx.events
            .record(&regarding, &exit.event(job), "Reconcile", Some(pod));
    }
    for event in &plan.events {
        ctx.events.record(&regarding, event, "Reconcile", None);
    }
    if plan.delete_job {
        run.delete_job().await?;
    }
    created.and(autoscaled)
}

/// One job's plan being applied.
struct Run<'a> {
    ctx: &'a Context,
    job: &'a TrainingJob,
    pods: Api<Pod>,
    services: Api<Service>,
    jobs: Api<DynamicObject>,
    /// The job, as events refer to it.
    regarding: ObjectReference,
}

/// What one creation or deletion did.
struct Outcome {
    /// The object's kind (`Pod`, `Service`, ...).
    kind: &'static str,
    /// The object's name.
    name: String,
    /// The uid the API server gave an object this call created.
    uid: Option<String>,
    result: Result<Done, kube::Error>,
}

impl Outcome {
    /// Notes a creation or deletion that holds (made by this call or found so) in `written`.
    fn note(&self, operation: Operation, written: &mut Written) {
        if self.result.is_err() {
            return;
        }
        let name = self.name.clone();
        match (operation, self.kind) {
            (Operation::Create, "Pod") => written.created_pods.push((name, self.uid.clone())),
            (Operation::Create, "Service") => {
                written.created_services.push((name, self.uid.clone()));
            }
            (Operation::Delete, "Pod") => written.deleted_pods.push(name),
            (Operation::Delete, "Service") => written.deleted_services.push(name),
            _ => {}
        }
    }
}

/// A creation or deletion that succeeded.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Done {
    /// This call made the change.
    Changed,
    /// The object already was as asked (it existed, or was gone): nothing to report.
    AlreadySo,
}

/// Creating or deleting a job's children: the event of each outcome, and the error of a failure.
#[derive(Clone, Copy)]
enum Operation {
    Create,
    Delete,
}

impl Operation {
    /// The action events name.
    fn action(self) -> &'static str {
        match self {
            Operation::Create => "Create",
            Operation::Delete => "Delete",
        }
    }

    /// The event of an outcome; none when nothing changed.
    fn event(self, outcome: &Outcome) -> Option<JobEvent> {
        let pod = outcome.kind == "Pod";
        Some(match (self, &outcome.result) {
            (_, Ok(Done::AlreadySo)) => return None,
            (Operation::Create, Ok(Done::Changed)) if pod => JobEvent::pod_created(&outcome.name),
            (Operation::Create, Ok(Done::Changed)) => JobEvent::service_created(&outcome.name),
            (Operation::Create, Err(error)) if pod => {
                JobEvent::pod_create_failed(&error.to_string())
            }
            (Operation::Create, Err(error)) => JobEvent::service_create_failed(&error.to_string()),
            (Operation::Delete, Ok(Done::Changed)) if pod => JobEvent::pod_deleted(&outcome.name),
            (Operation::Delete, Ok(Done::Changed)) => JobEvent::service_deleted(&outcome.name),
            (Operation::Delete, Err(error)) if pod => {
                JobEvent::pod_delete_failed(&error.to_string())
            }
            (Operation::Delete, Err(error)) => JobEvent::service_delete_failed(&error.to_string()),
        })
    }

    fn error(self, kind: &'static str, name: String, source: kube::Error) -> Error {
        match self {
            Operation::Create => Error::Apply { kind, name, source },
            Operation::Delete => Error::Delete { kind, name, source },
        }
    }
}

impl<'a> Run<'a> {
    fn new(ctx: &'a Context, job: &'a TrainingJob) -> Self {
        let namespace = job.namespace();
        let client = ctx.client.clone();
        Run {
            ctx,
            job,
            pods: Api::namespaced(client.clone(), namespace),
            services: Api::namespaced(client.clone(), namespace),
            jobs: Api::namespaced_with(client, namespace, &job::api_resource(job.kind())),
            regarding: job::object_reference(job),
        }
    }

    fn names(&self, deletions: &[Deletion]) -> Vec<String> {
        deletions
            .iter()
            .map(|deletion| deletion.slot.name(self.job.name()))
            .collect()
    }

    /// Deletes the services and pods, noted in `written`; the first failure, once every
    /// deletion was tried.
    async fn delete(
        &self,
        services: &[Deletion],
        pods: &[Deletion],
        written: &mut Written,
    ) -> Result<(), Error> {
        // The futures are made before the stream runs them: a stream of closures that borrow
        // would not be `Send` (rustc's higher-ranked lifetimes in async fns).
        let services = self.names(services).into_iter();
        let pods = self.names(pods).into_iter();
        let deletions = services
            .map(|name| Either::Left(delete_one(self.ctx, &self.services, "Service", name)))
            .chain(pods.map(|name| Either::Right(delete_one(self.ctx, &self.pods, "Pod", name))))
            .collect();
        self.report(Operation::Delete, in_parallel(deletions).await, written)
    }

    /// Notes the outcomes in `written` and records an event per outcome; the first failure, if
    /// any.
    fn report(
        &self,
        operation: Operation,
        outcomes: Vec<Outcome>,
        written: &mut Written,
    ) -> Result<(), Error> {
        for outcome in &outcomes {
            outcome.note(operation, written);
        }
        for outcome in &outcomes {
            if let Some(event) = operation.event(outcome) {
                let related = child_reference(self.job, outcome.kind, &outcome.name);
                let action = operation.action();
                self.ctx
                    .events
                    .record(&self.regarding, &event, action, Some(related));
            }
        }
        outcomes
            .into_iter()
            .find_map(|outcome| {
                let Outcome {
                    kind, name, result, ..
                } = outcome;
                result
                    .err()
                    .map(|source| operation.error(kind, name, source))
            })
            .map_or(Ok(()), Err)
    }

    /// Keeps the restart ledger in the job's annotation.
    async fn persist_ledger(&self, retired_restarts: u32) -> Result<(), Error> {
        let patch = json!({"metadata": {"annotations": {
            RETIRED_RESTARTS_ANNOTATION: retired_restarts.to_string()
        }}});
        self.jobs
            .patch(
                self.job.name(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(|source| Error::PatchLedger {
                job: job::display_name(self.job),
                source,
            })?;
        Ok(())
    }

    /// Creates the services and pods of the given slots (and an MPIJob's companions), noted in
    /// `written`; the first failure, once every creation was tried.
    ///
    /// Each pod is built when its turn to be sent comes, so that only the ones in flight exist
    /// at once: a TFJob's pods each carry the whole cluster in `TF_CONFIG`, so a big job's pods
    /// built all at once take memory that grows with the square of its size.
    async fn create(
        &self,
        services: &[ReplicaSlot],
        pods: &[ReplicaSlot],
        written: &mut Written,
    ) -> Result<(), Error> {
        if services.is_empty() && pods.is_empty() {
            return Ok(());
        }
        if !pods.is_empty() && matches!(self.job, TrainingJob::Mpi(_)) {
            self.create_companions(&build_objects(self.job, &self.ctx.build))
                .await?;
        }
        let job_env = JobEnv::new(self.job, &self.ctx.build.addressing);
        // Services first, in one stream with the pods: the last services and the first pods
        // are in flight together. The calls' futures are made a chunk at a time (each builds its
        // object when first polled); a stream of closures that borrow would not be `Send`
        // (rustc's higher-ranked lifetimes in async fns).
        let creations: Vec<(&'static str, &ReplicaSlot)> = services
            .iter()
            .map(|slot| ("Service", slot))
            .chain(pods.iter().map(|slot| ("Pod", slot)))
            .collect();
        let mut outcomes = Vec::with_capacity(creations.len());
        for chunk in creations.chunks(CHUNK) {
            let calls: Vec<_> = chunk
                .iter()
                .map(|&(kind, slot)| self.create_slot(&job_env, kind, slot))
                .collect();
            let done: Vec<Outcome> = stream::iter(calls)
                .buffered(PARALLELISM)
                .filter_map(future::ready)
                .collect()
                .await;
            outcomes.extend(done);
        }
        self.note_refusals(pods, &outcomes);
        self.report(Operation::Create, outcomes, written)
    }

    /// Builds the `kind` (`Service`, `Pod`) of `slot` and creates it; `None` when the job has
    /// no such object (an MPIJob has no services).
    async fn create_slot(
        &self,
        job_env: &JobEnv<'_>,
        kind: &'static str,
        slot: &ReplicaSlot,
    ) -> Option<Outcome> {
        let (replica_type, index) = (&slot.replica_type, slot.index);
        // Built once its call may be sent: only the objects in flight exist at once.
        let _turn = self.ctx.child_write().await;
        Some(if kind == "Pod" {
            let pod = build_pod_with(job_env, self.job, replica_type, index, &self.ctx.build)?;
            create_one(self.ctx, &self.pods, kind, pod).await
        } else {
            let service = build_service(self.job, replica_type, index)?;
            create_one(self.ctx, &self.services, kind, service).await
        })
    }

    /// Notes which of the pods of `slots` were created and which the API server refused.
    fn note_refusals(&self, slots: &[ReplicaSlot], outcomes: &[Outcome]) {
        let by_name: BTreeMap<String, &ReplicaSlot> = slots
            .iter()
            .map(|slot| (slot.name(self.job.name()), slot))
            .collect();
        let attempts = outcomes
            .iter()
            .filter(|outcome| outcome.kind == "Pod")
            .filter_map(|outcome| {
                let slot = by_name.get(&outcome.name)?;
                Some(((*slot).clone(), Attempt::of(&outcome.result)))
            });
        let uid = self.job.metadata().uid.as_deref().unwrap_or_default();
        self.ctx.refusals.note(uid, attempts);
    }

    /// An MPIJob's launcher RBAC and ConfigMap, before its pods. The service account is only
    /// created when absent: the user may have provided it.
    async fn create_companions(&self, objects: &JobObjects) -> Result<(), Error> {
        let namespace = self.job.namespace();
        let client = &self.ctx.client;
        let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
            Api::namespaced(client.clone(), namespace);
        for account in &objects.service_accounts {
            match accounts.create(&PostParams::default(), account).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.is_already_exists() => {}
                Err(source) => {
                    return Err(Error::Apply {
                        kind: "ServiceAccount",
                        name: account.name_any(),
                        source,
                    });
                }
            }
        }
        let roles = Api::namespaced(client.clone(), namespace);
        let bindings = Api::namespaced(client.clone(), namespace);
        let config_maps = Api::namespaced(client.clone(), namespace);
        let outcomes = [
            apply_all(&roles, "Role", &objects.roles).await,
            apply_all(&bindings, "RoleBinding", &objects.role_bindings).await,
            apply_all(&config_maps, "ConfigMap", &objects.config_maps).await,
        ];
        for Outcome {
            kind, name, result, ..
        } in outcomes.into_iter().flatten()
        {
            result.map_err(|source| Error::Apply { kind, name, source })?;
        }
        Ok(())
    }

    /// Deletes the job (its TTL after finishing ran out); Kubernetes collects its children.
    async fn delete_job(&self) -> Result<(), Error> {
        match self
            .jobs
            .delete(self.job.name(), &DeleteParams::background())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.is_not_found() => return Ok(()),
            Err(source) => {
                return Err(Error::DeleteJob {
                    job: job::display_name(self.job),
                    source,
                });
            }
        }
        let event = JobEvent::job_deleted(self.job.name());
        self.ctx
            .events
            .record(&self.regarding, &event, "Delete", None);
        Ok(())
    }
}

/// Writes a job's status subresource, by server-side apply: unlike a merge patch, this removes
/// the fields the engine no longer sets (a replica count that fell to zero is not serialized).
pub(crate) async fn write_status(
    ctx: &Context,
    kind: JobKind,
    namespace: &str,
    name: &str,
    status: &JobStatus,
) -> Result<(), Error> {
    let patch = json!({
        "apiVersion": trainctl_api::API_VERSION,
        "kind": kind.as_str(),
        "status": status,
    });
    let jobs: Api<DynamicObject> =
        Api::namespaced_with(ctx.client.clone(), namespace, &job::api_resource(kind));
    jobs.patch_status(name, &apply_params(), &Patch::Apply(&patch))
        .await
        .map_err(|source| Error::PatchStatus {
            job: format!("{namespace}/{name}"),
            source,
        })?;
    Ok(())
}

/// Server-side applies each object of `kind`, [`PARALLELISM`] at a time.
async fn apply_all<K>(api: &Api<K>, kind: &'static str, objects: &[K]) -> Vec<Outcome>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    let applies = objects
        .iter()
        .map(|object| apply_one(api, kind, object.clone()))
        .collect();
    in_parallel(applies).await
}

/// Runs creations or deletions, [`PARALLELISM`] at a time; their outcomes in order.
async fn in_parallel<F: Future<Output = Outcome>>(calls: Vec<F>) -> Vec<Outcome> {
    stream::iter(calls).buffered(PARALLELISM).collect().await
}

/// Server-side applies one object of `kind`.
async fn apply_one<K>(api: &Api<K>, kind: &'static str, object: K) -> Outcome
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    let name = object.name_any();
    let result = api
        .patch(&name, &apply_params(), &Patch::Apply(&object))
        .await
        .map(|_| Done::Changed);
    Outcome {
        kind,
        name,
        uid: None,
        result,
    }
}

/// Creates one object of `kind`; one that already exists counts as created.
async fn create_one<K>(ctx: &Context, api: &Api<K>, kind: &'static str, object: K) -> Outcome
where
    K: Resource + Serialize,
{
    let name = object.name_any();
    let (uid, result) = match post(ctx, api.resource_url(), &object).await {
        Ok(created) => (created.metadata.uid, Ok(Done::Changed)),
        Err(kube::Error::Api(status)) if status.is_already_exists() => (None, Ok(Done::AlreadySo)),
        Err(error) => (None, Err(error)),
    };
    Outcome {
        kind,
        name,
        uid,
        result,
    }
}

/// What is read of the API server's answer to a creation: the uid it gave the object.
///
/// `Api::create` decodes the whole object it gets back: for a pod, a `Pod` with its `TF_CONFIG`,
/// built and dropped at once, for each of a job's pods. Read into this, the rest is skipped.
#[derive(Deserialize)]
struct Created {
    #[serde(default)]
    metadata: CreatedMetadata,
}

/// The metadata of a [`Created`] object.
#[derive(Deserialize, Default)]
struct CreatedMetadata {
    uid: Option<String>,
}

/// `Api::create` of `object` at `url` (field manager [`FIELD_MANAGER`]), reading only what
/// [`Created`] keeps of the answer.
async fn post<K: Serialize>(ctx: &Context, url: &str, object: &K) -> Result<Created, kube::Error> {
    let params = PostParams {
        dry_run: false,
        field_manager: Some(FIELD_MANAGER.to_owned()),
    };
    let body = serde_json::to_vec(object).map_err(kube::Error::SerdeError)?;
    let mut request = kube::core::Request::new(url)
        .create(&params, body)
        .map_err(kube::Error::BuildRequest)?;
    request.extensions_mut().insert("create");
    ctx.client.request(request).await
}

/// Deletes the object `name` of `kind` once `ctx` has a place for it; one already gone counts
/// as deleted.
async fn delete_one<K>(ctx: &Context, api: &Api<K>, kind: &'static str, name: String) -> Outcome
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let _turn = ctx.child_write().await;
    let result = match api.delete(&name, &DeleteParams::default()).await {
        Ok(_) => Ok(Done::Changed),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(Done::AlreadySo),
        Err(error) => Err(error),
    };
    Outcome {
        kind,
        name,
        uid: None,
        result,
    }
}
