//! [`Context`]: what every reconcile shares (controller-rs style: passed as an `Arc`, no globals).

use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use trainctl_api::TrainingJob;
use trainctl_engine::BuildOptions;
use trainctl_engine::reconcile::JobEvent;

use crate::exits::ReportedExits;
use crate::metrics::Metrics;
use crate::refusals::Refusals;

/// The client, the event recorder, the metrics and the operator's settings for the objects it
/// builds.
#[derive(Clone)]
pub struct Context {
    /// The Kubernetes client.
    pub client: Client,
    /// Publishes events about jobs (`events.k8s.io/v1`).
    pub recorder: Recorder,
    /// How pods and services are built: the same options `trainctl render` takes.
    pub build: BuildOptions,
    /// Who reports the events.
    pub reporter: Reporter,
    /// The metrics reconciles count into.
    pub metrics: Arc<Metrics>,
    /// The replica exits already reported.
    pub exits: Arc<ReportedExits>,
    /// The pod creations the API server refused.
    pub refusals: Arc<Refusals>,
}

impl Context {
    /// A context whose events are reported by [`FIELD_MANAGER`](crate::FIELD_MANAGER), counting
    /// into metrics of its own.
    #[must_use]
    pub fn new(client: Client, build: BuildOptions) -> Context {
        let reporter = Reporter {
            controller: crate::FIELD_MANAGER.to_owned(),
            instance: None,
        };
        Context {
            recorder: Recorder::new(client.clone(), reporter.clone()),
            client,
            build,
            reporter,
            metrics: Arc::default(),
            exits: Arc::default(),
            refusals: Arc::default(),
        }
    }

    /// The context counting into `metrics`.
    #[must_use]
    pub fn with_metrics(self, metrics: Arc<Metrics>) -> Context {
        Context { metrics, ..self }
    }

    /// Records an event about a job (`regarding`), done to `related` (a pod or service) if
    /// given. An event that cannot be written is logged, not retried: events are for people,
    /// and the reconcile goes on without them.
    ///
    /// kube's recorder folds events of the same reason about the same objects into one series
    /// and keeps the first note: right for repeats about one child, wrong for events whose notes
    /// differ (`ExitedWithCode` for two pods). Events about a child therefore name it as
    /// `related`, and the others go through a recorder of their own, without a series.
    ///
    /// The recorder keeps every event it published for six minutes, to extend its series. Only
    /// warnings about a child repeat (a creation that keeps failing, a pod that keeps exiting);
    /// the normal ones (a pod or service created or deleted) happen once per object, so they
    /// take no series either: cached, the events of many jobs held most of the heap.
    pub async fn publish(
        &self,
        regarding: &ObjectReference,
        event: &JobEvent,
        action: &str,
        related: Option<ObjectReference>,
    ) {
        let type_ = match event.type_ {
            trainctl_engine::reconcile::EventType::Normal => EventType::Normal,
            trainctl_engine::reconcile::EventType::Warning => EventType::Warning,
        };
        let series = related.is_some() && type_ == EventType::Warning;
        let event_ = Event {
            type_,
            reason: event.reason.clone(),
            note: Some(event.message.clone()),
            action: action.to_owned(),
            secondary: related,
        };
        let published = if series {
            self.recorder.publish(&event_, regarding).await
        } else {
            Recorder::new(self.client.clone(), self.reporter.clone())
                .publish(&event_, regarding)
                .await
        };
        if let Err(error) = published {
            tracing::warn!(
                job = regarding.name.as_deref().unwrap_or_default(),
                reason = %event.reason,
                %error,
                "cannot record event"
            );
        }
    }
}

/// A reference to a job's child, for [`Context::publish`]'s `related`.
#[must_use]
pub fn child_reference(job: &TrainingJob, kind: &str, name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some(kind.to_owned()),
        name: Some(name.to_owned()),
        namespace: Some(job.namespace().to_owned()),
        ..ObjectReference::default()
    }
}

#[cfg(test)]
mod tests {
    use http::Method;
    use http::StatusCode;
    use serde_json::json;
    use trainctl_engine::reconcile::JobEvent;

    use super::child_reference;
    use crate::fixtures::{context, finish, job, serve};
    use crate::job::object_reference;

    const JOB: &str = "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: mnist, namespace: ml, uid: u-1}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n";

    #[tokio::test]
    async fn only_warnings_about_a_child_fold_into_a_series() {
        let job = job(JOB);
        let (ctx, handle) = context();
        let server = serve(handle, |_| (StatusCode::CREATED, json!({})));
        let regarding = object_reference(&job);
        let pod = || Some(child_reference(&job, "Pod", "mnist-worker-0"));
        for _ in 0..2 {
            let created = JobEvent::pod_created("mnist-worker-0");
            ctx.publish(&regarding, &created, "Create", pod()).await;
        }
        for _ in 0..2 {
            let failed = JobEvent::pod_create_failed("quota exceeded");
            ctx.publish(&regarding, &failed, "Create", pod()).await;
        }
        let (_, events) = finish(ctx, server).await;
        let sent: Vec<(Method, String)> = events
            .iter()
            .map(|event| {
                (
                    event.method.clone(),
                    event.body["reason"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        assert_eq!(
            sent,
            [
                (Method::POST, "SuccessfulCreatePod".to_owned()),
                (Method::POST, "SuccessfulCreatePod".to_owned()),
                (Method::POST, "FailedCreatePod".to_owned()),
                // The repeat extends the first one's series.
                (Method::PATCH, "FailedCreatePod".to_owned()),
            ]
        );
    }
}
