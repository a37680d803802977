//! Properties of `reconcile` over random jobs and random histories: a simulated cluster executes
//! each plan, the world changes at random (pods start, finish, fail, restart in place, vanish;
//! time passes; the job is suspended, resumed, scaled), and the engine reconciles again.
//!
//! - a job is never both Succeeded and Failed, and both are absorbing;
//! - replica counts never exceed `replicas`;
//! - a plan, once executed, needs no repeating: reconciling the result creates and deletes
//!   nothing more, records no event and counts no transition twice;
//! - the same input gives the same plan; nothing panics, whatever is observed.

mod histories;
mod jobs;
mod observations;

use jiff::Timestamp;
use proptest::test_runner::{Config, FileFailurePersistence};

/// The time the histories start at, and the observations are around.
const T0: Timestamp = Timestamp::constant(1_767_225_600, 0);

/// `cases` cases a property; the failing cases found are kept beside the property's source
/// (`histories.proptest-regressions`), and replayed first.
fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..Config::default()
    }
}
