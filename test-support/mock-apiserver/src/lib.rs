//! A mock Kubernetes API server over real HTTP, in memory: what the trainctl operator uses, so
//! that a real `kube::Client` (`Config::new(url)`) and the whole controller run against it in
//! tests and benchmarks. Small and honest rather than complete.
//!
//! ## What it serves
//! - The namespaced resources in [`resources::RESOURCES`]: the six job kinds
//!   (`kubeflow.org/v1`), pods, services, config maps, service accounts, events (core and
//!   `events.k8s.io/v1`), leases, roles, role bindings and both kinds of PodGroups; at
//!   `/api/v1/...` and `/apis/<group>/<version>/...`, per namespace or (lists and watches)
//!   across all namespaces.
//! - `get`; `list` with `labelSelector` (equality- and set-based), `fieldSelector`
//!   (`metadata.name`, `metadata.namespace`), `limit` and `continue`; metadata-only gets,
//!   lists and watches (`Accept: ...;as=PartialObjectMetadata[List]`).
//! - `watch=true`: newline-separated JSON events over one chunked response (`ADDED`,
//!   `MODIFIED`, `DELETED`; every existing object as `ADDED` when `resourceVersion` is unset or
//!   `0`; the remembered changes after it otherwise; an `ERROR` event with `410 Expired` when
//!   it is older than the history kept; an object that comes into or leaves a selected watch
//!   as `ADDED` or `DELETED` there; `sendInitialEvents=true` ends its initial events with the
//!   `k8s.io/initial-events-end` bookmark), ended after `timeoutSeconds`.
//! - `create` (`POST`), `update` (`PUT`, with a `resourceVersion` precondition), `patch`:
//!   server-side apply (`application/apply-patch+yaml`, JSON bodies; `fieldManager` required)
//!   that creates the object or merges the applied fields into it, and JSON merge patches;
//!   the `status` subresource of pods, services, jobs and PodGroups (writes to the object leave
//!   its status alone, and the other way round); `delete`, with the owned objects deleted
//!   after their owner (transitively), as the garbage collector does in the background.
//! - One `resourceVersion` counter that every change bumps (a write that changes nothing bumps
//!   nothing and sends no event, as the API server does); `uid`, `creationTimestamp` and
//!   `generation` are set by the server.
//!
//! ## For tests and benchmarks
//! A fixed latency before every call ([`Settings::latency`]); call counters by verb and path;
//! faults injected into the next calls to a path ([`Fault`]: an error status, or a call held
//! past the client's timeout); all open watch streams dropped at once; the history forgotten, of
//! every resource or of one (the next resumes get `410 Gone`); [`MockApiServer::wait_until`] to wait for a state without
//! sleeping. The binary serves the same, with the `/mock/` paths (`GET /mock/stats`,
//! `POST /mock/faults`, `POST /mock/drop-watches`, `POST /mock/forget-history`) for scripts.
//!
//! ## What it does not do
//! No authentication, authorization, admission, validation against schemas, defaulting,
//! discovery, OpenAPI, protobuf, YAML bodies, HTTP/2, strategic merge or JSON patches,
//! `deletecollection`, cluster-scoped resources, graceful deletion (deletion is immediate;
//! no `deletionTimestamp`, no finalizers), or field selectors on other fields. Server-side
//! apply does not track field managers: applied fields are merged like a JSON merge patch
//! (lists replaced, fields a manager stops applying kept), apply conflicts are never
//! reported, and an applied status replaces the stored one (right when one manager owns
//! the status, as here). A paginated list is not a snapshot: its pages read the current
//! objects, though the list's `resourceVersion` is that of its first page, so a watch
//! started from it sees every later change. Watches send no periodic bookmarks.

pub mod calls;
pub mod error;
pub mod faults;
pub mod merge;
pub mod render;
pub mod resources;
pub mod selector;
pub mod server;
pub mod store;
pub mod target;
pub mod watch;

pub use axum::http::{Method, StatusCode};
pub use calls::Verb;
pub use faults::Fault;
pub use server::{MockApiServer, Settings};
