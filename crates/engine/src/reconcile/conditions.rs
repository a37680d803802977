//! How a condition enters `status.conditions` (docs/semantics.md §5.1).
//!
//! A new condition of a type replaces the old one and goes last (newest last); a message-only
//! change is made in place, so the newest condition stays the newest. Running and Restarting
//! replace each other when they become True. Succeeded or Failed set Running (and Restarting) to False. A finished job
//! is frozen: Failed and Succeeded are absorbing, and the first one decided wins.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use trainctl_api::{ConditionStatus, JobCondition, JobConditionType, JobStatus};

/// A condition to set: its type, status, reason and message.
pub(crate) struct Condition {
    pub(crate) type_: JobConditionType,
    pub(crate) status: ConditionStatus,
    pub(crate) reason: String,
    pub(crate) message: String,
}

impl Condition {
    /// A condition that holds.
    pub(crate) fn holds(type_: JobConditionType, reason: String, message: String) -> Self {
        Condition {
            type_,
            status: ConditionStatus::True,
            reason,
            message,
        }
    }

    /// A condition that does not hold.
    pub(crate) fn lapsed(type_: JobConditionType, reason: String, message: String) -> Self {
        Condition {
            type_,
            status: ConditionStatus::False,
            reason,
            message,
        }
    }
}

/// Sets `condition` at `now`. Returns whether the condition's status changed (a transition).
pub(crate) fn set(status: &mut JobStatus, condition: Condition, now: Timestamp) -> bool {
    if status.is_finished() {
        return false;
    }
    let Condition {
        type_,
        status: new_status,
        reason,
        message,
    } = condition;
    let mut last_transition_time = Some(Time(now));
    let mut transition = true;
    if let Some(position) = status.conditions.iter().position(|c| c.type_ == type_) {
        let current = &mut status.conditions[position];
        if current.status == new_status && current.reason == reason {
            if current.message != message {
                current.message = message;
                current.last_update_time = Some(Time(now));
            }
            return false;
        }
        if current.status == new_status {
            last_transition_time.clone_from(&current.last_transition_time);
            transition = false;
        }
        status.conditions.remove(position);
    }
    match type_ {
        _ if new_status != ConditionStatus::True => {}
        JobConditionType::Running => drop_type(status, JobConditionType::Restarting),
        JobConditionType::Restarting => drop_type(status, JobConditionType::Running),
        JobConditionType::Succeeded | JobConditionType::Failed => {
            for condition in &mut status.conditions {
                if matches!(
                    condition.type_,
                    JobConditionType::Running | JobConditionType::Restarting
                ) && condition.status == ConditionStatus::True
                {
                    condition.status = ConditionStatus::False;
                    condition.last_update_time = Some(Time(now));
                    condition.last_transition_time = Some(Time(now));
                }
            }
        }
        _ => {}
    }
    status.conditions.push(JobCondition {
        type_,
        status: new_status,
        reason,
        message,
        last_update_time: Some(Time(now)),
        last_transition_time,
    });
    transition
}

fn drop_type(status: &mut JobStatus, type_: JobConditionType) {
    status.conditions.retain(|c| c.type_ != type_);
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: Timestamp = Timestamp::constant(1_700_000_000, 0);
    const T1: Timestamp = Timestamp::constant(1_700_000_060, 0);

    fn types(status: &JobStatus) -> Vec<(JobConditionType, ConditionStatus)> {
        status
            .conditions
            .iter()
            .map(|c| (c.type_, c.status))
            .collect()
    }

    fn holds(type_: JobConditionType, reason: &str) -> Condition {
        Condition::holds(type_, reason.into(), format!("{reason} message"))
    }

    #[test]
    fn newest_condition_goes_last_and_running_replaces_restarting() {
        use ConditionStatus::True;
        use JobConditionType::{Created, Restarting, Running};
        let mut status = JobStatus::default();
        assert!(set(&mut status, holds(Created, "TFJobCreated"), T0));
        assert!(set(&mut status, holds(Running, "TFJobRunning"), T0));
        assert!(set(&mut status, holds(Restarting, "TFJobRestarting"), T1));
        assert_eq!(types(&status), [(Created, True), (Restarting, True)]);
        assert!(set(&mut status, holds(Running, "TFJobRunning"), T1));
        assert_eq!(types(&status), [(Created, True), (Running, True)]);
    }

    #[test]
    fn finishing_sets_running_false_and_freezes_the_status() {
        use ConditionStatus::{False, True};
        use JobConditionType::{Created, Failed, Running, Succeeded};
        let mut status = JobStatus::default();
        set(&mut status, holds(Created, "TFJobCreated"), T0);
        set(&mut status, holds(Running, "TFJobRunning"), T0);
        assert!(set(&mut status, holds(Succeeded, "TFJobSucceeded"), T1));
        assert_eq!(
            types(&status),
            [(Created, True), (Running, False), (Succeeded, True)]
        );
        assert!(!set(&mut status, holds(Failed, "TFJobFailed"), T1));
        assert!(!status.is_true(Failed), "Succeeded is absorbing");
    }

    #[test]
    fn message_change_updates_in_place_and_keeps_transition_time() {
        use JobConditionType::{Created, Running};
        let mut status = JobStatus::default();
        set(&mut status, holds(Created, "TFJobCreated"), T0);
        set(&mut status, holds(Running, "TFJobRunning"), T0);
        let changed = Condition::holds(Created, "TFJobCreated".into(), "other".into());
        assert!(!set(&mut status, changed, T1));
        let created = &status.conditions[0];
        assert_eq!(created.message, "other");
        assert_eq!(created.last_update_time, Some(Time(T1)));
        assert_eq!(created.last_transition_time, Some(Time(T0)));
        assert_eq!(status.conditions[1].type_, Running, "order unchanged");
    }
}
