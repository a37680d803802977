//! Label selectors, as kubectl's `-l`/`--selector` takes them: requirements separated by commas,
//! all of which must hold.
//!
//! - `key=value` or `key==value`: the label is there with that value;
//! - `key!=value`: the label is not there with that value (a missing label matches);
//! - `key`: the label is there, whatever its value; `!key`: it is not there;
//! - `key in (a,b)`: the label is there with one of the values; `key notin (a,b)`: it is not
//!   (a missing label matches).
//!
//! Keys and values are checked as Kubernetes checks labels: a key is a name of at most 63
//! characters, optionally after a DNS subdomain prefix and `/`; a value is at most 63 characters,
//! maybe empty. An empty selector selects everything.

use std::collections::BTreeMap;

/// A parsed label selector.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

/// One requirement of a selector, on one label.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    operator: Operator,
}

/// What a requirement asks of its label.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Operator {
    /// There, with one of these values (`=`, `==`, `in`).
    In(Vec<String>),
    /// Not there with any of these values (`!=`, `notin`).
    NotIn(Vec<String>),
    /// There (`key`).
    Exists,
    /// Not there (`!key`).
    DoesNotExist,
}

/// A selector that cannot be read: the selector and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid label selector \"{selector}\": {problem}")]
pub struct SelectorError {
    /// The selector as given.
    pub selector: String,
    /// What is wrong.
    pub problem: String,
}

impl Selector {
    /// Reads a selector (`app=x,tier!=db,!canary`).
    pub fn parse(text: &str) -> Result<Selector, SelectorError> {
        let error = |problem: String| SelectorError {
            selector: text.to_owned(),
            problem,
        };
        if text.trim().is_empty() {
            return Ok(Selector::default());
        }
        let requirements = split_requirements(text)
            .map_err(error)?
            .into_iter()
            .map(|requirement| parse_requirement(requirement.trim()))
            .collect::<Result<_, _>>()
            .map_err(error)?;
        Ok(Selector { requirements })
    }

    /// [`Selector::parse`] for clap (`value_parser`): the error as text.
    pub fn parse_arg(text: &str) -> Result<Selector, String> {
        Selector::parse(text).map_err(|error| error.problem)
    }

    /// Whether `labels` meet every requirement.
    #[must_use]
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_labels(|key| labels.get(key).map(String::as_str))
    }

    /// Whether the labels that `label` reads (a key's value, `None` when the label is not
    /// there) meet every requirement.
    pub fn matches_labels<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|requirement| {
            let value = label(&requirement.key);
            match &requirement.operator {
                Operator::In(values) => {
                    value.is_some_and(|value| values.iter().any(|v| v == value))
                }
                Operator::NotIn(values) => {
                    value.is_none_or(|value| values.iter().all(|v| v != value))
                }
                Operator::Exists => value.is_some(),
                Operator::DoesNotExist => value.is_none(),
            }
        })
    }
}

/// The requirements of `text`: split at the commas outside parentheses.
fn split_requirements(text: &str) -> Result<Vec<&str>, String> {
    let mut requirements = Vec::new();
    let mut depth = 0_u32;
    let mut start = 0;
    for (at, c) in text.char_indices() {
        match c {
            '(' if depth == 0 => depth = 1,
            '(' => return Err("a `(` inside a set of values".to_owned()),
            ')' if depth == 1 => depth = 0,
            ')' => return Err("a `)` without its `(`".to_owned()),
            ',' if depth == 0 => {
                requirements.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    if depth > 0 {
        return Err("a `(` without its `)`".to_owned());
    }
    requirements.push(&text[start..]);
    Ok(requirements)
}

/// Reads one requirement (trimmed).
fn parse_requirement(text: &str) -> Result<Requirement, String> {
    if text.is_empty() {
        return Err("an empty requirement (two commas in a row, or one at an end)".to_owned());
    }
    if let Some(key) = text.strip_prefix('!') {
        let key = key.trim();
        check_key(key)?;
        return Ok(Requirement {
            key: key.to_owned(),
            operator: Operator::DoesNotExist,
        });
    }
    let key_end = text
        .find(|c: char| c.is_whitespace() || "=!<>(".contains(c))
        .unwrap_or(text.len());
    let (key, rest) = text.split_at(key_end);
    check_key(key)?;
    let rest = rest.trim_start();
    let single = |value: &str| -> Result<Vec<String>, String> {
        let value = value.trim();
        check_value(key, value)?;
        Ok(vec![value.to_owned()])
    };
    let operator = if rest.is_empty() {
        Operator::Exists
    } else if let Some(value) = rest.strip_prefix("==") {
        Operator::In(single(value)?)
    } else if let Some(value) = rest.strip_prefix("!=") {
        Operator::NotIn(single(value)?)
    } else if let Some(value) = rest.strip_prefix('=') {
        Operator::In(single(value)?)
    } else if let Some(set) = set_after(rest, "notin") {
        Operator::NotIn(values(key, set)?)
    } else if let Some(set) = set_after(rest, "in") {
        Operator::In(values(key, set)?)
    } else {
        return Err(format!(
            "`{text}`: expected `{key}=VALUE`, `{key}==VALUE`, `{key}!=VALUE`, `{key} in \
             (A,B)`, `{key} notin (A,B)`, `{key}` or `!{key}`"
        ));
    };
    Ok(Requirement {
        key: key.to_owned(),
        operator,
    })
}

/// The set `(...)` that follows the word `operator` (`in`, `notin`) in `rest`, if one does.
fn set_after<'a>(rest: &'a str, operator: &str) -> Option<&'a str> {
    let set = rest.strip_prefix(operator)?.trim_start();
    set.starts_with('(').then_some(set)
}

/// The values of a set `(a, b)` of the label `key`.
fn values(key: &str, set: &str) -> Result<Vec<String>, String> {
    let inner = set
        .strip_prefix('(')
        .and_then(|set| set.strip_suffix(')'))
        .ok_or_else(|| format!("the values of `{key}` must end with `)`, and nothing after it"))?;
    if inner.trim().is_empty() {
        return Err(format!(
            "the set of values of `{key}` is empty: `in` and `notin` need at least one"
        ));
    }
    inner
        .split(',')
        .map(|value| {
            let value = value.trim();
            check_value(key, value)?;
            Ok(value.to_owned())
        })
        .collect()
}

/// Checks a label key: `[PREFIX/]NAME`, the prefix a DNS subdomain of at most 253 characters.
fn check_key(key: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("a requirement without a label key".to_owned());
    }
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        let label = |part: &str| {
            !part.is_empty()
                && part.len() <= 63
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        };
        if prefix.len() > 253 || !prefix.split('.').all(label) {
            return Err(format!(
                "`{key}`: the prefix `{prefix}` is not a DNS subdomain (lowercase letters, digits, \
                 `-` and `.`, at most 253 characters)"
            ));
        }
    }
    if !is_label_name(name) || name.is_empty() {
        return Err(format!(
            "`{key}` is not a label key: its name must be 1 to 63 letters, digits, `-`, `_` or \
             `.`, starting and ending with a letter or digit"
        ));
    }
    Ok(())
}

/// Checks a label value: empty, or what a label name may be.
fn check_value(key: &str, value: &str) -> Result<(), String> {
    if is_label_name(value) {
        Ok(())
    } else {
        Err(format!(
            "`{value}` (of `{key}`) is not a label value: at most 63 letters, digits, `-`, `_` or \
             `.`, starting and ending with a letter or digit"
        ))
    }
}

/// Whether `text` is empty or a label name: at most 63 characters, alphanumeric at both ends,
/// `-`, `_` and `.` between.
fn is_label_name(text: &str) -> bool {
    let alphanumeric = |c: char| c.is_ascii_alphanumeric();
    text.is_empty()
        || (text.len() <= 63
            && text.starts_with(alphanumeric)
            && text.ends_with(alphanumeric)
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect()
    }

    fn selects(selector: &str, pairs: &[(&str, &str)]) -> bool {
        Selector::parse(selector)
            .unwrap_or_else(|error| panic!("{error}"))
            .matches(&labels(pairs))
    }

    const WORKER_0: &[(&str, &str)] = &[
        ("training.kubeflow.org/job-name", "mnist"),
        ("training.kubeflow.org/replica-type", "worker"),
        ("training.kubeflow.org/replica-index", "0"),
        ("training.kubeflow.org/job-role", "master"),
    ];

    #[test]
    fn equality_in_its_three_spellings() {
        assert!(selects(
            "training.kubeflow.org/replica-type=worker",
            WORKER_0
        ));
        assert!(selects(
            "training.kubeflow.org/replica-type==worker",
            WORKER_0
        ));
        assert!(!selects("training.kubeflow.org/replica-type=ps", WORKER_0));
        assert!(selects("training.kubeflow.org/replica-type!=ps", WORKER_0));
        assert!(!selects(
            "training.kubeflow.org/replica-type!=worker",
            WORKER_0
        ));
        assert!(selects("absent!=x", WORKER_0), "a missing label is not x");
        assert!(!selects("absent=x", WORKER_0));
    }

    #[test]
    fn existence_and_absence() {
        assert!(selects("training.kubeflow.org/job-role", WORKER_0));
        assert!(!selects("!training.kubeflow.org/job-role", WORKER_0));
        assert!(selects("!canary", WORKER_0));
        assert!(!selects("canary", WORKER_0));
    }

    #[test]
    fn every_requirement_must_hold() {
        let both = "training.kubeflow.org/job-name=mnist, training.kubeflow.org/replica-index = 0";
        assert!(selects(both, WORKER_0));
        assert!(!selects(
            "training.kubeflow.org/job-name=mnist,training.kubeflow.org/replica-index=1",
            WORKER_0
        ));
    }

    #[test]
    fn sets_of_values() {
        let index = "training.kubeflow.org/replica-index";
        assert!(selects(&format!("{index} in (0, 1)"), WORKER_0));
        assert!(selects(&format!("{index} in(0)"), WORKER_0));
        assert!(!selects(&format!("{index} in (1,2)"), WORKER_0));
        assert!(selects(
            &format!("{index} notin (1,2),x notin (y)"),
            WORKER_0
        ));
        assert!(!selects(&format!("{index} notin (0)"), WORKER_0));
    }

    #[test]
    fn the_empty_selector_selects_everything_and_an_empty_value_is_a_value() {
        assert!(selects("", WORKER_0));
        assert!(selects("  ", &[]));
        assert!(selects("tier=", &[("tier", "")]));
        assert!(!selects("tier=", &[("tier", "db")]));
    }

    fn problem(selector: &str) -> String {
        Selector::parse(selector)
            .expect_err("an invalid selector")
            .problem
    }

    #[test]
    fn invalid_selectors_say_what_is_wrong() {
        assert_eq!(
            problem("a=1,,b"),
            "an empty requirement (two commas in a row, or one at an end)"
        );
        assert_eq!(problem("=x"), "a requirement without a label key");
        assert_eq!(
            problem("a=b=c"),
            "`b=c` (of `a`) is not a label value: at most 63 letters, digits, `-`, `_` or `.`, \
             starting and ending with a letter or digit"
        );
        assert_eq!(
            problem("a>1"),
            "`a>1`: expected `a=VALUE`, `a==VALUE`, `a!=VALUE`, `a in (A,B)`, `a notin (A,B)`, \
             `a` or `!a`"
        );
        assert_eq!(
            problem("a in ()"),
            "the set of values of `a` is empty: `in` and `notin` need at least one"
        );
        assert_eq!(problem("a in (x"), "a `(` without its `)`");
        assert_eq!(problem("a in (x))"), "a `)` without its `(`");
        assert!(problem("Bad_Prefix.io/x=1").contains("not a DNS subdomain"));
        assert!(problem(&format!("{}=1", "k".repeat(64))).contains("is not a label key"));
        assert!(problem(&format!("k={}", "v".repeat(64))).contains("is not a label value"));
        assert!(problem("-k=1").contains("is not a label key"));
    }

    #[test]
    fn the_error_names_the_selector() {
        let error = Selector::parse("a=1,,b").expect_err("invalid");
        assert_eq!(
            error.to_string(),
            "invalid label selector \"a=1,,b\": an empty requirement (two commas in a row, or \
             one at an end)"
        );
    }
}
