//! Kubernetes `$(VAR)` expansion, exactly as the kubelet's `expansion.Expand` does it.
//!
//! `$(NAME)` becomes NAME's value when NAME is defined and stays verbatim when it is not; `$$`
//! becomes `$`, so `$$(NAME)` is the literal `$(NAME)`; a lone `$` or an unclosed `$(` stays as
//! written. Env values are expanded against the variables defined before them; command and args
//! against the container's whole env (never against the inherited process env, which the kubelet
//! cannot see either).

use std::collections::HashMap;

use k8s_openapi::api::core::v1::Container;

/// Expands `$(NAME)` references in `input`, looking names up with `lookup`.
pub fn expand<F, S>(input: &str, lookup: F) -> String
where
    F: Fn(&str) -> Option<S>,
    S: AsRef<str>,
{
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let Some(next) = after.chars().next() else {
            // A trailing `$` stays verbatim.
            out.push('$');
            rest = after;
            break;
        };
        match next {
            '$' => {
                out.push('$');
                rest = &after[1..];
            }
            '(' => {
                if let Some(close) = after.find(')') {
                    let name = &after[1..close];
                    if let Some(value) = lookup(name) {
                        out.push_str(value.as_ref());
                    } else {
                        out.push_str("$(");
                        out.push_str(name);
                        out.push(')');
                    }
                    rest = &after[close + 1..];
                } else {
                    // Unclosed: the kubelet keeps `$(` and scans on after it.
                    out.push_str("$(");
                    rest = &after[1..];
                }
            }
            other => {
                out.push('$');
                out.push(other);
                rest = &after[other.len_utf8()..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The container's `command` followed by its `args`, each expanded against `env` (the
/// container's resolved env; a later definition of a name wins).
#[must_use]
pub fn expand_command_and_args(container: &Container, env: &[(String, String)]) -> Vec<String> {
    let vars: HashMap<&str, &str> = env
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    container
        .command
        .iter()
        .flatten()
        .chain(container.args.iter().flatten())
        .map(|item| expand(item, |name| vars.get(name).copied()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_vars(input: &str) -> String {
        let vars: HashMap<&str, &str> = [("A", "alpha"), ("B", "beta"), ("EMPTY", "")].into();
        expand(input, |name| vars.get(name).copied())
    }

    #[test]
    fn defined_name_is_replaced() {
        assert_eq!(with_vars("x-$(A)-$(B)"), "x-alpha-beta");
    }

    #[test]
    fn undefined_name_is_left_verbatim() {
        assert_eq!(with_vars("$(MISSING)/$(A)"), "$(MISSING)/alpha");
    }

    #[test]
    fn defined_empty_value_replaces_with_nothing() {
        assert_eq!(with_vars("[$(EMPTY)]"), "[]");
    }

    #[test]
    fn dollar_dollar_escapes_expansion() {
        assert_eq!(with_vars("$$(A)"), "$(A)");
        assert_eq!(with_vars("$$$(A)"), "$alpha");
        assert_eq!(with_vars("cost: $$5"), "cost: $5");
    }

    #[test]
    fn lone_dollar_is_kept() {
        assert_eq!(with_vars("$"), "$");
        assert_eq!(with_vars("a$b"), "a$b");
        assert_eq!(with_vars("$A"), "$A");
        assert_eq!(with_vars("€$é"), "€$é");
    }

    #[test]
    fn unclosed_reference_is_kept() {
        assert_eq!(with_vars("$(A"), "$(A");
        assert_eq!(with_vars("x $( y"), "x $( y");
    }

    #[test]
    fn empty_name_is_looked_up_and_kept_when_undefined() {
        assert_eq!(with_vars("$()"), "$()");
    }

    #[test]
    fn expansion_is_not_recursive() {
        let vars: HashMap<&str, &str> = [("A", "$(B)"), ("B", "beta")].into();
        assert_eq!(expand("$(A)", |name| vars.get(name).copied()), "$(B)");
    }

    #[test]
    fn command_and_args_expand_against_the_whole_env() {
        let container = Container {
            command: Some(vec!["python".into(), "$(SCRIPT)".into()]),
            args: Some(vec!["--master=$(MASTER_ADDR):$(MASTER_PORT)".into()]),
            ..Container::default()
        };
        let env = [
            ("SCRIPT".to_owned(), "old.py".to_owned()),
            ("MASTER_ADDR".to_owned(), "127.0.0.1".to_owned()),
            ("MASTER_PORT".to_owned(), "29500".to_owned()),
            ("SCRIPT".to_owned(), "train.py".to_owned()),
        ];
        assert_eq!(
            expand_command_and_args(&container, &env),
            ["python", "train.py", "--master=127.0.0.1:29500"]
        );
    }
}
