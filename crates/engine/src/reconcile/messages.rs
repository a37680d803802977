//! The exact words of conditions and events (docs/semantics.md §5.2, §7): reasons `<Kind><Type>`
//! and the upstream messages, kind by kind. Users' scripts match these strings; change none
//! lightly.

use trainctl_api::{JobConditionType, JobKind, ReplicaType, TrainingJob};

/// The words of one job's conditions and events.
pub(crate) struct Wording<'a> {
    kind: JobKind,
    name: &'a str,
    namespace: &'a str,
    /// PyTorch and Paddle word their messages differently when a Master decides.
    has_master: bool,
}

impl<'a> Wording<'a> {
    /// The words for `job`.
    pub(crate) fn new(job: &'a TrainingJob) -> Self {
        Wording {
            kind: job.kind(),
            name: job.name(),
            namespace: job.namespace(),
            has_master: job.replica_specs().contains_key(&ReplicaType::Master),
        }
    }

    /// `<Kind><Type>`, e.g. `TFJobRunning`, `MPIJobFailed`.
    pub(crate) fn reason(&self, type_: JobConditionType) -> String {
        format!("{}{type_}", self.kind)
    }

    /// `<Kind>Resumed`.
    pub(crate) fn resumed_reason(&self) -> String {
        format!("{}Resumed", self.kind)
    }

    /// `<Kind>Pending`: the reason of the event that says why replicas cannot start.
    pub(crate) fn pending_reason(&self) -> String {
        format!("{}Pending", self.kind)
    }

    /// `TFJob mnist is created.`
    pub(crate) fn created(&self) -> String {
        format!("{} {} is created.", self.kind, self.name)
    }

    /// The Running message, as each upstream controller words it.
    pub(crate) fn running(&self) -> String {
        let Wording {
            kind,
            name,
            namespace,
            ..
        } = self;
        match kind {
            JobKind::TFJob | JobKind::JAXJob => format!("{kind} {namespace}/{name} is running."),
            JobKind::PyTorchJob | JobKind::PaddleJob if !self.has_master => {
                format!("{kind} {namespace}/{name} is running.")
            }
            JobKind::PyTorchJob
            | JobKind::PaddleJob
            | JobKind::XGBoostJob
            | JobKind::MPIJob
            | JobKind::MXJob => format!("{kind} {name} is running."),
        }
    }

    /// The Succeeded message, as each upstream controller words it.
    pub(crate) fn succeeded(&self) -> String {
        let Wording {
            kind,
            name,
            namespace,
            ..
        } = self;
        match kind {
            JobKind::TFJob | JobKind::JAXJob => {
                format!("{kind} {namespace}/{name} successfully completed.")
            }
            JobKind::PyTorchJob | JobKind::PaddleJob if !self.has_master => {
                format!("{kind} {namespace}/{name} successfully completed.")
            }
            JobKind::PyTorchJob
            | JobKind::PaddleJob
            | JobKind::XGBoostJob
            | JobKind::MPIJob
            | JobKind::MXJob => format!("{kind} {name} is successfully completed."),
        }
    }

    /// The Failed message when `count` replicas of `replica_type` failed for good.
    pub(crate) fn replicas_failed(&self, count: usize, replica_type: &ReplicaType) -> String {
        let Wording {
            kind,
            name,
            namespace,
            ..
        } = self;
        match kind {
            JobKind::TFJob => format!(
                "{kind} {namespace}/{name} has failed because {count} {replica_type} replica(s) \
                 failed."
            ),
            _ => format!(
                "{} {name} is failed because {count} {replica_type} replica(s) failed.",
                self.kind_in_failures()
            ),
        }
    }

    /// The Restarting message when `count` replicas of `replica_type` are re-created.
    pub(crate) fn restarting(&self, count: usize, replica_type: &ReplicaType) -> String {
        format!(
            "{} {} is restarting because {count} {replica_type} replica(s) failed.",
            self.kind_in_failures(),
            self.name
        )
    }

    /// How the Failed and Restarting messages name the kind: `MXJob`'s upstream controller
    /// wrote `mxjob`, the others the kind.
    fn kind_in_failures(&self) -> &'static str {
        match self.kind {
            JobKind::MXJob => "mxjob",
            kind => kind.as_str(),
        }
    }

    /// The Failed message of a job past its `backoffLimit`.
    pub(crate) fn backoff_limit_reached(&self) -> String {
        format!(
            "Job {} has failed because it has reached the specified backoff limit",
            self.name
        )
    }

    /// The Failed message of a job past its `activeDeadlineSeconds`.
    pub(crate) fn deadline_exceeded(&self) -> String {
        format!(
            "Job {} has failed because it was active longer than specified deadline",
            self.name
        )
    }

    /// `TFJob mnist is suspended.`
    pub(crate) fn suspended(&self) -> String {
        format!("{} {} is suspended.", self.kind, self.name)
    }

    /// `TFJob mnist is resumed.`
    pub(crate) fn resumed(&self) -> String {
        format!("{} {} is resumed.", self.kind, self.name)
    }

    /// The Created message while replicas cannot start: why, in plain words.
    pub(crate) fn created_pending(&self, why: &str) -> String {
        format!("{} Pending: {why}.", self.created())
    }

    /// `Pod: ml.mnist-worker-0 exited with code 137`.
    pub(crate) fn exited_with_code(&self, pod_name: &str, code: i32) -> String {
        format!("Pod: {}.{pod_name} exited with code {code}", self.namespace)
    }
}

#[cfg(test)]
mod tests;
