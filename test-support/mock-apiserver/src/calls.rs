//! Call counters: how many calls of each verb reached each path.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use axum::http::Method;
use serde_json::{Value, json};

use crate::target::Target;

/// What a call does, as Kubernetes names it (RBAC verbs and audit logs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verb {
    /// `GET` of one object.
    Get,
    /// `GET` of a collection.
    List,
    /// `GET` of a collection with `watch=true`.
    Watch,
    /// `POST`.
    Create,
    /// `PUT`.
    Update,
    /// `PATCH` (server-side apply or merge patch).
    Patch,
    /// `DELETE` of one object.
    Delete,
}

impl Verb {
    /// The verb of a call, or `None` for a method this server does not serve on `target`.
    #[must_use]
    pub fn of(method: &Method, target: &Target, watch: bool) -> Option<Verb> {
        let one = target.name.is_some();
        match *method {
            Method::GET if one => Some(Verb::Get),
            Method::GET if watch => Some(Verb::Watch),
            Method::GET => Some(Verb::List),
            Method::POST if !one => Some(Verb::Create),
            Method::PUT if one => Some(Verb::Update),
            Method::PATCH if one => Some(Verb::Patch),
            Method::DELETE if one => Some(Verb::Delete),
            _ => None,
        }
    }

    /// The lowercase name (`watch`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
        }
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The calls counted so far, by verb and path (without the query).
#[derive(Debug, Default)]
pub struct Calls(Mutex<BTreeMap<(Verb, String), u64>>);

impl Calls {
    /// Counts one call.
    pub fn count(&self, verb: Verb, path: &str) {
        *self.counts().entry((verb, path.to_owned())).or_default() += 1;
    }

    /// How many calls of `verb` reached `path`.
    #[must_use]
    pub fn of(&self, verb: Verb, path: &str) -> u64 {
        self.counts()
            .get(&(verb, path.to_owned()))
            .copied()
            .unwrap_or_default()
    }

    /// How many calls of `verb` reached any path.
    #[must_use]
    pub fn total(&self, verb: Verb) -> u64 {
        self.counts()
            .iter()
            .filter(|((counted, _), _)| *counted == verb)
            .map(|(_, count)| count)
            .sum()
    }

    /// Every counter, as `[{"verb", "path", "count"}]`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        self.counts()
            .iter()
            .map(|((verb, path), count)| json!({"verb": verb.as_str(), "path": path, "count": count}))
            .collect()
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, BTreeMap<(Verb, String), u64>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The calls being served at once (watches excepted: they stay open), and the most there were.
#[derive(Debug, Default)]
pub struct InFlight {
    now: AtomicUsize,
    peak: AtomicUsize,
}

impl InFlight {
    /// Counts a call in flight until the guard is dropped.
    pub fn begin(&self) -> InFlightCall<'_> {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        InFlightCall(self)
    }

    /// The most calls that were in flight at once.
    #[must_use]
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }
}

/// One call in flight; see [`InFlight::begin`].
#[derive(Debug)]
pub struct InFlightCall<'a>(&'a InFlight);

impl Drop for InFlightCall<'_> {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_of_calls_in_flight_is_kept() {
        let in_flight = InFlight::default();
        let first = in_flight.begin();
        let second = in_flight.begin();
        drop(first);
        let third = in_flight.begin();
        assert_eq!(in_flight.peak(), 2);
        drop((second, third));
        let _fourth = in_flight.begin();
        assert_eq!(in_flight.peak(), 2);
    }

    #[test]
    fn verbs_follow_method_and_target() {
        let collection = Target::parse("/api/v1/namespaces/ml/pods").expect("served");
        let object = Target::parse("/api/v1/namespaces/ml/pods/a").expect("served");
        assert_eq!(Verb::of(&Method::GET, &collection, false), Some(Verb::List));
        assert_eq!(Verb::of(&Method::GET, &collection, true), Some(Verb::Watch));
        assert_eq!(Verb::of(&Method::GET, &object, false), Some(Verb::Get));
        assert_eq!(
            Verb::of(&Method::POST, &collection, false),
            Some(Verb::Create)
        );
        assert_eq!(Verb::of(&Method::POST, &object, false), None);
        assert_eq!(Verb::of(&Method::DELETE, &collection, false), None);
    }

    #[test]
    fn counts_by_verb_and_path() {
        let calls = Calls::default();
        calls.count(Verb::Patch, "/a");
        calls.count(Verb::Patch, "/a");
        calls.count(Verb::Patch, "/b");
        calls.count(Verb::Get, "/a");
        assert_eq!(calls.of(Verb::Patch, "/a"), 2);
        assert_eq!(calls.of(Verb::Delete, "/a"), 0);
        assert_eq!(calls.total(Verb::Patch), 3);
        assert_eq!(
            calls.to_json()[0],
            json!({"verb": "get", "path": "/a", "count": 1})
        );
    }
}
