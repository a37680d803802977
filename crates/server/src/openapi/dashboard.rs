//! The dashboard's paths of the OpenAPI document: what it may do, every job in one line, the
//! machine, a job's curves, and the event streams of each (`/api/v1/watch/...`,
//! `text/event-stream`: one event at once, then one per change).

use serde_json::{Map, Value, json};
use trainctl_server_api::{
    DEFAULT_POINTS, DashboardInfo, Items, JobSummary, LoginCode, LoginRequest, LoginToken,
    MAX_POINTS, MachineView, ScalarsView,
};

use super::parts::{Schemas, error, json_body, operation, with};

/// The paths; `job_path` are the parameters of a job's path.
pub(super) fn paths(job_path: &[Value], schemas: &mut Schemas) -> Map<String, Value> {
    let info = schemas.of::<DashboardInfo>();
    let code = schemas.of::<LoginCode>();
    let token = schemas.of::<LoginToken>();
    let login = schemas.of::<LoginRequest>();
    let summaries = schemas.of::<Items<JobSummary>>();
    let machine = schemas.of::<MachineView>();
    let scalars = schemas.of::<ScalarsView>();
    let points = json!({ "parameters": [{ "name": "points", "in": "query", "required": false,
        "description": format!("The most points of each series, downsampled on the server (largest-triangle-three-buckets); {DEFAULT_POINTS} when omitted, at least 10, at most {MAX_POINTS}"),
        "schema": { "type": "integer" } }] });
    let not_found = error("No such job");
    let paths = json!({
        "/api/v1/dashboard": { "get": operation("What the dashboard shows and may do here", json!({
            "200": json_body("Where the data comes from (`local`), whether curves and actions are offered", info) })) },
        "/api/v1/dashboard/codes": { "post": operation("A one-time login code for the dashboard's address (/#code=...), usable once within 5 minutes", json!({
            "201": json_body("The code", code) })) },
        "/api/v1/dashboard/login": { "post": with(json!({
            "summary": "The token, for a login code (no token needed): each code works once, before it expires",
            "security": [],
            "responses": {
                "200": json_body("The token", token),
                "400": error("The body is not {\"code\": \"...\"}"),
                "401": error("The code is unknown, used or expired") } }),
            json!({ "requestBody": { "required": true, "content": { "application/json": { "schema": login } } } })) },
        "/api/v1/job-summaries": { "get": operation("Every job in one line, oldest first", json!({
            "200": json_body("The jobs", summaries) })) },
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

/// An event stream's answer.
fn stream(description: &str) -> Value {
    json!({ "description": format!("{description}; a comment line `: keep-alive` every 15 s"),
        "content": { "text/event-stream": { "schema": { "type": "string" } } } })
}
