//! The transition table: one row per rule of docs/semantics.md §3, §5 and §6 (and per kind where
//! kinds differ), each a test named for its rule. The rows are in [`table`]; `docs/transitions.md`
//! is rendered from them ([`docs`]), and a test fails when they drift apart
//! (`UPDATE_DOCS=1 cargo test -p trainctl-engine transitions` regenerates it).
//!
//! The columns use the small language of [`scenario`](super::scenario).

use super::reconcile;
use super::scenario::{self, NOW};

/// One row of the table.
pub(crate) struct Row {
    /// The rule, also the name of its test.
    pub(crate) rule: &'static str,
    /// The section of docs/semantics.md that states it; `[fix]` marks a deliberate difference
    /// from upstream (its §8).
    pub(crate) spec: &'static str,
    /// The job's shape.
    pub(crate) job: &'static str,
    /// Its status before this reconcile.
    pub(crate) before: &'static str,
    /// What the runtime observed.
    pub(crate) observed: &'static str,
    /// The essentials of the plan.
    pub(crate) plan: &'static str,
}

/// Declares the table and one test per row, named for its rule.
macro_rules! transitions {
    ($(
        $rule:ident {
            spec: $spec:literal,
            job: $job:literal,
            before: $before:literal,
            observed: $observed:literal,
            plan: $plan:literal $(,)?
        }
    )*) => {
        /// Every row, in the order of the docs.
        pub(crate) const TABLE: &[Row] = &[$(Row {
            rule: stringify!($rule),
            spec: $spec,
            job: $job,
            before: $before,
            observed: $observed,
            plan: $plan,
        },)*];

        $(
            #[test]
            fn $rule() {
                check(TABLE, stringify!($rule));
            }
        )*
    };
}

// After the macro: the table's module uses it.
mod docs;
mod table;

/// Runs the row of `table` named `rule` and compares the plan's essentials with the expected
/// ones.
fn check(table: &[Row], rule: &str) {
    let row = table
        .iter()
        .find(|row| row.rule == rule)
        .expect("every test has its row");
    let actual = run(row);
    assert_eq!(
        actual, row.plan,
        "\nrule {}\n  job      {}\n  before   {}\n  observed {}\n",
        row.rule, row.job, row.before, row.observed
    );
}

/// The essentials of the plan for a row's scenario.
pub(crate) fn run(row: &Row) -> String {
    let mut job = scenario::job(row.job);
    let observed = scenario::observed(row.observed, &job);
    scenario::set_before(&mut job, row.before, &observed);
    let plan = reconcile(&job, &observed, NOW);
    assert_eq!(
        plan,
        reconcile(&job, &observed, NOW),
        "{}: the same input gives the same plan",
        row.rule
    );
    scenario::essentials(&plan, &observed)
}
