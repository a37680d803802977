//! `GET /openapi.json`: the API of `docs/server-api.md` as an OpenAPI 3.1 document. Every
//! operation documents every status it may answer: `400` (a query or a path it cannot take) and
//! `401` (no or a wrong token) on each but `/healthz`, which needs no token and takes nothing.
//!
//! The paths are written here; every schema of a body is generated ([`Schemas`]) from the types
//! the server sends and the CLI's client decodes ([`trainctl_server_api`]).

mod dashboard;
mod parts;

use k8s_openapi::api::core::v1::ResourceQuota;
use serde_json::{Map, Value, json};
use trainctl_api::manifest::MAX_MANIFEST_BYTES;
use trainctl_server_api::{Deleted, Items, JobView, Submitted};

use self::parts::{Schemas, error, json_body, namespace, operation, string, text, with};

/// The document.
pub fn document() -> Value {
    let mut schemas = Schemas::new();
    let job_path = [
        namespace("path", "The job's namespace"),
        json!({ "name": "plural", "in": "path", "required": true,
            "description": "The lowercase plural of the job's kind", "example": "tfjobs",
            "schema": { "type": "string", "enum": ["tfjobs", "pytorchjobs", "xgboostjobs", "paddlejobs", "jaxjobs", "mpijobs"] } }),
        json!({ "name": "name", "in": "path", "required": true, "description": "The job's name",
            "example": "mnist", "schema": { "type": "string" } }),
    ];
    let view = schemas.of::<JobView>();
    let submitted = json_body(
        "Recorded and queued: the claims bound first, then the manifest's ResourceQuotas applied, then its ConfigMaps and Secrets, then its jobs",
        schemas.of::<Submitted>(),
    );
    let listed = json_body("The jobs", schemas.of::<Items<JobView>>());
    let deleted = json_body("The job as it was", schemas.of::<Deleted<JobView>>());
    let mut document = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "trainctl server",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The local control plane of trainctl: submit kubeflow.org/v1 training jobs, follow them, suspend, resume and delete them. Every path but /healthz needs `Authorization: Bearer <token>` (the scheme's name in any case), the token being the state directory's server.token. Every error is the JSON body `{\"error\": \"...\", \"details\": [...]}`."
        },
        "security": [{ "token": [] }],
        "paths": {
            "/healthz": { "get": { "summary": "Liveness", "security": [],
                "responses": { "200": text("ok", "text/plain") } } },
            "/metrics": { "get": operation("Prometheus metrics", json!({
                "200": text("The metrics in the OpenMetrics text format", "application/openmetrics-text") })) },
            "/openapi.json": { "get": operation("This document", json!({
                "200": json_body("OpenAPI 3.1", json!({ "type": "object" })) })) },
            "/api/v1/jobs": {
                "post": with(operation("Submit a manifest: its ResourceQuotas, ConfigMaps and Secrets are applied, its jobs recorded and queued", json!({
                        "201": submitted,
                        "400": error("The manifest is invalid (one detail per problem), the namespace is not a DNS-1123 label, or a volume is not [NAMESPACE/]CLAIM=PATH with PATH an existing directory (or gives a claim two directories)"),
                        "408": error("The body stalled"),
                        "409": error("A job of the same namespace, kind and name exists and has not finished, or a volume would change the directory of a claim that such a job mounts"),
                        "413": error(&format!("The manifest is larger than {MAX_MANIFEST_BYTES} bytes")) })),
                    json!({
                        "parameters": [namespace("query", "Namespace for every job in it"), string("source", "query", "The file name, for error messages"),
                            { "name": "volume", "in": "query", "required": false, "explode": true,
                              "description": "Bind a claim to an existing directory of this machine before the jobs are recorded: [NAMESPACE/]CLAIM=PATH, repeatable; without NAMESPACE, in `namespace` when given, else in each job's",
                              "example": ["training-data-pvc=/srv/datasets/mnist"],
                              "schema": { "type": "array", "items": { "type": "string" } } }],
                        "requestBody": { "required": true, "content": {
                            "text/yaml": { "schema": { "type": "string", "maxLength": MAX_MANIFEST_BYTES } },
                            "application/json": { "schema": {} } } } })),
                "get": with(operation("List jobs, oldest first", json!({ "200": listed,
                        "400": error("The namespace is not a DNS-1123 label, or the kind is no kind") })),
                    json!({ "parameters": [namespace("query", "Only this namespace"), { "name": "kind", "in": "query", "required": false,
                        "description": "Only this kind: its name or its plural, in any case (kubectl's spellings)",
                        "schema": { "type": "string", "enum": ["TFJob", "PyTorchJob", "XGBoostJob", "PaddleJob", "JAXJob", "MPIJob", "MXJob",
                            "tfjobs", "pytorchjobs", "xgboostjobs", "paddlejobs", "jaxjobs", "mpijobs", "mxjobs"] } }] }))
            },
            "/api/v1/namespaces/{namespace}/{plural}/{name}": {
                "parameters": job_path,
                "get": operation("One job with its replicas and events", json!({
                    "200": json_body("The job", view.clone()), "404": error("No such job") })),
                "delete": operation("Stop the job's replicas, then remove it, its records and logs", json!({
                    "200": deleted, "404": error("No such job") }))
            },
            "/api/v1/namespaces/{namespace}/{plural}/{name}/suspend": {
                "parameters": job_path,
                "post": operation("runPolicy.suspend = true: stop the replicas, give back the resources", json!({
                    "200": json_body("The job", view.clone()), "404": error("No such job"), "409": error("The job has finished") }))
            },
            "/api/v1/namespaces/{namespace}/{plural}/{name}/resume": {
                "parameters": job_path,
                "post": operation("runPolicy.suspend = false: queue the job again", json!({
                    "200": json_body("The job", view), "404": error("No such job") }))
            },
            "/api/v1/namespaces/{namespace}/{plural}/{name}/logs": {
                "parameters": job_path,
                "get": with(operation("The job's logs, streamed, with a separator line where a replica restarted", json!({
                        "200": text("The logs", "text/plain"),
                        "400": error("sinceSeconds is not more than 0; or previous, and the replica asked for (or every replica) has not restarted"),
                        "404": error("No such job, or no such replica of it") })),
                    json!({ "parameters": [
                        string("replica", "query", "One replica, e.g. worker-0; all, prefixed, when omitted"),
                        { "name": "follow", "in": "query", "required": false, "description": "true: stream until the job has finished (not with previous)",
                          "schema": { "type": "boolean" } },
                        { "name": "tailLines", "in": "query", "required": false, "description": "Only the last lines of each replica's log (then, followed, what follows); negative: all",
                          "schema": { "type": "integer" } },
                        { "name": "sinceSeconds", "in": "query", "required": false, "description": "Only the lines written within this many seconds (lines of unknown time are left out)",
                          "schema": { "type": "integer", "minimum": 1 } },
                        { "name": "timestamps", "in": "query", "required": false, "description": "true: each line after its time, RFC 3339 with nanoseconds (none for a line whose time is not known)",
                          "schema": { "type": "boolean" } },
                        { "name": "previous", "in": "query", "required": false, "description": "true: each replica's run before its last restart",
                          "schema": { "type": "boolean" } }] }))
            }
        }
    });
    let mut more = quota_paths(&mut schemas);
    more.extend(dashboard::paths(&job_path, &mut schemas));
    if let Some(paths) = document["paths"].as_object_mut() {
        paths.extend(more);
    }
    document["components"] = schemas.components();
    document
}

/// The `ResourceQuota` paths.
fn quota_paths(schemas: &mut Schemas) -> Map<String, Value> {
    let quota = schemas.of::<ResourceQuota>();
    let listed = schemas.of::<Items<ResourceQuota>>();
    let deleted = schemas.of::<Deleted<ResourceQuota>>();
    let quota_path = [
        namespace("path", "The quota's namespace"),
        json!({ "name": "name", "in": "path", "required": true, "description": "The quota's name",
            "example": "team-a", "schema": { "type": "string" } }),
    ];
    let paths = json!({
            "/api/v1/resourcequotas": {
                "get": with(operation("List ResourceQuotas, with what their namespaces use (status.used)", json!({
                        "200": json_body("The quotas", listed),
                        "400": error("The namespace is not a DNS-1123 label") })),
                    json!({ "parameters": [namespace("query", "Only this namespace")] }))
            },
            "/api/v1/namespaces/{namespace}/resourcequotas/{name}": {
                "parameters": quota_path,
                "get": operation("One ResourceQuota, with what its namespace uses", json!({
                    "200": json_body("The quota", quota), "404": error("No such quota") })),
                "delete": operation("Remove the quota: its namespace's jobs are held by it no more", json!({
                    "200": json_body("The quota as it was", deleted),
                    "404": error("No such quota") }))
            }
    });
    match paths {
        Value::Object(paths) => paths,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::document;

    #[test]
    fn every_operation_documents_400_and_401_but_healthz() {
        let document = document();
        let paths = document["paths"].as_object().expect("paths");
        let mut operations = 0;
        for (path, item) in paths {
            for (method, operation) in item.as_object().expect("a path item") {
                if method == "parameters" {
                    continue;
                }
                operations += 1;
                let responses = operation["responses"].as_object().expect("responses");
                let expected = path != "/healthz";
                for status in ["400", "401"] {
                    assert_eq!(
                        responses.contains_key(status),
                        expected,
                        "{method} {path}: {status}"
                    );
                }
                for (status, response) in responses {
                    if status.starts_with('4') {
                        assert_eq!(
                            response["content"]["application/json"]["schema"]["$ref"],
                            "#/components/schemas/Error",
                            "{method} {path}: {status}"
                        );
                    }
                }
            }
        }
        assert_eq!(operations, 23);
    }
}
