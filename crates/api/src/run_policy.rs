//! `runPolicy`: the policies shared by every job kind.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The default controller: this operator (or the Kubeflow one it replaces).
pub const MANAGED_BY_TRAINING_OPERATOR: &str = "kubeflow.org/training-operator";
/// MultiKueue: another controller owns the job, this one does nothing.
pub const MANAGED_BY_MULTIKUEUE: &str = "kueue.x-k8s.io/multikueue";

/// Which pods are deleted when a job finishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum CleanPodPolicy {
    /// Delete every pod.
    All,
    /// Delete pods still running or pending.
    Running,
    /// Keep every pod.
    None,
}

/// Policies for running a job, shared by every kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunPolicy {
    /// Which pods to delete when the job finishes (default `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_pod_policy: Option<CleanPodPolicy>,
    /// Seconds after completion at which the job object itself is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
    /// Seconds after `startTime` at which a still-active job is failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,
    /// Restarts allowed before the job is failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_limit: Option<i32>,
    /// Gang-scheduling settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_policy: Option<SchedulingPolicy>,
    /// Whether the job is suspended: its pods are deleted until it is resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// The controller that owns the job (`kubeflow.org/training-operator` or
    /// `kueue.x-k8s.io/multikueue`).
    // The CRD lists the two values, so that the API server refuses any other at create, as
    // upstream's validating webhook did (the Kubeflow SDK's own e2e test relies on it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"]))]
    pub managed_by: Option<String>,
}

impl RunPolicy {
    /// Whether the job is suspended.
    #[must_use]
    pub fn is_suspended(&self) -> bool {
        self.suspend.unwrap_or(false)
    }

    /// Whether another controller (MultiKueue) owns the job.
    #[must_use]
    pub fn is_managed_elsewhere(&self) -> bool {
        self.managed_by.as_deref() == Some(MANAGED_BY_MULTIKUEUE)
    }
}

/// Gang-scheduling settings, passed to the PodGroup.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchedulingPolicy {
    /// Pods that must be schedulable together (default: all replicas).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<i32>,
    /// The scheduler queue (immutable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// Resources the whole gang needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_resources: Option<BTreeMap<String, Quantity>>,
    /// Priority class of the gang; also the queue priority of the local runtime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class: Option<String>,
    /// Seconds the gang may wait to be scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_timeout_seconds: Option<i32>,
}
