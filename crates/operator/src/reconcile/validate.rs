//! Validation without a webhook (docs/semantics.md §2): a job that cannot be read, or that the api
//! crate's validation rejects, gets a `Failed` condition carrying the reason, and nothing is
//! created for it. Pure; no client in scope.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use trainctl_api::validation::{self, Severity};
use trainctl_api::{
    ConditionStatus, JobCondition, JobConditionType, JobKind, JobStatus, TrainingJob,
};

/// Every validation error of a defaulted job, `path: message`, joined by `; `; `None` when it
/// is valid (warnings do not count).
#[must_use]
pub fn errors(job: &TrainingJob) -> Option<String> {
    let errors: Vec<String> = validation::validate(job)
        .into_iter()
        .filter(|issue| issue.severity == Severity::Error)
        .map(|issue| {
            if issue.path.is_root() {
                issue.message
            } else {
                format!("{}: {}", issue.path, issue.message)
            }
        })
        .collect();
    (!errors.is_empty()).then(|| errors.join("; "))
}

/// The words of a refusal: `TFJob ml/mnist is invalid: <why>`.
#[must_use]
pub fn message(kind: JobKind, namespace: &str, name: &str, why: &str) -> String {
    format!("{kind} {namespace}/{name} is invalid: {why}")
}

/// The status that fails a refused job: `previous` with `Failed=True` (reason `<Kind>Failed`,
/// the refusal's `message`) and `completionTime`. `None` when there is nothing to write: the
/// job already finished (Failed and Succeeded are absorbing).
#[must_use]
pub(crate) fn refused_status(
    kind: JobKind,
    previous: Option<&JobStatus>,
    message: &str,
    now: Timestamp,
) -> Option<JobStatus> {
    let mut status = previous.cloned().unwrap_or_default();
    if status.is_finished() {
        return None;
    }
    let now = Time(now);
    for condition in &mut status.conditions {
        if matches!(
            condition.type_,
            JobConditionType::Running | JobConditionType::Restarting
        ) && condition.status == ConditionStatus::True
        {
            condition.status = ConditionStatus::False;
            condition.last_update_time = Some(now.clone());
            condition.last_transition_time = Some(now.clone());
        }
    }
    status
        .conditions
        .retain(|condition| condition.type_ != JobConditionType::Failed);
    status.conditions.push(JobCondition {
        type_: JobConditionType::Failed,
        status: ConditionStatus::True,
        reason: refused_reason(kind),
        message: message.to_owned(),
        last_update_time: Some(now.clone()),
        last_transition_time: Some(now.clone()),
    });
    status.completion_time = Some(now);
    Some(status)
}

/// `<Kind>Failed`: the reason of the condition and the event of a refused job.
#[must_use]
pub(crate) fn refused_reason(kind: JobKind) -> String {
    format!("{kind}Failed")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::job;

    const NO_IMAGE: &str = r"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: mnist, namespace: ml}
spec:
  tfReplicaSpecs:
    Worker:
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
";

    fn now() -> Timestamp {
        "2025-01-01T00:00:00Z".parse().unwrap()
    }

    #[test]
    fn a_valid_job_has_no_errors() {
        assert_eq!(errors(&job(NO_IMAGE)), None);
    }

    #[test]
    fn errors_name_their_field() {
        let mut job = job(NO_IMAGE);
        job.replica_specs_mut()
            .get_mut(&trainctl_api::ReplicaType::Worker)
            .and_then(|spec| spec.template.spec.as_mut())
            .expect("a pod spec")
            .containers[0]
            .image = None;
        let errors = errors(&job).expect("invalid");
        assert!(
            errors.starts_with("spec.tfReplicaSpecs[Worker].template.spec.containers[0].image: "),
            "{errors}"
        );
    }

    #[test]
    fn a_refused_job_fails_with_the_message() {
        let status = refused_status(JobKind::TFJob, None, "TFJob ml/mnist is invalid: x", now())
            .expect("a status to write");
        let failed = status.condition(JobConditionType::Failed).expect("Failed");
        assert_eq!(failed.status, ConditionStatus::True);
        assert_eq!(failed.reason, "TFJobFailed");
        assert_eq!(failed.message, "TFJob ml/mnist is invalid: x");
        assert_eq!(status.completion_time, Some(Time(now())));
    }

    #[test]
    fn a_finished_job_is_not_refused_again() {
        let failed = refused_status(JobKind::TFJob, None, "first", now());
        assert_eq!(
            refused_status(JobKind::TFJob, failed.as_ref(), "again", now()),
            None
        );
    }
}
