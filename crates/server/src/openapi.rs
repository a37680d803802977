//! `GET /openapi.json`: the API of `docs/server-api.md` as an OpenAPI 3.1 document.

use serde_json::{Value, json};

/// The document.
pub fn document() -> Value {
    let job_path = [
        param("namespace", "path", "The job's namespace"),
        param(
            "plural",
            "path",
            "tfjobs, pytorchjobs, xgboostjobs, paddlejobs, jaxjobs or mpijobs",
        ),
        param("name", "path", "The job's name"),
    ];
    let view = json!({ "$ref": "#/components/schemas/JobView" });
    let error = json!({ "description": "An error", "content": { "application/json": {
        "schema": { "$ref": "#/components/schemas/Error" } } } });
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "trainctl server",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The local control plane of trainctl: submit kubeflow.org/v1 training jobs, follow them, suspend, resume and delete them. Every path but /healthz needs `Authorization: Bearer <token>`, the token being the state directory's server.token."
        },
        "components": {
            "securitySchemes": { "token": { "type": "http", "scheme": "bearer" } },
            "schemas": {
                "Error": { "type": "object", "required": ["error", "details"], "properties": {
                    "error": { "type": "string" },
                    "details": { "type": "array", "items": { "type": "string" } } } },
                "JobView": { "type": "object", "required": ["namespace", "name", "kind", "uid", "state", "created", "finished", "job", "replicas", "events"], "properties": {
                    "namespace": { "type": "string" }, "name": { "type": "string" },
                    "kind": { "type": "string", "enum": ["TFJob", "PyTorchJob", "XGBoostJob", "PaddleJob", "JAXJob", "MPIJob"] },
                    "uid": { "type": "string" },
                    "state": { "type": "string", "enum": ["Queued", "Pending", "Created", "Running", "Restarting", "Suspended", "Succeeded", "Failed", "Lost"] },
                    "waiting": { "type": ["string", "null"] },
                    "created": { "type": "string", "format": "date-time" },
                    "finished": { "type": "boolean" },
                    "job": { "type": "object", "description": "The whole kubeflow.org/v1 object, status included" },
                    "replicas": { "type": "array", "items": { "type": "object", "properties": {
                        "name": { "type": "string" }, "type": { "type": "string" }, "index": { "type": "integer" },
                        "state": { "type": "string", "enum": ["Pending", "Running", "Succeeded", "Failed", "Stopped"] },
                        "pid": { "type": ["integer", "null"] }, "port": { "type": ["integer", "null"] },
                        "gpus": { "type": "array", "items": { "type": "integer" } },
                        "restarts": { "type": "integer" }, "exitCode": { "type": ["integer", "null"] },
                        "started": { "type": ["string", "null"], "format": "date-time" },
                        "finished": { "type": ["string", "null"], "format": "date-time" } } } },
                    "events": { "type": "array", "items": { "type": "object", "properties": {
                        "time": { "type": "string", "format": "date-time" }, "type": { "type": "string" },
                        "reason": { "type": "string" }, "message": { "type": "string" } } } } } }
            }
        },
        "security": [{ "token": [] }],
        "paths": {
            "/healthz": { "get": { "summary": "Liveness", "security": [],
                "responses": { "200": { "description": "ok" } } } },
            "/metrics": { "get": { "summary": "Prometheus metrics",
                "responses": { "200": { "description": "The metrics in the text format" } } } },
            "/openapi.json": { "get": { "summary": "This document",
                "responses": { "200": { "description": "OpenAPI 3.1" } } } },
            "/api/v1/jobs": {
                "post": {
                    "summary": "Submit a manifest: its jobs are recorded and queued",
                    "parameters": [param("namespace", "query", "Namespace for every job in it"), param("source", "query", "The file name, for error messages")],
                    "requestBody": { "required": true, "content": { "text/yaml": { "schema": { "type": "string" } } } },
                    "responses": {
                        "201": { "description": "Recorded", "content": { "application/json": { "schema": { "type": "object", "properties": { "jobs": { "type": "array", "items": view } } } } } },
                        "400": error, "409": error } },
                "get": {
                    "summary": "List jobs, oldest first",
                    "parameters": [param("namespace", "query", "Only this namespace"), param("kind", "query", "Only this kind")],
                    "responses": { "200": { "description": "The jobs", "content": { "application/json": { "schema": { "type": "object", "properties": { "items": { "type": "array", "items": view } } } } } } } }
            },
            "/api/v1/namespaces/{namespace}/{plural}/{name}": {
                "parameters": job_path,
                "get": { "summary": "One job with its replicas and events",
                    "responses": { "200": { "description": "The job", "content": { "application/json": { "schema": view } } }, "404": error } },
                "delete": { "summary": "Stop the job's replicas, then remove it, its records and logs",
                    "responses": { "200": { "description": "The job as it was", "content": { "application/json": { "schema": { "type": "object", "properties": { "deleted": view } } } } }, "404": error } }
            },
            "/api/v1/namespaces/{namespace}/{plural}/{name}/suspend": {
                "parameters": job_path,
                "post": { "summary": "runPolicy.suspend = true: stop the replicas, give back the resources",
                    "responses": { "200": { "description": "The job", "content": { "application/json": { "schema": view } } }, "404": error, "409": error } }
            },
            "/api/v1/namespaces/{namespace}/{plural}/{name}/resume": {
                "parameters": job_path,
                "post": { "summary": "runPolicy.suspend = false: queue the job again",
                    "responses": { "200": { "description": "The job", "content": { "application/json": { "schema": view } } }, "404": error } }
            },
            "/api/v1/namespaces/{namespace}/{plural}/{name}/logs": {
                "parameters": job_path,
                "get": { "summary": "The job's logs, streamed",
                    "parameters": [param("replica", "query", "One replica, e.g. worker-0; all, prefixed, when omitted"), param("follow", "query", "true: stream until the job has finished")],
                    "responses": { "200": { "description": "The logs", "content": { "text/plain": { "schema": { "type": "string" } } } }, "404": error } }
            }
        }
    })
}

fn param(name: &str, place: &str, description: &str) -> Value {
    json!({ "name": name, "in": place, "required": place == "path", "description": description,
            "schema": { "type": if name == "follow" { "boolean" } else { "string" } } })
}
