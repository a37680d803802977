//! The process `trainctl operator` around the reconciles: what starts them, paces them, and
//! keeps the process connected, elected, observable and stoppable.
//!
//! - [`manager`]: the process itself (what controller-runtime calls the manager): the order in
//!   which the parts below start and stop;
//! - [`controller`]: one kube-runtime `Controller` per kind and namespace, with its watches
//!   (each recovering from its errors on its own: [`watch`]), the caches of children that the
//!   reconciles read, at most `--controller-threads` reconciles at a time, and a job reconciled
//!   at most once a second while only its children change ([`pacing`]);
//! - [`connect`]: the connection to the cluster, with a client-side rate limit
//!   ([`rate_limit`]), a bound on the calls in flight, and a timeout on every call;
//! - [`leader`]: leader election on a Lease;
//! - [`health`] and [`http`]: what `/healthz` and `/readyz` report, and the endpoints that serve
//!   them and `/metrics`;
//! - [`shutdown`]: the stop requests (`SIGTERM`, `SIGINT`);
//! - [`settings`]: what the flags decide;
//! - [`command`]: the operator as a command: its flags, and what starts the rest (logs, the
//!   connection, the manager), for `trainctl operator` and the image's `trainctl-operator`.
//!
//! Imports go one way: this folder uses `crate::reconcile`, which never uses it. Within it,
//! [`command`] uses [`manager`] and what it needs to start it; [`manager`] uses the parts it
//! starts; [`controller`] uses [`health`], [`pacing`] and [`watch`];
//! [`connect`] uses [`rate_limit`]; [`settings`] uses [`leader`] and [`rate_limit`]; [`http`]
//! uses [`health`].

pub mod command;
pub mod connect;
pub mod controller;
mod gate;
pub mod health;
mod http;
pub mod leader;
pub mod manager;
mod pacing;
pub mod rate_limit;
pub mod settings;
pub mod shutdown;
mod watch;
