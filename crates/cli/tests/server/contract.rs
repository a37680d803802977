//! The server's API contract (docs/server-api.md, `/openapi.json`): every error is the JSON
//! envelope `{"error": "...", "details": [...]}`, the HTTP layer's own included (an unknown
//! path, a method a path does not take, a query that cannot be read, a body too large or not
//! UTF-8); the `Bearer` scheme is accepted in any case (RFC 7235); the logs of a replica the job
//! does not have are a 404.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};
use trainctl_api::manifest::MAX_MANIFEST_BYTES;
use trainctl_cli_harness::server::Server;

/// An agent that reads error answers as answers.
fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

fn token(server: &Server) -> String {
    std::fs::read_to_string(server.state_dir().join("server.token")).expect("server.token")
}

/// The status, the content type and the JSON body of an answer.
fn read(response: ureq::http::Response<ureq::Body>) -> (u16, String, Value) {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let text = response.into_body().read_to_string().expect("a body");
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, content_type, body)
}

fn envelope(error: &str, details: &[&str]) -> Value {
    json!({ "error": error, "details": details })
}

/// Sends `head` (a request's head, without its blank line) as is; the whole answer as text.
fn raw(server: &Server, head: &str) -> String {
    let address = server.url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    write!(stream, "{head}\r\n\r\n").expect("send");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn the_http_layers_errors_are_the_json_envelope() {
    let server = Server::start(&[]);
    let url = &server.url;
    let bearer = format!("Bearer {}", token(&server));
    let json = "application/json";
    assert_eq!(
        read(
            agent()
                .get(&format!("{url}/no/such/path"))
                .call()
                .expect("answer")
        ),
        (
            404,
            json.to_owned(),
            envelope(
                "no such path: GET /no/such/path; the API's paths are in /openapi.json",
                &[]
            )
        )
    );
    let response = agent()
        .put(&format!("{url}/api/v1/jobs"))
        .header("Authorization", &bearer)
        .send_empty()
        .expect("answer");
    assert_eq!(
        response
            .headers()
            .get("allow")
            .map(ureq::http::HeaderValue::as_bytes),
        Some(&b"POST,GET,HEAD"[..])
    );
    assert_eq!(
        read(response),
        (
            405,
            json.to_owned(),
            envelope(
                "PUT is not allowed on /api/v1/jobs; the API's methods are in /openapi.json",
                &[]
            )
        )
    );
    assert_eq!(
        read(
            agent()
                .get(&format!(
                    "{url}/api/v1/namespaces/default/tfjobs/x/logs?follow=maybe"
                ))
                .header("Authorization", &bearer)
                .call()
                .expect("answer")
        ),
        (
            400,
            json.to_owned(),
            envelope(
                "Failed to deserialize query string: follow: provided string was not `true` or \
                 `false`",
                &[]
            )
        )
    );
}

#[test]
fn refused_bodies_and_tokens_are_the_json_envelope() {
    let server = Server::start(&[]);
    let url = &server.url;
    let bearer = format!("Bearer {}", token(&server));
    let json = "application/json";
    assert_eq!(
        read(
            agent()
                .post(&format!("{url}/api/v1/jobs?source=a.yaml"))
                .header("Authorization", &bearer)
                .send(&b"kind: TFJob\n\xff\xfe"[..])
                .expect("answer")
        ),
        (
            400,
            json.to_owned(),
            envelope(
                "the manifest is invalid",
                &[
                    "a.yaml:2:1: the file is not UTF-8 text (invalid byte at offset 12); a \
                   manifest is YAML or JSON"
                ]
            )
        )
    );
    assert_eq!(
        read(
            agent()
                .get(&format!("{url}/api/v1/jobs"))
                .call()
                .expect("answer")
        ),
        (
            401,
            json.to_owned(),
            envelope(
                "missing or wrong bearer token (the CLI reads it from server.token in the state \
                 directory)",
                &[]
            )
        )
    );
    // Too large: refused from its length, before a byte of it is read.
    let answer = raw(
        &server,
        &format!(
            "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: {bearer}\r\nContent-Length: {}",
            MAX_MANIFEST_BYTES + 1
        ),
    );
    let body = envelope(
        &format!(
            "the manifest is {} bytes; manifests are limited to 16 MiB ({MAX_MANIFEST_BYTES} \
             bytes)",
            MAX_MANIFEST_BYTES + 1
        ),
        &[],
    );
    assert!(
        answer.starts_with("HTTP/1.1 413 Payload Too Large\r\n")
            && answer.contains("\r\ncontent-type: application/json\r\n")
            && answer.ends_with(&format!("\r\n\r\n{body}")),
        "{answer}"
    );
}

#[test]
fn the_bearer_scheme_is_case_insensitive_and_the_token_exact() {
    let server = Server::start(&[]);
    let token = token(&server);
    let list = |authorization: &str| {
        agent()
            .get(&format!("{}/api/v1/jobs", server.url))
            .header("Authorization", authorization)
            .call()
            .expect("answer")
            .status()
            .as_u16()
    };
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        assert_eq!(list(&format!("{scheme} {token}")), 200, "{scheme}");
    }
    for wrong in [
        format!("Basic {token}"),
        format!("Bearer{token}"),
        format!("Bearer {token}x"),
        format!("Bearer {}", &token[1..]),
        "Bearer".to_owned(),
    ] {
        assert_eq!(list(&wrong), 401, "{wrong}");
    }
}

#[test]
fn the_logs_of_a_replica_the_job_does_not_have_are_not_found() {
    let server = Server::start(&[]);
    let job = "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: quiet
spec:
  runPolicy: {suspend: true}
  tfReplicaSpecs:
    Chief:
      template:
        spec:
          containers: [{name: tensorflow, image: busybox, command: ['true']}]
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: tensorflow, image: busybox, command: ['true']}]
";
    assert_eq!(server.request("POST", "/api/v1/jobs", Some(job)).0, 201);
    let logs = "/api/v1/namespaces/default/tfjobs/quiet/logs";
    // A replica the job has, not started yet: no logs yet.
    assert_eq!(
        server.request("GET", &format!("{logs}?replica=worker-1"), None),
        (200, Value::String(String::new()))
    );
    for unknown in ["worker-2", "launcher", "chief"] {
        assert_eq!(
            server.request("GET", &format!("{logs}?replica={unknown}"), None),
            (
                404,
                envelope(
                    &format!(
                        "TFJob default/quiet has no replica `{unknown}`; its replicas: chief-0, \
                         worker-0, worker-1"
                    ),
                    &[]
                )
            )
        );
    }
    assert_eq!(
        server.request(
            "GET",
            "/api/v1/namespaces/default/tfjobs/gone/logs?replica=worker-0",
            None
        ),
        (404, envelope("TFJob default/gone not found", &[]))
    );
}
