//! Faults injected into the next calls to a path: an error status, or a call held back.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use axum::http::{Method, StatusCode};

/// What an injected fault does to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Answer with this status (`409`, `500`, ...) and a `Status` body, changing nothing.
    Fail(StatusCode),
    /// Hold the call this long before serving it; a client whose timeout is shorter gives up
    /// first, and the call is then never served.
    Hold(Duration),
}

#[derive(Debug)]
struct Rule {
    method: Method,
    path: String,
    remaining: usize,
    fault: Fault,
}

/// The faults waiting for their calls, first added first used.
#[derive(Debug, Default)]
pub struct Faults(Mutex<Vec<Rule>>);

impl Faults {
    /// Makes the next `times` calls of `method` to `path` (without the query) meet `fault`.
    pub fn add(&self, method: Method, path: &str, times: usize, fault: Fault) {
        if times == 0 {
            return;
        }
        self.rules().push(Rule {
            method,
            path: path.to_owned(),
            remaining: times,
            fault,
        });
    }

    /// The fault this call meets, if any (and one call fewer for that fault).
    pub fn take(&self, method: &Method, path: &str) -> Option<Fault> {
        let mut rules = self.rules();
        let index = rules
            .iter()
            .position(|rule| rule.method == method && rule.path == path)?;
        let rule = &mut rules[index];
        rule.remaining -= 1;
        let fault = rule.fault;
        if rule.remaining == 0 {
            rules.remove(index);
        }
        Some(fault)
    }

    fn rules(&self) -> std::sync::MutexGuard<'_, Vec<Rule>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_meets_the_next_calls_then_stops() {
        let faults = Faults::default();
        let fail = Fault::Fail(StatusCode::CONFLICT);
        faults.add(Method::PATCH, "/api/v1/namespaces/ml/pods/a", 2, fail);
        assert_eq!(
            faults.take(&Method::GET, "/api/v1/namespaces/ml/pods/a"),
            None
        );
        assert_eq!(
            faults.take(&Method::PATCH, "/api/v1/namespaces/ml/pods/b"),
            None
        );
        assert_eq!(
            faults.take(&Method::PATCH, "/api/v1/namespaces/ml/pods/a"),
            Some(fail)
        );
        assert_eq!(
            faults.take(&Method::PATCH, "/api/v1/namespaces/ml/pods/a"),
            Some(fail)
        );
        assert_eq!(
            faults.take(&Method::PATCH, "/api/v1/namespaces/ml/pods/a"),
            None
        );
    }

    #[test]
    fn a_zero_times_fault_is_never_met() {
        let faults = Faults::default();
        faults.add(
            Method::GET,
            "/api/v1/pods",
            0,
            Fault::Hold(Duration::from_secs(1)),
        );
        assert_eq!(faults.take(&Method::GET, "/api/v1/pods"), None);
    }
}
