//! [`Context`]: what every reconcile shares (controller-rs style: passed as an `Arc`, no globals).

use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::Reporter;
use tokio::sync::{Semaphore, SemaphorePermit};
use trainctl_api::TrainingJob;
use trainctl_engine::BuildOptions;

use super::events::Events;
use super::exits::ReportedExits;
use super::metrics::Metrics;
use super::refusals::Refusals;

/// The field manager of every server-side apply, and the reporting controller of events.
pub const FIELD_MANAGER: &str = "trainctl";

/// Server-side apply as [`FIELD_MANAGER`], taking over fields others set.
#[must_use]
pub(crate) fn apply_params() -> kube::api::PatchParams {
    kube::api::PatchParams::apply(FIELD_MANAGER).force()
}

/// The client, the event queue, the metrics and the operator's settings for the objects it
/// builds.
#[derive(Clone)]
pub struct Context {
    /// The Kubernetes client.
    pub(crate) client: Client,
    /// Records events about jobs (`events.k8s.io/v1`), in the background.
    pub(crate) events: Arc<Events>,
    /// How pods and services are built: the same options `trainctl render` takes.
    pub(crate) build: BuildOptions,
    /// The metrics reconciles count into.
    pub(crate) metrics: Arc<Metrics>,
    /// The replica exits already reported.
    pub(crate) exits: Arc<ReportedExits>,
    /// The pod creations the API server refused.
    pub(crate) refusals: Arc<Refusals>,
    /// Bounds the creations and deletions of children in flight, across reconciles
    /// ([`RateLimits::children_in_flight`](crate::rate_limit::RateLimits::children_in_flight)).
    children_in_flight: Arc<Semaphore>,
}

impl Context {
    /// A context whose events are reported by [`FIELD_MANAGER`], counting
    /// into metrics of its own. Spawns the event writers on the current tokio runtime
    /// (`Events::spawn`): they stop once every clone of the context is dropped.
    #[must_use]
    pub fn new(client: Client, build: BuildOptions) -> Context {
        let reporter = Reporter {
            controller: FIELD_MANAGER.to_owned(),
            instance: None,
        };
        Context {
            events: Arc::new(Events::spawn(&client, &reporter)),
            client,
            build,
            metrics: Arc::default(),
            exits: Arc::default(),
            refusals: Arc::default(),
            children_in_flight: Arc::new(Semaphore::new(Semaphore::MAX_PERMITS)),
        }
    }

    /// The context creating or deleting at most `limit` children at once (at least one).
    #[must_use]
    pub(crate) fn with_children_in_flight(self, limit: usize) -> Context {
        Context {
            children_in_flight: Arc::new(Semaphore::new(limit.max(1))),
            ..self
        }
    }

    /// Waits for a place to create or delete a child; held until the call is answered.
    pub(crate) async fn child_write(&self) -> SemaphorePermit<'_> {
        self.children_in_flight
            .acquire()
            .await
            .expect("the semaphore is never closed")
    }

    /// The context counting into `metrics`.
    #[must_use]
    pub(crate) fn with_metrics(self, metrics: Arc<Metrics>) -> Context {
        Context { metrics, ..self }
    }
}

/// A reference to a job's child, for [`Context::publish`]'s `related`.
#[must_use]
pub(crate) fn child_reference(job: &TrainingJob, kind: &str, name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some(kind.to_owned()),
        name: Some(name.to_owned()),
        namespace: Some(job.namespace().to_owned()),
        ..ObjectReference::default()
    }
}
