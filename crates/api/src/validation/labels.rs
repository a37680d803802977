//! Labels as the API server checks them (`ValidateLabels`), on the job and on each replica's pod
//! template: a key is a qualified name (an optional DNS-subdomain prefix and `/`, then a name of
//! at most 63 characters), a value at most 63 characters of the same alphabet, or empty. A label
//! is a selector's word on a cluster: one the API server would refuse is refused here first.

use std::collections::BTreeMap;

use super::issue::{Issue, metadata_maps};
use super::names::dns_subdomain;
use crate::field_path::FieldPath;
use crate::job::TrainingJob;

/// The longest label value, and the longest name part of a key.
const MAX_LABEL: usize = 63;

/// Checks the job's labels and each pod template's.
pub(super) fn validate_labels(job: &TrainingJob, issues: &mut Vec<Issue>) {
    for (path, labels) in metadata_maps(job, "labels", |meta| meta.labels.as_ref()) {
        check(labels, &path, issues);
    }
}

fn check(labels: Option<&BTreeMap<String, String>>, path: &FieldPath, issues: &mut Vec<Issue>) {
    for (key, value) in labels.into_iter().flatten() {
        let problem = label_key(key)
            .map_err(|problem| format!("`{key}` is not a valid label key: {problem}"))
            .and_then(|()| {
                label_value(value).map_err(|problem| {
                    format!("`{}` is not a valid label value: {problem}", shown(value))
                })
            });
        if let Err(problem) = problem {
            issues.push(Issue::error(path.key(key), problem));
        }
    }
}

/// A value as an error shows it: whole when short, else its start and its length.
fn shown(value: &str) -> String {
    if value.chars().count() <= MAX_LABEL {
        value.to_owned()
    } else {
        let start: String = value.chars().take(20).collect();
        format!("{start}... ({} characters)", value.chars().count())
    }
}

/// A label key: `[prefix/]name`.
fn label_key(key: &str) -> Result<(), String> {
    let name = match key.split_once('/') {
        Some((prefix, name)) => {
            dns_subdomain(prefix).map_err(|problem| format!("its prefix `{prefix}`: {problem}"))?;
            name
        }
        None => key,
    };
    if name.is_empty() {
        return Err("its name is empty".to_owned());
    }
    label_word(name)
}

/// A label value: empty, or a label word.
fn label_value(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Ok(());
    }
    label_word(value)
}

/// At most 63 letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit.
fn label_word(word: &str) -> Result<(), String> {
    if word.len() > MAX_LABEL {
        return Err(format!(
            "{} characters, the limit is {MAX_LABEL}",
            word.chars().count()
        ));
    }
    if let Some(bad) = word
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(format!(
            "`{}` is not allowed: letters, digits, `-`, `_` and `.` are",
            bad.escape_default()
        ));
    }
    let alphanumeric = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !alphanumeric(word.chars().next()) || !alphanumeric(word.chars().last()) {
        return Err("it must start and end with a letter or digit".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{label_key, label_value};

    #[test]
    fn keys_and_values_as_the_api_server_takes_them() {
        for key in ["app", "training.kubeflow.org/job-name", "a_b.c-d", "x/y"] {
            assert_eq!(label_key(key), Ok(()), "{key}");
        }
        for value in ["", "v1", "a.b_c-d", &"x".repeat(63)] {
            assert_eq!(label_value(value), Ok(()), "{value}");
        }
        assert_eq!(
            label_value(&"x".repeat(1000)),
            Err("1000 characters, the limit is 63".to_owned())
        );
        assert_eq!(
            label_value("-edge"),
            Err("it must start and end with a letter or digit".to_owned())
        );
        assert_eq!(
            label_value("a b"),
            Err("` ` is not allowed: letters, digits, `-`, `_` and `.` are".to_owned())
        );
        assert_eq!(
            label_key("Bad_Prefix/x").map_err(|e| e.starts_with("its prefix")),
            Err(true)
        );
        assert_eq!(label_key("team/"), Err("its name is empty".to_owned()));
    }
}
