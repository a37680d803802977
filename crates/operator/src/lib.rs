//! The Kubernetes operator of trainctl: one kube-runtime `Controller` per job kind.
//!
//! The engine decides, this crate only translates (docs/architecture.md §4.3). One
//! reconcile of a job is a pipeline of named steps:
//!
//! 1. **read and validate** the job, defaulted; one that cannot be read or is invalid fails
//!    with the reason, and nothing is created for it — [`job`], [`validate`] (pure);
//! 2. **fetch** the job's Pods and Services from the watches' caches and, under gang
//!    scheduling, its PodGroup — [`children`], [`gang`];
//! 3. **observe**: translate the Pods and Services into the engine's [`Observed`] —
//!    [`observe`] (pure);
//! 4. **decide**: [`trainctl_engine::reconcile`] with `now` gives a [`Plan`];
//! 5. **apply** the plan: creation of the objects `trainctl render` prints (the refused ones
//!    noted for the next status: [`refusals`]), deletions, the status subresource, events (each
//!    replica exit once: [`exits`]; queued and written in the background: [`events`]), the
//!    job's deletion after its TTL — [`apply`];
//! 6. **wait** until the caches show what was created and deleted — [`children`].
//!
//! Level-triggered and idempotent: children have deterministic names, so a reconcile that failed
//! half-way is simply run again.
//!
//! The watches that wake reconciles each recover from their errors on their own ([`watch`]).
//!
//! Around the reconcile, the process `trainctl operator` runs ([`manager`]): the connection to
//! the cluster with a client-side rate limit and a bound on the calls in flight ([`connect`],
//! [`rate_limit`]), leader election on a
//! Lease ([`leader`]), `/metrics` ([`metrics`]), `/healthz` and `/readyz` ([`health`],
//! [`http`]), and a graceful stop on `SIGTERM` ([`shutdown`]); [`settings`] is what the flags
//! decide. docs/operator.md describes them for operators of the operator.
//!
//! [`Observed`]: trainctl_engine::Observed
//! [`Plan`]: trainctl_engine::Plan

mod apply;
mod children;
pub mod connect;
mod context;
pub mod controller;
mod error;
mod events;
mod exits;
mod gang;
pub mod health;
mod http;
pub mod job;
pub mod leader;
pub mod manager;
pub mod metrics;
mod observe;
mod owners;
mod pacing;
pub mod rate_limit;
mod refusals;
pub mod settings;
pub mod shutdown;
pub mod validate;
mod watch;

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod tests;

pub use apply::PARALLELISM;
pub use context::Context;
pub use error::Error;
pub use settings::Settings;

/// The field manager of every server-side apply, and the reporting controller of events.
pub const FIELD_MANAGER: &str = "trainctl";

/// Server-side apply as [`FIELD_MANAGER`], taking over fields others set.
#[must_use]
pub(crate) fn apply_params() -> kube::api::PatchParams {
    kube::api::PatchParams::apply(FIELD_MANAGER).force()
}
