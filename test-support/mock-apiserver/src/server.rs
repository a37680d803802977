//! The HTTP server: the Kubernetes paths, the `/mock/` control paths, and [`MockApiServer`],
//! the handle tests hold.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::calls::{Calls, InFlight, Verb};
use crate::error::ApiError;
use crate::faults::{Fault, Faults};
use crate::render::{List, Rendered};
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::{Store, WatchFrom};
use crate::target::Target;
use crate::watch::WatchRequest;

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How long every Kubernetes call waits before it is served (a watch: before its response
    /// begins). The `/mock/` paths do not wait.
    pub latency: Duration,
    /// How many changes are remembered for watches to resume from; a watch resuming from an
    /// older version gets `410 Gone`.
    pub history_limit: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            latency: Duration::ZERO,
            history_limit: 200_000,
        }
    }
}

/// What the handlers share.
struct Shared {
    store: Mutex<Store>,
    faults: Faults,
    calls: Calls,
    in_flight: InFlight,
    latency: Duration,
    /// Bumped to end every open watch.
    drops: watch::Sender<u64>,
    open_watches: Arc<AtomicUsize>,
    /// Bumped after every call and when a watch ends, for [`MockApiServer::wait_until`].
    activity: watch::Sender<u64>,
}

impl Shared {
    fn store(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn touch(&self) {
        self.activity.send_modify(|count| *count += 1);
    }
}

/// A running mock API server; dropping it stops the server and ends its watches.
pub struct MockApiServer {
    url: String,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl MockApiServer {
    /// Serves on a free port of the loopback interface.
    pub async fn start(settings: Settings) -> io::Result<MockApiServer> {
        MockApiServer::bind(SocketAddr::from(([127, 0, 0, 1], 0)), settings).await
    }

    /// Serves on `address`.
    pub async fn bind(address: SocketAddr, settings: Settings) -> io::Result<MockApiServer> {
        let listener = tokio::net::TcpListener::bind(address).await?;
        let url = format!("http://{}", listener.local_addr()?);
        let shared = Arc::new(Shared {
            store: Mutex::new(Store::new(settings.history_limit)),
            faults: Faults::default(),
            calls: Calls::default(),
            in_flight: InFlight::default(),
            latency: settings.latency,
            drops: watch::channel(0).0,
            open_watches: Arc::new(AtomicUsize::new(0)),
            activity: watch::channel(0).0,
        });
        let app = router(Arc::clone(&shared));
        let task = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                eprintln!("mock-apiserver: the server failed: {error}");
            }
        });
        Ok(MockApiServer { url, shared, task })
    }

    /// `http://127.0.0.1:<port>`: the URL for `kube::Config::new`.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }

    /// How many calls of `verb` reached `path` (without the query).
    #[must_use]
    pub fn calls(&self, verb: Verb, path: &str) -> u64 {
        self.shared.calls.of(verb, path)
    }

    /// How many calls of `verb` reached any path.
    #[must_use]
    pub fn total_calls(&self, verb: Verb) -> u64 {
        self.shared.calls.total(verb)
    }

    /// Makes the next `times` calls of `method` to `path` meet `fault`.
    pub fn inject(&self, method: Method, path: &str, times: usize, fault: Fault) {
        self.shared.faults.add(method, path, times, fault);
    }

    /// Ends every open watch stream, as a restarting API server or a dropped connection would.
    pub fn drop_watches(&self) {
        self.shared.drops.send_modify(|generation| *generation += 1);
    }

    /// How many watch streams are open.
    #[must_use]
    pub fn open_watches(&self) -> usize {
        self.shared.open_watches.load(Ordering::SeqCst)
    }

    /// Forgets the change history: watches resuming from before now get `410 Gone`.
    pub fn forget_history(&self) {
        self.shared.store().forget_history();
    }

    /// Forgets the change history of the resource of `collection` (`/api/v1/namespaces/ml/pods`):
    /// watches of it resuming from before now get `410 Gone`, as when its watch cache starts
    /// afresh; `false` if the path names no resource served.
    #[must_use]
    pub fn forget_history_of(&self, collection: &str) -> bool {
        let Ok(target) = Target::parse(collection) else {
            return false;
        };
        self.shared.store().forget_history_of(target.resource);
        true
    }

    /// The object at `path` (`/api/v1/namespaces/ml/pods/mnist-worker-0`), if it exists.
    #[must_use]
    pub fn get(&self, path: &str) -> Option<Value> {
        let target = Target::parse(path).ok()?;
        let object = self.shared.store().get(&target).ok()?;
        Some(object.as_ref().clone())
    }

    /// The objects of the collection at `path` (`/api/v1/namespaces/ml/pods`).
    #[must_use]
    pub fn list(&self, path: &str) -> Vec<Value> {
        let Ok(target) = Target::parse(path) else {
            return Vec::new();
        };
        let everything = (LabelSelector::default(), FieldSelector::default());
        self.shared
            .store()
            .list(&target, &everything.0, &everything.1, None, None)
            .map(|page| {
                page.items
                    .iter()
                    .map(|item| item.as_ref().clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Waits until `check` finds what it looks for, re-checking after every call the server
    /// serves and every watch that ends; `None` if `timeout` passes first.
    pub async fn wait_until<T>(
        &self,
        timeout: Duration,
        mut check: impl FnMut(&MockApiServer) -> Option<T>,
    ) -> Option<T> {
        let deadline = Instant::now() + timeout;
        let mut activity = self.shared.activity.subscribe();
        loop {
            activity.mark_unchanged();
            if let Some(found) = check(self) {
                return Some(found);
            }
            match tokio::time::timeout_at(deadline, activity.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return check(self),
            }
        }
    }

    /// The most calls that were being served at once, watches excepted.
    #[must_use]
    pub fn peak_in_flight(&self) -> usize {
        self.shared.in_flight.peak()
    }

    /// Statistics: the objects per resource, the calls, the open watches, the most calls in
    /// flight at once (what `GET /mock/stats` answers).
    #[must_use]
    pub fn statistics(&self) -> Value {
        statistics(&self.shared)
    }
}

impl Drop for MockApiServer {
    fn drop(&mut self) {
        self.drop_watches();
        self.task.abort();
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/mock/stats", get(stats))
        .route("/mock/faults", post(add_fault))
        .route("/mock/drop-watches", post(drop_watches))
        .route("/mock/forget-history", post(forget_history))
        .fallback(kubernetes)
        .with_state(shared)
}

fn statistics(shared: &Shared) -> Value {
    let mut statistics = shared.store().statistics();
    statistics["openWatches"] = json!(shared.open_watches.load(Ordering::SeqCst));
    statistics["calls"] = shared.calls.to_json();
    statistics["peakInFlight"] = json!(shared.in_flight.peak());
    statistics
}

async fn stats(State(shared): State<Arc<Shared>>) -> Json<Value> {
    Json(statistics(&shared))
}

/// `POST /mock/faults`: `{"method", "path", "times", "status"}` or `{..., "holdMs"}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FaultRequest {
    method: String,
    path: String,
    times: usize,
    status: Option<u16>,
    hold_ms: Option<u64>,
}

async fn add_fault(
    State(shared): State<Arc<Shared>>,
    Json(request): Json<FaultRequest>,
) -> Response {
    let fault = match (request.status, request.hold_ms) {
        (Some(code), None) => match StatusCode::from_u16(code) {
            Ok(code) => Fault::Fail(code),
            Err(_) => {
                return (
                    StatusCode::BAD_REQUEST,
                    format!("{code} is no HTTP status\n"),
                )
                    .into_response();
            }
        },
        (None, Some(millis)) => Fault::Hold(Duration::from_millis(millis)),
        _ => {
            return (StatusCode::BAD_REQUEST, "give one of status and holdMs\n").into_response();
        }
    };
    let Ok(method) = Method::from_bytes(request.method.as_bytes()) else {
        return (StatusCode::BAD_REQUEST, "method: not an HTTP method\n").into_response();
    };
    shared
        .faults
        .add(method, &request.path, request.times, fault);
    StatusCode::NO_CONTENT.into_response()
}

async fn drop_watches(State(shared): State<Arc<Shared>>) -> StatusCode {
    shared.drops.send_modify(|generation| *generation += 1);
    StatusCode::NO_CONTENT
}

async fn forget_history(State(shared): State<Arc<Shared>>) -> StatusCode {
    shared.store().forget_history();
    StatusCode::NO_CONTENT
}

/// Every Kubernetes path.
async fn kubernetes(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let response = serve(&shared, &method, &uri, &headers, &body)
        .await
        .unwrap_or_else(|error| failure(&error));
    shared.touch();
    response
}

async fn serve(
    shared: &Arc<Shared>,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let path = uri.path();
    let target = Target::parse(path)?;
    let Query(query) = Query::<HashMap<String, String>>::try_from_uri(uri)
        .map_err(|error| ApiError::BadRequest(error.body_text()))?;
    let watching = query
        .get("watch")
        .is_some_and(|watch| watch == "true" || watch == "1");
    let verb = Verb::of(method, &target, watching).ok_or(ApiError::MethodNotAllowed)?;
    // A create is counted, and meets its faults, at the path of the object it creates (as audit
    // logs name it): `.../pods/mnist-worker-0`, not the collection.
    let created_path = (verb == Verb::Create)
        .then(|| serde_json::from_slice::<serde_json::Value>(body).ok())
        .flatten()
        .and_then(|object| {
            let name = object["metadata"]["name"].as_str()?.to_owned();
            Some(format!("{path}/{name}"))
        });
    let path = created_path.as_deref().unwrap_or(path);
    shared.calls.count(verb, path);
    let _in_flight = (verb != Verb::Watch).then(|| shared.in_flight.begin());
    if !shared.latency.is_zero() {
        tokio::time::sleep(shared.latency).await;
    }
    match shared.faults.take(method, path) {
        Some(Fault::Fail(code)) => return Err(ApiError::Injected(code)),
        Some(Fault::Hold(duration)) => tokio::time::sleep(duration).await,
        None => {}
    }
    let metadata_only = headers
        .get(header::ACCEPT)
        .and_then(|accept| accept.to_str().ok())
        .is_some_and(|accept| accept.contains("as=PartialObjectMetadata"));
    let param = |name: &str| query.get(name).map(String::as_str).unwrap_or_default();
    let labels = LabelSelector::parse(param("labelSelector"))?;
    let fields = FieldSelector::parse(param("fieldSelector"))?;
    match verb {
        Verb::Get => {
            let object = shared.store().get(&target)?;
            Ok(json(StatusCode::OK, &Rendered::new(&object, metadata_only)))
        }
        Verb::List => {
            let limit = match param("limit") {
                "" | "0" => None,
                limit => Some(limit.parse().map_err(|_| {
                    ApiError::BadRequest(format!("limit: {limit:?} is not a number"))
                })?),
            };
            let continue_token = query.get("continue").map(String::as_str);
            let page = shared
                .store()
                .list(&target, &labels, &fields, limit, continue_token)?;
            let list = List::new(
                target.resource,
                &page.items,
                page.resource_version,
                page.continue_token,
                metadata_only,
            );
            Ok(json(StatusCode::OK, &list))
        }
        Verb::Watch => watch(shared, target, labels, fields, &query, metadata_only),
        Verb::Create => {
            let object = shared.store().create(&target, parse(body)?)?;
            Ok(json(StatusCode::CREATED, object.as_ref()))
        }
        Verb::Update => {
            let object = shared.store().replace(&target, &parse(body)?)?;
            Ok(json(StatusCode::OK, object.as_ref()))
        }
        Verb::Patch => patch(shared, &target, headers, &query, body),
        Verb::Delete => {
            let object = shared.store().delete(&target)?;
            Ok(json(StatusCode::OK, object.as_ref()))
        }
    }
}

fn patch(
    shared: &Shared,
    target: &Target,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    match content_type {
        "application/apply-patch+yaml" => {
            if query.get("fieldManager").is_none_or(String::is_empty) {
                return Err(ApiError::BadRequest(
                    "PATCH, application/apply-patch+yaml: fieldManager is required for apply requests"
                        .to_owned(),
                ));
            }
            let (object, created) = shared.store().apply(target, &parse(body)?)?;
            let code = if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            Ok(json(code, object.as_ref()))
        }
        "application/merge-patch+json" => {
            let object = shared.store().merge(target, &parse(body)?)?;
            Ok(json(StatusCode::OK, object.as_ref()))
        }
        other => Err(ApiError::UnsupportedMediaType(other.to_owned())),
    }
}

fn watch(
    shared: &Arc<Shared>,
    target: Target,
    labels: LabelSelector,
    fields: FieldSelector,
    query: &HashMap<String, String>,
    metadata_only: bool,
) -> Result<Response, ApiError> {
    let number = |name: &str| -> Result<Option<u64>, ApiError> {
        match query.get(name).map(String::as_str) {
            None | Some("") => Ok(None),
            Some(value) => value
                .parse()
                .map(Some)
                .map_err(|_| ApiError::BadRequest(format!("{name}: {value:?} is not a number"))),
        }
    };
    let timeout = Duration::from_secs(number("timeoutSeconds")?.unwrap_or(1800));
    let send_initial_events = query
        .get("sendInitialEvents")
        .is_some_and(|send| send == "true");
    let from = match number("resourceVersion")? {
        _ if send_initial_events => WatchFrom::Now,
        None | Some(0) => WatchFrom::Now,
        Some(version) => WatchFrom::Version(version),
    };
    let store = shared.store();
    let started = match store.watch(&target, from) {
        Ok(started) => started,
        Err(error @ ApiError::Expired { .. }) => {
            return Ok(stream_response(crate::watch::refusal(&error.status())));
        }
        Err(error) => return Err(error),
    };
    let request = WatchRequest {
        target,
        labels,
        fields,
        metadata_only,
        deadline: Instant::now() + timeout,
        initial_events_end: send_initial_events.then(|| store.resource_version()),
    };
    drop(store);
    let open = OpenWatch::new(shared);
    let events = crate::watch::events(
        request,
        &started.first,
        started.changes,
        shared.drops.subscribe(),
        Box::new(open),
    );
    Ok(stream_response(events))
}

/// An open watch, counted while its stream lives; waiters hear when it ends, as they hear
/// about every call.
struct OpenWatch(Arc<Shared>);

impl OpenWatch {
    fn new(shared: &Arc<Shared>) -> OpenWatch {
        shared.open_watches.fetch_add(1, Ordering::SeqCst);
        OpenWatch(Arc::clone(shared))
    }
}

impl Drop for OpenWatch {
    fn drop(&mut self) {
        self.0.open_watches.fetch_sub(1, Ordering::SeqCst);
        self.0.touch();
    }
}

fn stream_response(
    events: impl futures_util::Stream<Item = Result<Bytes, std::convert::Infallible>> + Send + 'static,
) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(events))
        .unwrap_or_else(|error| failure(&ApiError::BadRequest(error.to_string())))
}

fn parse(body: &Bytes) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|error| ApiError::BadRequest(format!("the body is not JSON: {error}")))
}

fn json(code: StatusCode, value: &impl Serialize) -> Response {
    match serde_json::to_vec(value) {
        Ok(bytes) => (code, [(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
    }
}

fn failure(error: &ApiError) -> Response {
    json(error.code(), &error.status())
}
