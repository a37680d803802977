//! The `trainctl server` API (`docs/server-api.md`), defined once: the types of its answers,
//! request bodies and queries. The server builds them, the CLI's client decodes the same types, and the
//! server's OpenAPI document (`GET /openapi.json`) takes every schema from them
//! ([`schemars::JsonSchema`]).
//!
//! Fields the server fills from a fixed vocabulary (a job's kind, its state) are `&'static str`
//! on the server's side; decoding accepts exactly the words of that vocabulary, which is also
//! what the schemas enumerate.

mod dashboard;
mod job;
mod machine;
mod submit;
mod words;

pub use dashboard::{
    ClusterShown, DEFAULT_POINTS, DashboardInfo, LoginCode, LoginRequest, LoginToken, LogsQuery,
    MAX_POINTS, ScalarsQuery, ScalarsView, SeriesView, Source,
};
pub use job::{EventView, JobSummary, JobView, ReplicaView};
pub use machine::{Amounts, GpuHolder, GpuView, HolderView, JobRef, MachineView, QueuedView};
pub use submit::{ClaimBound, ObjectApplied, QuotaApplied, Submitted};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A word of a fixed vocabulary (a kind, a state), as the server writes it: decoding accepts the
/// vocabulary's words only and gives back the same `&'static str`. (An alias, so that serde does
/// not take the field for a string borrowed from the input, which would tie decoding to it.)
pub type Word = &'static str;

/// Every error answer: `{"error": "...", "details": [...]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "Error")]
pub struct ErrorBody {
    /// The error, one line.
    pub error: String,
    /// More lines (for an invalid manifest: one per problem, in the `validate` format).
    #[serde(default)]
    pub details: Vec<String>,
}

/// A list's answer: `{"items": [...]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(inline)]
pub struct Items<T> {
    /// The items, in the list's order.
    pub items: Vec<T>,
}

/// A delete's answer: `{"deleted": ...}`, the object as it was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(inline)]
pub struct Deleted<T> {
    /// The object as it was.
    pub deleted: T,
}
