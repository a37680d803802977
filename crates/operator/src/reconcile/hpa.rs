//! The HorizontalPodAutoscaler of an elastic PyTorchJob with `metrics` (docs/semantics.md §3):
//! server-side applied as the engine builds it, or deleted while the job is suspended.
//!
//! Upstream's operator stops the whole reconcile when its HPA cannot be written, so a job whose
//! HPA the API server refuses never gets a pod. Here the refusal is a `Warning` event on the job
//! and the error of the reconcile (retried as any other), and the rest of the plan is applied:
//! the job runs, without autoscaling, and the event says why.

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource as _;
use kube::api::{Api, DeleteParams, Patch};
use trainctl_api::TrainingJob;
use trainctl_engine::objects::hpa::build_hpa;
use trainctl_engine::reconcile::{EventType, HpaAction, JobEvent};

use super::context::{Context, apply_params};
use super::error::Error;
use super::job;

/// The kind, as errors and events name it.
const KIND: &str = "HorizontalPodAutoscaler";

/// Carries out `action` for the job's HPA. A failure is recorded as a `Warning` event on the job
/// (`FailedApplyHPA`, `FailedDeleteHPA`) and returned.
pub(crate) async fn carry_out(
    ctx: &Context,
    job: &TrainingJob,
    action: HpaAction,
) -> Result<(), Error> {
    let api: Api<HorizontalPodAutoscaler> = Api::namespaced(ctx.client.clone(), job.namespace());
    let name = job.name().to_owned();
    let result = match action {
        // The engine plans `Apply` only for a job that has an HPA.
        HpaAction::Apply => match build_hpa(job) {
            Some(hpa) => api
                .patch(&name, &apply_params(), &Patch::Apply(&hpa))
                .await
                .map(drop),
            None => Ok(()),
        },
        HpaAction::Delete => match api.delete(&name, &DeleteParams::default()).await {
            Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
            other => other.map(drop),
        },
    };
    let Err(source) = result else {
        tracing::debug!(hpa = %name, ?action, "HorizontalPodAutoscaler written");
        return Ok(());
    };
    let message = failure_message(action, &name, &source);
    tracing::warn!(job = %job::display_name(job), "{message}");
    let (verb, reason, error) = match action {
        HpaAction::Apply => (
            "Apply",
            "FailedApplyHPA",
            Error::Apply {
                kind: KIND,
                name,
                source,
            },
        ),
        HpaAction::Delete => (
            "Delete",
            "FailedDeleteHPA",
            Error::Delete {
                kind: KIND,
                name,
                source,
            },
        ),
    };
    let event = JobEvent::new(EventType::Warning, reason, message);
    let regarding = job::object_reference(job);
    ctx.events
        .record(&regarding, &event, verb, Some(reference(job)));
    Err(error)
}

/// The event's words for the HPA `name` that `action` failed to write: what the API server said,
/// a hint where it refused for a reason the user can act on, and what it means for the job.
fn failure_message(action: HpaAction, name: &str, source: &kube::Error) -> String {
    let hint = match source {
        kube::Error::Api(status) if status.code == 403 => {
            " (the operator's ClusterRole needs create, patch and delete on autoscaling \
             horizontalpodautoscalers: docs/deploy.md)"
        }
        kube::Error::Api(status) if status.code == 404 => {
            " (the API server does not serve autoscaling/v2 HorizontalPodAutoscalers)"
        }
        _ => "",
    };
    let (doing, outcome) = match action {
        HpaAction::Apply => ("applying", "the job runs without autoscaling; retrying"),
        HpaAction::Delete => ("deleting", "retrying"),
    };
    format!("Error {doing} {KIND} {name}: {source}{hint}: {outcome}")
}

/// The HPA, as the event's related object.
fn reference(job: &TrainingJob) -> ObjectReference {
    ObjectReference {
        api_version: Some(HorizontalPodAutoscaler::api_version(&()).into_owned()),
        kind: Some(KIND.to_owned()),
        name: Some(job.name().to_owned()),
        namespace: Some(job.namespace().to_owned()),
        ..ObjectReference::default()
    }
}
