//! The Kubernetes operator of trainctl: one kube-runtime `Controller` per job kind.
//!
//! The engine decides, this crate only translates (docs/architecture.md §4.3). Two parts, each a
//! folder:
//!
//! - `reconcile/`: the reconcile of one job, a pipeline of named steps, each a module: read and
//!   validate the job ([`job`], [`validate`]), fetch its children from the watches' caches and its
//!   PodGroup, observe them, let the engine decide, apply the plan, and wait until the caches
//!   show what was written; with what every reconcile shares (its [`Context`], [`metrics`], its
//!   [`Error`]). Level-triggered and idempotent;
//! - `runtime/`: the process `trainctl operator` around the reconciles ([`manager`]): the
//!   controllers, their watches and caches ([`controller`]), the connection to the cluster with a
//!   client-side rate limit and a bound on the calls in flight ([`connect`], [`rate_limit`]),
//!   leader election on a Lease ([`leader`]), `/metrics`, `/healthz` and `/readyz` ([`health`]),
//!   a graceful stop on `SIGTERM` ([`shutdown`]), what the flags decide ([`settings`]), and the
//!   command that parses them and starts it all ([`command`]).
//!   docs/operator.md describes them for operators of the operator.
//!
//! Imports go one way: `runtime/` uses `reconcile/`, which never uses `runtime/`. Each folder's
//! `mod.rs` states the rule within it.
//!
//! This file holds only the public API, re-exported from the two parts, and nothing else is
//! public: what `trainctl operator` and the binary `trainctl-operator` (`src/main.rs`, the
//! operator alone, for its image) run ([`command`]; [`manager::run`] with its [`Settings`],
//! [`connect`], [`leader`], [`rate_limit`], [`shutdown`]); a job read and validated as the operator does
//! ([`job`], [`validate`]) for `trainctl --kube` and the end-to-end tests; and for tests and
//! benchmarks, the controllers alone ([`controller::run`] with a [`Context`] and a
//! [`Health`](health::Health)), the [`metrics`] registry, the [`Error`], the [`FIELD_MANAGER`],
//! and how many of a job's creations are in flight at once ([`PARALLELISM`]).

mod reconcile;
mod runtime;

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod tests;

pub use reconcile::apply::PARALLELISM;
pub use reconcile::context::{Context, FIELD_MANAGER};
pub use reconcile::error::Error;
pub use reconcile::{job, metrics, validate};
pub use runtime::settings::Settings;
pub use runtime::{
    command, connect, controller, health, leader, manager, rate_limit, settings, shutdown,
};
