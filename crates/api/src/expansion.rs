//! Kubernetes `$(VAR)` expansion, exactly as the kubelet's `expansion.Expand` does it.
//!
//! `$(NAME)` becomes NAME's value when NAME is defined and stays verbatim when it is not; `$$`
//! becomes `$`, so `$$(NAME)` is the literal `$(NAME)`; a lone `$` or an unclosed `$(` stays as
//! written. Env values are expanded against the variables defined before them; command and args
//! against the container's whole env (never against the inherited process env, which the kubelet
//! cannot see either).

use std::collections::HashMap;

use k8s_openapi::api::core::v1::Container;

/// The most bytes one expanded string may hold: the kernel's limit on one argument or
/// environment string (`MAX_ARG_STRLEN`, 32 pages), beyond which `execve` refuses to start the
/// process. Bounding the expansion as it goes also bounds its memory: each variable may
/// reference the one before twice, so 30 short lines would otherwise expand to gigabytes.
pub const MAX_EXPANDED: usize = 128 * 1024;

/// The most bytes a process's arguments and environment may hold together, each string with its
/// ending NUL and its pointer: the kernel's `ARG_MAX` under the usual 8 MiB stack limit (a
/// quarter of it), beyond which `execve` refuses to start the process (`E2BIG`). A container's
/// env and its command and args are expanded within this [`Budget`], so that many variables
/// that each reference a large one cannot make gigabytes of what could never be executed.
pub const MAX_EXPANDED_TOTAL: usize = 2 * 1024 * 1024;

/// An expansion that would hold more than the kernel takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TooLarge {
    /// More than [`MAX_EXPANDED`] bytes in one string.
    #[error(
        "expands to more than {} KiB, the most one argument or environment string may hold",
        MAX_EXPANDED / 1024
    )]
    One,
    /// More than [`MAX_EXPANDED_TOTAL`] bytes with what the container's expansion held before.
    #[error(
        "expands to more than {} MiB with the container's env and args before it, the most a \
         process's arguments and environment may hold together",
        MAX_EXPANDED_TOTAL / (1024 * 1024)
    )]
    Total,
}

/// What is left of the bytes one container's env, command and args may expand to together
/// ([`MAX_EXPANDED_TOTAL`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    left: usize,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            left: MAX_EXPANDED_TOTAL,
        }
    }
}

impl Budget {
    /// Takes one string of `bytes` bytes (as the kernel counts it: with its NUL and its
    /// pointer) from the budget; an error, leaving the budget as it was, when it does not fit.
    pub fn take(&mut self, bytes: usize) -> Result<(), TooLarge> {
        let cost = bytes.saturating_add(1 + std::mem::size_of::<usize>());
        self.left = self.left.checked_sub(cost).ok_or(TooLarge::Total)?;
        Ok(())
    }

    /// Gives back a string of `bytes` bytes taken before (a value replaced).
    pub fn give_back(&mut self, bytes: usize) {
        let cost = bytes.saturating_add(1 + std::mem::size_of::<usize>());
        self.left = self.left.saturating_add(cost).min(MAX_EXPANDED_TOTAL);
    }
}

/// Expands `$(NAME)` references in `input`, looking names up with `lookup`; stops as soon as
/// the result would exceed [`MAX_EXPANDED`] bytes.
pub fn expand<F, S>(input: &str, lookup: F) -> Result<String, TooLarge>
where
    F: Fn(&str) -> Option<S>,
    S: AsRef<str>,
{
    expand_bounded(input, lookup, MAX_EXPANDED)
}

/// [`expand`] within `budget`, which the result is taken from: stops as soon as the result would
/// not fit in it.
pub fn expand_within<F, S>(input: &str, lookup: F, budget: &mut Budget) -> Result<String, TooLarge>
where
    F: Fn(&str) -> Option<S>,
    S: AsRef<str>,
{
    let expanded = expand_bounded(input, lookup, budget.left.min(MAX_EXPANDED)).map_err(|_| {
        if budget.left < MAX_EXPANDED {
            TooLarge::Total
        } else {
            TooLarge::One
        }
    })?;
    budget.take(expanded.len())?;
    Ok(expanded)
}

/// Expands `input` into at most `limit` bytes.
fn expand_bounded<F, S>(input: &str, lookup: F, limit: usize) -> Result<String, TooLarge>
where
    F: Fn(&str) -> Option<S>,
    S: AsRef<str>,
{
    let mut out = Bounded {
        text: String::with_capacity(input.len().min(limit)),
        limit,
    };
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at])?;
        let after = &rest[at + 1..];
        let Some(next) = after.chars().next() else {
            // A trailing `$` stays verbatim.
            out.push_str("$")?;
            rest = after;
            break;
        };
        match next {
            '$' => {
                out.push_str("$")?;
                rest = &after[1..];
            }
            '(' => {
                if let Some(close) = after.find(')') {
                    let name = &after[1..close];
                    if let Some(value) = lookup(name) {
                        out.push_str(value.as_ref())?;
                    } else {
                        out.push_str("$(")?;
                        out.push_str(name)?;
                        out.push_str(")")?;
                    }
                    rest = &after[close + 1..];
                } else {
                    // Unclosed: the kubelet keeps `$(` and scans on after it.
                    out.push_str("$(")?;
                    rest = &after[1..];
                }
            }
            other => {
                out.push_str("$")?;
                out.push_str(&after[..other.len_utf8()])?;
                rest = &after[other.len_utf8()..];
            }
        }
    }
    out.push_str(rest)?;
    Ok(out.text)
}

/// A string that refuses to grow past its limit.
struct Bounded {
    text: String,
    limit: usize,
}

impl Bounded {
    fn push_str(&mut self, text: &str) -> Result<(), TooLarge> {
        if self.text.len() + text.len() > self.limit {
            return Err(TooLarge::One);
        }
        self.text.push_str(text);
        Ok(())
    }
}

/// The container's `command` followed by its `args`, each expanded against `env` (the
/// container's resolved env; a later definition of a name wins) within what `env` left of the
/// [`Budget`]; an item too large to pass to a process is an error naming it (`command[0]`,
/// `args[1]`).
pub fn expand_command_and_args(
    container: &Container,
    env: &[(String, String)],
) -> Result<Vec<String>, String> {
    let mut budget = Budget::default();
    for (name, value) in env {
        // `NAME=VALUE`.
        budget
            .take(name.len() + 1 + value.len())
            .map_err(|too_large| format!("env {name} {too_large}"))?;
    }
    let vars: HashMap<&str, &str> = env
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    let command = container.command.iter().flatten().enumerate();
    let args = container.args.iter().flatten().enumerate();
    command
        .map(|(at, item)| ("command", at, item))
        .chain(args.map(|(at, item)| ("args", at, item)))
        .map(|(field, at, item)| {
            expand_within(item, |name| vars.get(name).copied(), &mut budget)
                .map_err(|too_large| format!("{field}[{at}] {too_large}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_vars(input: &str) -> String {
        let vars: HashMap<&str, &str> = [("A", "alpha"), ("B", "beta"), ("EMPTY", "")].into();
        expand(input, |name| vars.get(name).copied()).expect("small")
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
        assert_eq!(
            expand("$(A)", |name| vars.get(name).copied()),
            Ok("$(B)".to_owned())
        );
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
            Ok(vec![
                "python".to_owned(),
                "train.py".to_owned(),
                "--master=127.0.0.1:29500".to_owned()
            ])
        );
    }

    #[test]
    fn an_expansion_stops_at_the_kernels_limit_for_one_string() {
        let half = "x".repeat(MAX_EXPANDED / 2);
        let vars: HashMap<&str, &str> = [("HALF", half.as_str())].into();
        let lookup = |name: &str| vars.get(name).copied();
        assert_eq!(
            expand("$(HALF)$(HALF)", lookup).map(|value| value.len()),
            Ok(MAX_EXPANDED)
        );
        assert_eq!(expand("$(HALF)$(HALF)!", lookup), Err(TooLarge::One));
        assert_eq!(expand("$(HALF)$(HALF)$(HALF)", lookup), Err(TooLarge::One));
        assert_eq!(
            TooLarge::One.to_string(),
            "expands to more than 128 KiB, the most one argument or environment string may hold"
        );
    }

    #[test]
    fn command_or_args_too_large_name_the_item() {
        let container = Container {
            command: Some(vec!["sh".into()]),
            args: Some(vec!["-c".into(), "$(BIG)$(BIG)".into()]),
            ..Container::default()
        };
        let env = [("BIG".to_owned(), "y".repeat(MAX_EXPANDED))];
        assert_eq!(
            expand_command_and_args(&container, &env),
            Err(format!("args[1] {}", TooLarge::One))
        );
    }

    #[test]
    fn many_strings_stop_at_the_kernels_limit_for_them_all() {
        let big = "z".repeat(100 * 1024);
        let vars: HashMap<&str, &str> = [("BIG", big.as_str())].into();
        let mut budget = Budget::default();
        let mut taken = 0;
        let error = loop {
            match expand_within("$(BIG)", |name| vars.get(name).copied(), &mut budget) {
                Ok(value) => taken += value.len(),
                Err(error) => break error,
            }
        };
        // 20 of 100 KiB fit in 2 MiB, with their NULs and pointers; the 21st does not.
        assert_eq!(taken, 20 * big.len());
        assert_eq!(error, TooLarge::Total);
        assert_eq!(
            error.to_string(),
            "expands to more than 2 MiB with the container's env and args before it, the most a \
             process's arguments and environment may hold together"
        );
        // What did not fit was not taken: a smaller string still does.
        assert_eq!(
            expand_within("small", |_| None::<&str>, &mut budget).as_deref(),
            Ok("small")
        );
    }

    #[test]
    fn command_and_args_get_what_the_env_left() {
        let container = Container {
            args: Some(vec!["$(BIG)".into(), "$(BIG)".into()]),
            ..Container::default()
        };
        let env: Vec<(String, String)> = (0..19)
            .map(|at| (format!("V{at}"), "e".repeat(100 * 1024)))
            .chain([("BIG".to_owned(), "a".repeat(50 * 1024))])
            .collect();
        assert_eq!(
            expand_command_and_args(&container, &env),
            Err(format!("args[1] {}", TooLarge::Total))
        );
    }
}
