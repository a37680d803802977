//! What `trainctl wait --for` waits for, spelled as kubectl spells it: `condition=Succeeded`,
//! `condition=Running=False`, `delete`.

use std::fmt;
use std::str::FromStr;

use trainctl_api::{ConditionStatus, JobConditionType};

/// The condition types a job can have, in lifecycle order.
const CONDITION_TYPES: [JobConditionType; 6] = [
    JobConditionType::Created,
    JobConditionType::Running,
    JobConditionType::Restarting,
    JobConditionType::Suspended,
    JobConditionType::Succeeded,
    JobConditionType::Failed,
];

/// What to wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitFor {
    /// The job has a condition of this type with this status.
    Condition(JobConditionType, ConditionStatus),
    /// The job is gone.
    Delete,
}

impl FromStr for WaitFor {
    type Err = String;

    fn from_str(text: &str) -> Result<WaitFor, String> {
        if text == "delete" {
            return Ok(WaitFor::Delete);
        }
        let Some(condition) = text.strip_prefix("condition=") else {
            return Err(format!(
                "`{text}` is not something trainctl can wait for: use `condition=NAME` (e.g. \
                 `condition=Succeeded`) or `delete`"
            ));
        };
        let (name, status) = match condition.split_once('=') {
            Some((name, status)) => (name, parse_status(status)?),
            None => (condition, ConditionStatus::True),
        };
        let type_ = CONDITION_TYPES
            .into_iter()
            .find(|type_| type_.as_str().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                let known: Vec<&str> = CONDITION_TYPES.iter().map(|t| t.as_str()).collect();
                format!(
                    "unknown condition `{name}`: a job's conditions are {}",
                    known.join(", ")
                )
            })?;
        Ok(WaitFor::Condition(type_, status))
    }
}

/// `True` or `False`, in any case, as kubectl accepts them.
fn parse_status(text: &str) -> Result<ConditionStatus, String> {
    if text.eq_ignore_ascii_case("true") {
        Ok(ConditionStatus::True)
    } else if text.eq_ignore_ascii_case("false") {
        Ok(ConditionStatus::False)
    } else {
        Err(format!(
            "`{text}` is not a condition status: expected True or False"
        ))
    }
}

impl fmt::Display for WaitFor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitFor::Condition(type_, ConditionStatus::True) => write!(f, "condition={type_}"),
            WaitFor::Condition(type_, ConditionStatus::False) => {
                write!(f, "condition={type_}=False")
            }
            WaitFor::Condition(type_, ConditionStatus::Unknown) => {
                write!(f, "condition={type_}=Unknown")
            }
            WaitFor::Delete => f.write_str("delete"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<WaitFor, String> {
        text.parse()
    }

    #[test]
    fn condition_name_alone_waits_for_it_to_hold() {
        assert_eq!(
            parse("condition=Succeeded"),
            Ok(WaitFor::Condition(
                JobConditionType::Succeeded,
                ConditionStatus::True
            ))
        );
    }

    #[test]
    fn condition_names_are_case_insensitive_as_in_kubectl() {
        assert_eq!(
            parse("condition=failed"),
            Ok(WaitFor::Condition(
                JobConditionType::Failed,
                ConditionStatus::True
            ))
        );
        assert_eq!(
            parse("condition=RUNNING"),
            Ok(WaitFor::Condition(
                JobConditionType::Running,
                ConditionStatus::True
            ))
        );
    }

    #[test]
    fn condition_may_name_its_status() {
        assert_eq!(
            parse("condition=Running=False"),
            Ok(WaitFor::Condition(
                JobConditionType::Running,
                ConditionStatus::False
            ))
        );
        assert_eq!(
            parse("condition=Suspended=true"),
            Ok(WaitFor::Condition(
                JobConditionType::Suspended,
                ConditionStatus::True
            ))
        );
    }

    #[test]
    fn delete_waits_for_the_job_to_be_gone() {
        assert_eq!(parse("delete"), Ok(WaitFor::Delete));
    }

    #[test]
    fn unknown_condition_lists_the_known_ones() {
        let error = parse("condition=Complete").expect_err("no such condition");
        assert_eq!(
            error,
            "unknown condition `Complete`: a job's conditions are Created, Running, Restarting, \
             Suspended, Succeeded, Failed"
        );
    }

    #[test]
    fn other_forms_are_refused_with_the_accepted_ones() {
        for text in ["Succeeded", "jsonpath={.status}", "create", "condition"] {
            let error = parse(text).expect_err(text);
            assert!(error.contains("`condition=NAME`"), "{text}: {error}");
            assert!(error.contains(&format!("`{text}`")), "{text}: {error}");
        }
    }

    #[test]
    fn empty_condition_name_and_bad_status_are_refused() {
        assert!(
            parse("condition=")
                .expect_err("no name")
                .starts_with("unknown condition ``")
        );
        assert_eq!(
            parse("condition=Succeeded=yes"),
            Err("`yes` is not a condition status: expected True or False".to_owned())
        );
    }

    #[test]
    fn display_is_the_spelling_parsed() {
        for text in ["condition=Succeeded", "condition=Running=False", "delete"] {
            assert_eq!(parse(text).expect(text).to_string(), text);
        }
    }
}
