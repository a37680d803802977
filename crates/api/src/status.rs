//! `status`: conditions and per-replica-type counts, shared by every job kind.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::replica::ReplicaType;

/// The observed state of a job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobStatus {
    /// Conditions, newest last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<JobCondition>,
    /// Counts per replica type.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(with = "BTreeMap<String, ReplicaStatus>")]
    pub replica_statuses: BTreeMap<ReplicaType, ReplicaStatus>,
    /// When the job was first reconciled while not suspended (reset on resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When the job succeeded or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// When the job was last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_reconcile_time: Option<Time>,
}

/// One condition of a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobCondition {
    /// The condition type.
    #[serde(rename = "type")]
    pub type_: JobConditionType,
    /// `True`, `False` or `Unknown`.
    pub status: ConditionStatus,
    /// A machine-readable reason in CamelCase (`TFJobRunning`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// A human-readable message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// When the condition was last updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// When the condition last changed status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// The type of a job condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum JobConditionType {
    /// The job was accepted and its objects are being created.
    Created,
    /// Every replica is running (or the job is otherwise progressing).
    Running,
    /// Some replicas are being restarted.
    Restarting,
    /// The job finished successfully (absorbing).
    Succeeded,
    /// The job failed (absorbing).
    Failed,
    /// The job is suspended.
    Suspended,
}

impl JobConditionType {
    /// The type's name, as in `status.conditions[].type`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            JobConditionType::Created => "Created",
            JobConditionType::Running => "Running",
            JobConditionType::Restarting => "Restarting",
            JobConditionType::Succeeded => "Succeeded",
            JobConditionType::Failed => "Failed",
            JobConditionType::Suspended => "Suspended",
        }
    }
}

impl std::fmt::Display for JobConditionType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Status of a condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ConditionStatus {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// Not known.
    Unknown,
}

/// Counts of one replica type's pods.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaStatus {
    /// Running pods (a pending pod is in no count, as upstream counts them).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub active: i32,
    /// Pods that succeeded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub succeeded: i32,
    /// Pods that failed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed: i32,
    /// Deprecated label selector, kept for compatibility.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// The label selector of this type's pods, as a string (the scale subresource reads it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub selector: String,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// The conditions that name a job's state: the first of them that holds does.
const LIFECYCLE: [JobConditionType; 5] = [
    JobConditionType::Succeeded,
    JobConditionType::Failed,
    JobConditionType::Suspended,
    JobConditionType::Restarting,
    JobConditionType::Running,
];

/// A job's state in one word, as `get` shows it, from its status (`None`: no controller has
/// seen the job yet): its [`JobStatus::lifecycle`] condition, else `Pending` while its `Created`
/// message says why it waits (a queue, a gang), else `Created` once a controller recorded that
/// condition, else `Pending`.
#[must_use]
pub fn state_word(status: Option<&JobStatus>) -> &'static str {
    let Some(status) = status else {
        return "Pending";
    };
    if let Some(type_) = status.lifecycle() {
        type_.as_str()
    } else if status.waiting_reason().is_none()
        && status.condition(JobConditionType::Created).is_some()
    {
        "Created"
    } else {
        "Pending"
    }
}

impl JobStatus {
    /// The condition that names the job's state: the first of `Succeeded`, `Failed`,
    /// `Suspended`, `Restarting` and `Running` that holds.
    #[must_use]
    pub fn lifecycle(&self) -> Option<JobConditionType> {
        LIFECYCLE.into_iter().find(|&type_| self.is_true(type_))
    }

    /// The condition of the given type, if any.
    #[must_use]
    pub fn condition(&self, type_: JobConditionType) -> Option<&JobCondition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }

    /// Why the job waits, as its `Created` message says after `Pending: ` (`waiting for 2 GPUs,
    /// 0 free`, `queued behind other jobs`); `None` when it does not wait.
    #[must_use]
    pub fn waiting_reason(&self) -> Option<&str> {
        let created = self.condition(JobConditionType::Created)?;
        let (_, why) = created.message.split_once(" Pending: ")?;
        Some(why.strip_suffix('.').unwrap_or(why))
    }

    /// The message of the `Failed` condition of a job that failed, without its final period.
    #[must_use]
    pub fn failure_message(&self) -> Option<&str> {
        let failed = self
            .condition(JobConditionType::Failed)
            .filter(|condition| condition.status == ConditionStatus::True)?;
        Some(failed.message.trim_end_matches('.')).filter(|message| !message.is_empty())
    }

    /// Whether a condition of the given type is `True`.
    #[must_use]
    pub fn is_true(&self, type_: JobConditionType) -> bool {
        self.condition(type_)
            .is_some_and(|c| c.status == ConditionStatus::True)
    }

    /// Whether the job has succeeded or failed.
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.is_true(JobConditionType::Succeeded) || self.is_true(JobConditionType::Failed)
    }

    /// When a finished job finished: `completionTime`, else its last condition's transition.
    #[must_use]
    pub fn finish_time(&self) -> Option<&Time> {
        self.completion_time.as_ref().or_else(|| {
            self.conditions
                .iter()
                .filter_map(|condition| condition.last_transition_time.as_ref())
                .max_by_key(|time| time.0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(conditions: &[(JobConditionType, ConditionStatus)]) -> JobStatus {
        JobStatus {
            conditions: conditions
                .iter()
                .map(|&(type_, status)| JobCondition {
                    type_,
                    status,
                    reason: String::new(),
                    message: String::new(),
                    last_update_time: None,
                    last_transition_time: None,
                })
                .collect(),
            ..JobStatus::default()
        }
    }

    #[test]
    fn state_is_the_condition_that_holds_in_lifecycle_order() {
        use ConditionStatus::{False, True};
        use JobConditionType::{Created, Failed, Restarting, Running, Succeeded, Suspended};
        let cases = [
            (vec![], "Pending"),
            (vec![(Created, True)], "Created"),
            (vec![(Created, True), (Running, False)], "Created"),
            (vec![(Created, True), (Running, True)], "Running"),
            (vec![(Running, True), (Restarting, True)], "Restarting"),
            (vec![(Running, False), (Suspended, True)], "Suspended"),
            (vec![(Running, False), (Failed, True)], "Failed"),
            (vec![(Running, False), (Succeeded, True)], "Succeeded"),
        ];
        for (conditions, expected) in cases {
            assert_eq!(
                state_word(Some(&with(&conditions))),
                expected,
                "{conditions:?}"
            );
        }
        // The gang holds the pods back: the job waits, and says why.
        let mut waiting = with(&[(Created, True)]);
        waiting.conditions[0].message = "PyTorchJob mnist is created. Pending: waiting for the \
             gang scheduler to admit PodGroup mnist (phase Pending)."
            .to_owned();
        assert_eq!(state_word(Some(&waiting)), "Pending");
        assert_eq!(
            waiting.waiting_reason(),
            Some("waiting for the gang scheduler to admit PodGroup mnist (phase Pending)")
        );
        assert_eq!(state_word(None), "Pending");
    }
}
