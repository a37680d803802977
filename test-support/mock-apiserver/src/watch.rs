//! Watch streams: newline-separated JSON events, over one chunked HTTP response.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Bytes;
use futures_util::Stream;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

use crate::render::Rendered;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::Change;
use crate::target::Target;

/// What a watch asked for.
#[derive(Debug, Clone)]
pub struct WatchRequest {
    /// The collection watched (one namespace or all).
    pub target: Target,
    /// Its label selector.
    pub labels: LabelSelector,
    /// Its field selector.
    pub fields: FieldSelector,
    /// Whether objects are sent as `PartialObjectMetadata`.
    pub metadata_only: bool,
    /// When the server ends the stream (`timeoutSeconds`).
    pub deadline: Instant,
    /// `sendInitialEvents=true`: the initial `ADDED` events end with a bookmark saying so.
    pub initial_events_end: Option<u64>,
}

/// One line of a watch stream.
#[derive(Serialize)]
struct Event<'a> {
    #[serde(rename = "type")]
    type_: &'a str,
    object: Rendered<'a>,
}

fn line(event: &Event<'_>) -> Bytes {
    let mut bytes = serde_json::to_vec(event).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}

struct State {
    request: WatchRequest,
    pending: VecDeque<Bytes>,
    changes: broadcast::Receiver<Arc<Change>>,
    drops: watch::Receiver<u64>,
    /// Kept while the stream lives (it counts the open watches).
    _guard: Box<dyn Send>,
}

/// The stream of a watch that begins with `first` and goes on with `changes`; it ends at the
/// deadline, when the watches are dropped, or when it falls too far behind (the client then
/// resumes from the last version it saw).
pub fn events(
    request: WatchRequest,
    first: &[Arc<Change>],
    changes: broadcast::Receiver<Arc<Change>>,
    mut drops: watch::Receiver<u64>,
    guard: Box<dyn Send>,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send + use<> {
    drops.mark_unchanged();
    let mut pending: VecDeque<Bytes> = first
        .iter()
        .filter_map(|change| render_change(&request, change))
        .collect();
    if let Some(version) = request.initial_events_end {
        pending.push_back(line(&Event {
            type_: "BOOKMARK",
            object: Rendered::Full(&json!({
                "apiVersion": request.target.resource.api_version(),
                "kind": request.target.resource.kind,
                "metadata": {
                    "resourceVersion": version.to_string(),
                    "annotations": {"k8s.io/initial-events-end": "true"},
                },
            })),
        }));
    }
    let state = State {
        request,
        pending,
        changes,
        drops,
        _guard: guard,
    };
    futures_util::stream::unfold(state, |mut state| async move {
        if let Some(line) = state.pending.pop_front() {
            return Some((Ok(line), state));
        }
        loop {
            tokio::select! {
                received = state.changes.recv() => {
                    // Lagging behind (or the store gone) ends the stream; the client resumes.
                    let change = received.ok()?;
                    if let Some(line) = render_change(&state.request, &change) {
                        return Some((Ok(line), state));
                    }
                }
                _ = state.drops.changed() => return None,
                () = tokio::time::sleep_until(state.request.deadline) => return None,
            }
        }
    })
}

/// The one-event stream that refuses a watch (`410 Gone` for an expired version), as the API
/// server sends it: an `ERROR` event in a successful response.
pub fn refusal(status: &Value) -> impl Stream<Item = Result<Bytes, Infallible>> + Send + use<> {
    let line = line(&Event {
        type_: "ERROR",
        object: Rendered::Full(status),
    });
    futures_util::stream::iter([Ok(line)])
}

/// The line of `change`, if the watch sees it.
fn render_change(request: &WatchRequest, change: &Change) -> Option<Bytes> {
    let type_ = change.seen_as(&request.target, &request.labels, &request.fields)?;
    Some(line(&Event {
        type_: type_.as_str(),
        object: Rendered::new(&change.object, request.metadata_only),
    }))
}
