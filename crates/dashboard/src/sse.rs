//! Server-sent event streams (`text/event-stream`) of a page's data: [`stream`] sends it at once,
//! then again after each change it is told of, only when it differs from what it sent last. A
//! comment line every [`KEEP_ALIVE`] keeps idle streams open through proxies. [`Memo`] lets
//! every stream of one topic share one computation per change. The dashboard's
//! `/api/v1/watch/...` routes ([`crate::app`]) send them, each source with its own changes.

use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;
use serde_json::json;
use tokio::sync::watch;

use crate::Failure;

/// How often an idle stream sends a comment line.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// What a stream sends next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// An event of this name with this JSON, unless it is what was sent last.
    Data(&'static str, String),
    /// A last event: what the stream shows is gone.
    Gone(&'static str, String),
}

impl Next {
    /// The event `name` with `data` as JSON; an `error` event when the data could not be read
    /// (a job's data that is gone is [`Next::gone`]'s).
    pub fn of<T: serde::Serialize>(name: &'static str, data: Result<T, Failure>) -> Next {
        match data {
            Ok(data) => Next::Data(name, json!(data).to_string()),
            Err(failure) => Next::Data("error", json!({ "error": failure.message() }).to_string()),
        }
    }

    /// As [`Next::of`], but the last event `deleted` once the job is gone ([`Failure::gone`]).
    pub fn unless_gone<T: serde::Serialize>(name: &'static str, data: Result<T, Failure>) -> Next {
        match data {
            Err(failure) if failure.is_gone() => Next::Gone("deleted", "{}".to_owned()),
            data => Next::of(name, data),
        }
    }
}

/// What a topic's streams send, computed once per change however many streams ask: the first
/// stream to ask after a change computes it, the others wait for it and take the same.
#[derive(Debug, Default)]
pub struct Memo {
    last: tokio::sync::Mutex<Option<(u64, Next)>>,
}

impl Memo {
    /// What `compute` gives at change `version`: computed now unless it was at that version.
    pub async fn get(&self, version: u64, compute: impl Future<Output = Next>) -> Next {
        let mut last = self.last.lock().await;
        if let Some((at, next)) = last.as_ref()
            && *at == version
        {
            return next.clone();
        }
        let next = compute.await;
        *last = Some((version, next.clone()));
        next
    }
}

/// The stream of `next`'s events: one at once, then one after each change of `changes` (and,
/// with `every`, at least that often), each sent only when it differs from the last; it ends
/// after a [`Next::Gone`] or when `changes` closes. `next` is given the change it answers.
pub fn stream<F>(changes: watch::Receiver<u64>, every: Option<Duration>, next: F) -> Response
where
    F: FnMut(u64) -> BoxFuture<'static, Next> + Send + 'static,
{
    struct Cursor<F> {
        changes: watch::Receiver<u64>,
        next: F,
        last: Option<String>,
        first: bool,
        done: bool,
    }
    let mut changes = changes;
    // What changed before this stream began is in its first event.
    changes.borrow_and_update();
    let start = Cursor {
        changes,
        next,
        last: None,
        first: true,
        done: false,
    };
    let events = futures_util::stream::unfold(start, move |mut cursor| async move {
        if cursor.done {
            return None;
        }
        loop {
            if !cursor.first {
                let open = match every {
                    None => cursor.changes.changed().await.is_ok(),
                    Some(period) => tokio::select! {
                        seen = cursor.changes.changed() => seen.is_ok(),
                        () = tokio::time::sleep(period) => true,
                    },
                };
                if !open {
                    return None;
                }
            }
            cursor.first = false;
            let version = *cursor.changes.borrow_and_update();
            match (cursor.next)(version).await {
                Next::Data(_, data) if cursor.last.as_ref() == Some(&data) => {}
                Next::Data(name, data) => {
                    let event = Event::default().event(name).data(&data);
                    cursor.last = Some(data);
                    return Some((Ok::<_, Infallible>(event), cursor));
                }
                Next::Gone(name, data) => {
                    cursor.done = true;
                    return Some((Ok(Event::default().event(name).data(data)), cursor));
                }
            }
        }
    });
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive"))
        .into_response()
}
