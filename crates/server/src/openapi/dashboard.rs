//! The dashboard's paths of the OpenAPI document: what it may do, every job in one line, the
//! machine, a job's curves, and the event streams of each (`/api/v1/watch/...`,
//! `text/event-stream`: one event at once, then one per change).

use serde_json::{Map, Value, json};

use super::{error, json_body, operation, with};
use crate::curves::{DEFAULT_POINTS, MAX_POINTS};

/// The paths; `job_path` are the parameters of a job's path.
pub(super) fn paths(job_path: &[Value]) -> Map<String, Value> {
    let summary = summary();
    let machine = machine();
    let scalars = scalars();
    let points = json!({ "parameters": [{ "name": "points", "in": "query", "required": false,
        "description": format!("The most points of each series, downsampled on the server (largest-triangle-three-buckets); {DEFAULT_POINTS} when omitted, at least 10, at most {MAX_POINTS}"),
        "schema": { "type": "integer" } }] });
    let not_found = error("No such job");
    let paths = json!({
        "/api/v1/dashboard": { "get": operation("What the dashboard shows and may do here", json!({
            "200": json_body("Where the data comes from (`local`), whether curves and actions are offered", json!({
                "type": "object", "required": ["source", "curves", "actions"], "properties": {
                    "source": { "type": "string", "enum": ["local", "kube"] }, "curves": { "type": "boolean" },
                    "actions": { "type": "boolean" }, "version": { "type": "string" } } })) })) },
        "/api/v1/dashboard/codes": { "post": operation("A one-time login code for the dashboard's address (/#code=...), usable once within 5 minutes", json!({
            "201": json_body("The code", json!({ "type": "object", "required": ["code", "expiresInSeconds"], "properties": {
                "code": { "type": "string" }, "expiresInSeconds": { "type": "integer" } } })) })) },
        "/api/v1/dashboard/login": { "post": with(json!({
            "summary": "The token, for a login code (no token needed): each code works once, before it expires",
            "security": [],
            "responses": {
                "200": json_body("The token", json!({ "type": "object", "required": ["token"], "properties": { "token": { "type": "string" } } })),
                "400": error("The body is not {\"code\": \"...\"}"),
                "401": error("The code is unknown, used or expired") } }),
            json!({ "requestBody": { "required": true, "content": { "application/json": { "schema": {
                "type": "object", "required": ["code"], "properties": { "code": { "type": "string" } } } } } } })) },
        "/api/v1/job-summaries": { "get": operation("Every job in one line, oldest first", json!({
            "200": json_body("The jobs", items(&summary)) })) },
        "/api/v1/watch/job-summaries": { "get": operation("Every job in one line: an event `jobs` at once and after each change", json!({
            "200": stream("Events `jobs`, each `{\"items\": [JobSummary...]}`") })) },
        "/api/v1/machine": { "get": operation("This machine: capacity, what the admitted jobs hold, each GPU's holder, the queue", json!({
            "200": json_body("The machine", machine) })) },
        "/api/v1/watch/machine": { "get": operation("The machine: an event `machine` at once and after each change", json!({
            "200": stream("Events `machine`, each as GET /api/v1/machine answers") })) },
        "/api/v1/namespaces/{namespace}/{plural}/{name}/scalars": {
            "parameters": job_path,
            "get": with(operation("The job's scalar curves, from its TensorBoard event files", json!({
                "200": json_body("The curves", scalars), "404": not_found.clone() })), points.clone()) },
        "/api/v1/watch/namespaces/{namespace}/{plural}/{name}": {
            "parameters": job_path,
            "get": operation("One job: an event `job` at once and after each change, then `deleted` when it is gone", json!({
                "200": stream("Events `job` (a JobView), then `deleted` (`{}`)"),
                "404": not_found.clone() })) },
        "/api/v1/watch/namespaces/{namespace}/{plural}/{name}/scalars": {
            "parameters": job_path,
            "get": with(operation("The job's curves: an event `scalars` at once and each time its event files grew, then `deleted`", json!({
                "200": stream("Events `scalars`, each as .../scalars answers"), "404": not_found })), points) }
    });
    match paths {
        Value::Object(paths) => paths,
        _ => Map::new(),
    }
}

/// `{"items": [item...]}`.
fn items(item: &Value) -> Value {
    json!({ "type": "object", "required": ["items"], "properties": {
        "items": { "type": "array", "items": item } } })
}

/// An event stream's answer.
fn stream(description: &str) -> Value {
    json!({ "description": format!("{description}; a comment line `: keep-alive` every 15 s"),
        "content": { "text/event-stream": { "schema": { "type": "string" } } } })
}

fn job_ref() -> Map<String, Value> {
    let mut properties = Map::new();
    for field in ["namespace", "name", "kind", "plural"] {
        properties.insert(field.to_owned(), json!({ "type": "string" }));
    }
    properties
}

fn summary() -> Value {
    let mut properties = job_ref();
    properties.extend(
        json!({
            "uid": { "type": "string" },
            "state": { "type": "string" },
            "waiting": { "type": ["string", "null"], "description": "Why a queued job waits" },
            "queuePosition": { "type": ["integer", "null"], "description": "1: the next to be admitted" },
            "replicasReady": { "type": "integer" }, "replicasTotal": { "type": "integer" },
            "restarts": { "type": "integer" },
            "created": { "type": "string", "format": "date-time" },
            "started": { "type": ["string", "null"], "format": "date-time" },
            "finishedAt": { "type": ["string", "null"], "format": "date-time" },
            "gpus": { "type": "integer", "description": "GPUs its running replicas hold" } })
        .as_object()
        .cloned()
        .unwrap_or_default(),
    );
    json!({ "type": "object", "required": ["namespace", "name", "kind", "plural", "uid", "state"], "properties": properties })
}

fn machine() -> Value {
    let amounts = json!({ "type": "object", "properties": {
        "cpuMillis": { "type": "integer" }, "memoryBytes": { "type": "integer" }, "gpus": { "type": "integer" } } });
    let mut holder = job_ref();
    holder.insert("replica".to_owned(), json!({ "type": ["string", "null"] }));
    let mut held = job_ref();
    held.extend(
        json!({ "cpuMillis": { "type": "integer" }, "memoryBytes": { "type": "integer" },
            "gpus": { "type": "array", "items": { "type": "integer" } } })
        .as_object()
        .cloned()
        .unwrap_or_default(),
    );
    let mut queued = job_ref();
    queued.insert("position".to_owned(), json!({ "type": ["integer", "null"], "description": "1: the next to be admitted; null: held by its namespace's quota" }));
    queued.insert("reason".to_owned(), json!({ "type": "string" }));
    json!({ "type": "object", "required": ["capacity", "held", "gpus", "holders", "queue"], "properties": {
        "capacity": amounts, "held": amounts,
        "gpus": { "type": "array", "items": { "type": "object", "properties": {
            "index": { "type": "integer" },
            "holder": { "oneOf": [{ "type": "null" }, { "type": "object", "properties": holder }] } } } },
        "holders": { "type": "array", "items": { "type": "object", "properties": held } },
        "queue": { "type": "array", "items": { "type": "object", "properties": queued } } } })
}

fn scalars() -> Value {
    json!({ "type": "object", "required": ["roots", "series", "problems", "env"], "properties": {
        "roots": { "type": "array", "items": { "type": "string" },
            "description": "Where event files were looked for, in order; the series come from the first that has any" },
        "series": { "type": "array", "items": { "type": "object", "properties": {
            "run": { "type": "string" }, "tag": { "type": "string" },
            "total": { "type": "integer", "description": "Points in the files" },
            "points": { "type": "array", "items": { "type": "array", "items": { "type": ["number", "null"] },
                "minItems": 3, "maxItems": 3, "description": "[step, wall time (s since the epoch), value]" } } } } },
        "problems": { "type": "array", "items": { "type": "string" } },
        "env": { "type": "string", "const": "TRAINCTL_TENSORBOARD_DIR" } } })
}
