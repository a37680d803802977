//! A mock Kubernetes API server for unit tests, over tower-test rather than HTTP: a
//! `kube::Client` whose every request is recorded ([`Sent`]) and answered by a function of the
//! test ([`Reply`]).
//!
//! ```ignore
//! let (client, handle) = trainctl_kube_recorder::client("default");
//! let server = trainctl_kube_recorder::serve(handle, |sent: &Sent| (200, json!({})));
//! // ... use `client`, then drop it (and every clone) ...
//! let sent = trainctl_kube_recorder::received(server).await;
//! ```

#![allow(
    clippy::missing_panics_doc,
    reason = "these helpers run inside tests, where a panic is the test's failure, said in its \
              message"
)]

use std::collections::HashMap;
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use serde_json::Value;
use tokio::task::JoinHandle;
use tower_test::mock::{self, SendResponse};

/// The test's end of the mock API server: the requests the client sends arrive here.
pub type Handle = mock::Handle<Request<Body>, Response<Body>>;

/// One request the client sent.
#[derive(Debug, Clone)]
pub struct Sent {
    /// The HTTP method.
    pub method: Method,
    /// Path and query, as sent (percent-encoded).
    pub uri: String,
    /// The `Content-Type` header, if there was one.
    pub content_type: Option<String>,
    /// The body: JSON, or `Null` when empty.
    pub body: Value,
}

impl Sent {
    /// The path, without the query.
    #[must_use]
    pub fn path(&self) -> &str {
        self.uri.split('?').next().unwrap_or_default()
    }

    /// Whether the request is a watch (`watch=true` in its query).
    #[must_use]
    pub fn is_watch(&self) -> bool {
        self.uri.contains("watch=true")
    }
}

/// How the mock answers a request.
///
/// A `(status, Value)` tuple converts to [`Reply::Json`], whatever the value (a JSON string is
/// sent as JSON, quoted); a plain-text body is asked for with [`Reply::Text`].
#[derive(Debug)]
pub enum Reply {
    /// A JSON body with this HTTP status.
    Json(u16, Value),
    /// A plain body (a log, a stream of watch events) with status 200.
    Text(String),
    /// No answer: the request stays open (a watch with nothing to say) until the client is
    /// gone.
    Hang,
    /// No answer yet: the request waits under this name for a [`Reply::Release`].
    Held(&'static str),
    /// The first reply to this request, and the second to the request held under the name.
    Release(Box<Reply>, &'static str, Box<Reply>),
}

impl From<(u16, Value)> for Reply {
    fn from((code, body): (u16, Value)) -> Reply {
        Reply::Json(code, body)
    }
}

impl From<(StatusCode, Value)> for Reply {
    fn from((status, body): (StatusCode, Value)) -> Reply {
        Reply::Json(status.as_u16(), body)
    }
}

/// A client of namespace `namespace` whose requests arrive at the returned handle (for
/// [`serve`]).
#[must_use]
pub fn client(namespace: &str) -> (Client, Handle) {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    (Client::new(service, namespace), handle)
}

/// Serves the requests arriving at `handle` with `answer` until the client is gone, on a task
/// of its own; the task returns every request received, in order ([`received`]).
pub fn serve<R: Into<Reply>>(
    mut handle: Handle,
    mut answer: impl FnMut(&Sent) -> R + Send + 'static,
) -> JoinHandle<Vec<Sent>> {
    tokio::spawn(async move {
        let mut sent = Vec::new();
        let mut open = Vec::new();
        let mut held = HashMap::new();
        while let Some((request, respond)) = handle.next_request().await {
            let (parts, body) = request.into_parts();
            let bytes = body.collect_bytes().await.expect("a request body");
            let request = Sent {
                method: parts.method,
                uri: parts.uri.to_string(),
                content_type: parts
                    .headers
                    .get(http::header::CONTENT_TYPE)
                    .and_then(|value| value.to_str().ok())
                    .map(str::to_owned),
                body: if bytes.is_empty() {
                    Value::Null
                } else {
                    serde_json::from_slice(&bytes).expect("a JSON body")
                },
            };
            let reply = answer(&request).into();
            sent.push(request);
            send(respond, reply, &mut open, &mut held);
        }
        sent
    })
}

/// What the server of [`serve`] received, once the client is gone (within 5 seconds).
pub async fn received(server: JoinHandle<Vec<Sent>>) -> Vec<Sent> {
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("the mock server stops once the client is gone")
        .expect("the mock server does not panic")
}

/// Where the mock answers one request.
type Responder = SendResponse<Response<Body>>;

/// Sends `reply` through `respond`, or keeps `respond` open (in `open`, or in `held` under a
/// name).
fn send(
    respond: Responder,
    reply: Reply,
    open: &mut Vec<Responder>,
    held: &mut HashMap<&'static str, Responder>,
) {
    let (code, body) = match reply {
        Reply::Json(code, value) => (code, serde_json::to_vec(&value).expect("JSON")),
        Reply::Text(text) => (200, text.into_bytes()),
        Reply::Hang => return open.push(respond),
        Reply::Held(name) => {
            held.insert(name, respond);
            return;
        }
        Reply::Release(this, name, that) => {
            let waiting = held.remove(name).expect("a request held under that name");
            send(waiting, *that, open, held);
            return send(respond, *this, open, held);
        }
    };
    respond.send_response(
        Response::builder()
            .status(code)
            .body(Body::from(body))
            .expect("a response"),
    );
}
