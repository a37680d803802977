//! [`Context`]: what every reconcile shares (controller-rs style: passed as an `Arc`, no globals).

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use trainctl_api::TrainingJob;
use trainctl_engine::BuildOptions;
use trainctl_engine::reconcile::JobEvent;

use crate::job;

/// The client, the event recorder and the operator's settings for the objects it builds.
#[derive(Clone)]
pub struct Context {
    /// The Kubernetes client.
    pub client: Client,
    /// Publishes events about jobs (`events.k8s.io/v1`).
    pub recorder: Recorder,
    /// How pods and services are built: the same options `trainctl render` takes.
    pub build: BuildOptions,
}

impl Context {
    /// A context whose events are reported by [`FIELD_MANAGER`](crate::FIELD_MANAGER).
    #[must_use]
    pub fn new(client: Client, build: BuildOptions) -> Context {
        let reporter = Reporter {
            controller: crate::FIELD_MANAGER.to_owned(),
            instance: None,
        };
        Context {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            build,
        }
    }

    /// Records an event about `job`. An event that cannot be written is logged, not retried:
    /// events are for people, and the reconcile goes on without them.
    pub async fn publish(&self, job: &TrainingJob, event: &JobEvent, action: &str) {
        self.publish_about(&job::object_reference(job), event, action)
            .await;
    }

    /// Records an event about the object `regarding` (a job that could not even be read).
    pub async fn publish_about(&self, regarding: &ObjectReference, event: &JobEvent, action: &str) {
        let type_ = match event.type_ {
            trainctl_engine::reconcile::EventType::Normal => EventType::Normal,
            trainctl_engine::reconcile::EventType::Warning => EventType::Warning,
        };
        let event_ = Event {
            type_,
            reason: event.reason.clone(),
            note: Some(event.message.clone()),
            action: action.to_owned(),
            secondary: None,
        };
        if let Err(error) = self.recorder.publish(&event_, regarding).await {
            tracing::warn!(
                job = regarding.name.as_deref().unwrap_or_default(),
                reason = %event.reason,
                %error,
                "cannot record event"
            );
        }
    }
}
