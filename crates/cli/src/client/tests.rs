//! The client against a one-request fake server: each scenario asserts the exact request sent
//! and what the client makes of the answer.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::thread::JoinHandle;

use super::*;

const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// The request the fake server received.
#[derive(Debug)]
struct Received {
    /// `POST /api/v1/jobs?source=job.yaml HTTP/1.1`.
    request_line: String,
    /// Header lines, names lowercased.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, value)| value.as_str())
    }
}

/// A state directory whose `server.json` points at a fake server that answers one request
/// with `status` and `body`.
struct Fake {
    dir: tempfile::TempDir,
    server: JoinHandle<Received>,
}

impl Fake {
    fn answering(status: u16, body: &str) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let dir = state_dir_for(&listener);
        let body = body.to_owned();
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().expect("accept");
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut request_line = String::new();
            reader.read_line(&mut request_line).expect("request line");
            let mut headers = Vec::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).expect("header");
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                let (name, value) = line.split_once(':').expect("a header line");
                headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
            }
            let length = headers
                .iter()
                .find(|(name, _)| name == "content-length")
                .map_or(0, |(_, value)| value.parse().expect("a length"));
            let mut request_body = vec![0; length];
            reader.read_exact(&mut request_body).expect("body");
            let mut stream = stream;
            write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
            .expect("answer");
            Received {
                request_line: request_line.trim_end().to_owned(),
                headers,
                body: request_body,
            }
        });
        Fake { dir, server }
    }

    fn client(&self) -> Client {
        Client::find(self.dir.path()).expect("the server is found")
    }

    fn received(self) -> Received {
        self.server.join().expect("the fake server")
    }
}

const MNIST: JobPath<'static> = JobPath {
    namespace: "team-a",
    kind: JobKind::TFJob,
    name: "mnist",
};

/// The JSON the server sends of [`mnist`].
fn view(state: &'static str) -> String {
    serde_json::to_string(&mnist(state)).expect("a JobView is JSON")
}

/// The job `team-a/mnist` as the server shows it.
fn mnist(state: &'static str) -> JobView {
    JobView {
        namespace: "team-a".to_owned(),
        name: "mnist".to_owned(),
        kind: "TFJob",
        uid: "4f1c0c9e-1111-4222-8333-944455556666".to_owned(),
        state,
        waiting: None,
        failure: None,
        reason: None,
        created: "2024-05-01T12:00:00Z".parse().expect("a time"),
        finished: false,
        job: serde_json::json!({ "apiVersion": "kubeflow.org/v1", "kind": "TFJob" }),
        replicas: Vec::new(),
        events: Vec::new(),
    }
}

#[test]
fn submit_posts_the_manifest_as_is_with_source_namespace_and_token() {
    let fake = Fake::answering(201, &format!(r#"{{"jobs": [{}]}}"#, view("Pending")));
    let manifest = b"apiVersion: kubeflow.org/v1\nkind: TFJob\n";
    let jobs = fake
        .client()
        .submit(manifest, "job.yaml", Some("team-a"), &[], None)
        .expect("submitted")
        .jobs;
    assert_eq!(jobs, [mnist("Pending")]);
    let received = fake.received();
    assert_eq!(
        received.request_line,
        "POST /api/v1/jobs?source=job.yaml&namespace=team-a HTTP/1.1"
    );
    assert_eq!(
        received.header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert_eq!(received.header("content-type"), Some("application/yaml"));
    assert_eq!(received.body, manifest);
}

#[test]
fn submit_without_namespace_sends_only_the_source() {
    let fake = Fake::answering(201, r#"{"jobs": []}"#);
    let jobs = fake
        .client()
        .submit(b"{}", "-", None, &[], None)
        .expect("submitted")
        .jobs;
    assert!(jobs.is_empty());
    assert_eq!(
        fake.received().request_line,
        "POST /api/v1/jobs?source=- HTTP/1.1"
    );
}

#[test]
fn invalid_manifest_answer_carries_every_detail() {
    let fake = Fake::answering(
        400,
        r#"{"error": "the manifest is invalid", "details": ["job.yaml:3:5: spec: one", "job.yaml:9:7: spec.x: two"]}"#,
    );
    let error = fake
        .client()
        .submit(b"kind: TFJob", "job.yaml", None, &[], None)
        .expect_err("invalid");
    let ClientError::Api {
        status,
        error: message,
        details,
    } = &error
    else {
        panic!("not an API error: {error:?}");
    };
    assert_eq!(
        (*status, message.as_str(), details.as_slice()),
        (
            400,
            "the manifest is invalid",
            ["job.yaml:3:5: spec: one", "job.yaml:9:7: spec.x: two"]
                .map(str::to_owned)
                .as_slice()
        )
    );
    assert_eq!(
        error.to_string(),
        "the manifest is invalid\njob.yaml:3:5: spec: one\njob.yaml:9:7: spec.x: two"
    );
}

#[test]
fn delete_sends_delete_to_the_jobs_address() {
    let fake = Fake::answering(200, &format!(r#"{{"deleted": {}}}"#, view("Running")));
    let deleted = fake.client().delete(MNIST).expect("deleted");
    assert_eq!(deleted, mnist("Running"));
    let received = fake.received();
    assert_eq!(
        received.request_line,
        "DELETE /api/v1/namespaces/team-a/tfjobs/mnist HTTP/1.1"
    );
    assert_eq!(
        received.header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
}

#[test]
fn suspend_and_resume_post_to_their_subresources() {
    for (suspend, path, state) in [(true, "suspend", "Suspended"), (false, "resume", "Pending")] {
        let fake = Fake::answering(200, &view(state));
        let job = fake
            .client()
            .set_suspended(MNIST, suspend)
            .expect("changed");
        assert_eq!(job, mnist(state));
        assert_eq!(
            fake.received().request_line,
            format!("POST /api/v1/namespaces/team-a/tfjobs/mnist/{path} HTTP/1.1")
        );
    }
}

#[test]
fn not_found_is_the_servers_error_verbatim() {
    let fake = Fake::answering(
        404,
        r#"{"error": "tfjob team-a/mnist not found", "details": []}"#,
    );
    let error = fake.client().delete(MNIST).expect_err("not found");
    assert!(
        matches!(&error, ClientError::Api { status: 404, .. }),
        "{error:?}"
    );
    assert_eq!(error.to_string(), "tfjob team-a/mnist not found");
}

#[test]
fn an_error_that_is_not_the_apis_shows_its_status_and_body() {
    let fake = Fake::answering(502, "bad gateway");
    let error = fake.client().delete(MNIST).expect_err("not the API");
    let url = fake.client().url;
    assert_eq!(
        error.to_string(),
        format!("the server at {url} answered HTTP 502: bad gateway")
    );
}

#[test]
fn a_success_that_is_not_a_job_view_is_an_unexpected_answer() {
    let fake = Fake::answering(200, r#"{"deleted": 1}"#);
    let error = fake.client().delete(MNIST).expect_err("not a JobView");
    assert!(
        matches!(&error, ClientError::Answer { status: 200, .. }),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .starts_with("cannot delete mnist at http://127.0.0.1:"),
        "{error}"
    );
}

#[test]
fn missing_server_file_means_no_server_and_says_how_to_start_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let error = Client::find(dir.path()).expect_err("no server.json");
    let shown = dir.path().display();
    assert_eq!(
        error.to_string(),
        format!(
            "no trainctl server is running for state directory {shown}; start one with: trainctl server --state-dir {shown} &"
        )
    );
}

#[test]
fn refused_connection_means_no_server() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("address").port()
    };
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join(SERVER_FILE),
        format!(r#"{{"url": "http://127.0.0.1:{port}", "pid": 1}}"#),
    )
    .expect("server.json");
    std::fs::write(dir.path().join(TOKEN_FILE), TOKEN).expect("server.token");
    let client = Client::find(dir.path()).expect("server.json is read");
    let error = client.delete(MNIST).expect_err("nothing listens");
    assert!(
        matches!(&error, ClientError::NoServer { dir: d } if d == dir.path()),
        "{error:?}"
    );
}

#[test]
fn malformed_server_file_is_named_with_the_expected_shape() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join(SERVER_FILE), "{}").expect("server.json");
    let error = Client::find(dir.path()).expect_err("no url");
    let message = error.to_string();
    assert!(
        message.starts_with(&format!(
            "{} is not a server address file (missing field `url`",
            dir.path().join(SERVER_FILE).display()
        )),
        "{message}"
    );
    assert!(message.ends_with(r#"expected {"url": "http://127.0.0.1:PORT", "pid": PID}"#));
}

#[test]
fn path_segments_are_percent_encoded() {
    let job = JobPath {
        namespace: "default",
        kind: JobKind::PyTorchJob,
        name: "a b/c?d",
    };
    assert_eq!(
        job.path(),
        "/api/v1/namespaces/default/pytorchjobs/a%20b%2Fc%3Fd"
    );
}

#[test]
fn resource_is_the_lowercase_kind_with_group_and_name() {
    assert_eq!(mnist("Pending").resource(), "tfjob.kubeflow.org/mnist");
}

/// A state directory whose `server.json` points at `listener`.
fn state_dir_for(listener: &TcpListener) -> tempfile::TempDir {
    let port = listener.local_addr().expect("address").port();
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join(SERVER_FILE),
        format!(r#"{{"url": "http://127.0.0.1:{port}", "pid": 1}}"#),
    )
    .expect("server.json");
    std::fs::write(dir.path().join(TOKEN_FILE), TOKEN).expect("server.token");
    dir
}

#[test]
fn a_server_that_accepts_and_never_answers_is_a_timeout_naming_the_url_and_what_to_check() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let dir = state_dir_for(&listener);
    // Accepts every connection, reads what comes, and never answers.
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut sink = [0; 4096];
                while stream.read(&mut sink).is_ok_and(|read| read > 0) {}
            });
        }
    });
    let mut client = Client::find(dir.path()).expect("server.json is read");
    client.answer_timeout = Duration::from_secs(1);
    client.stop_answer_timeout = Duration::from_secs(2);
    let url = client.url.clone();
    let shown = dir.path().display();
    let check = format!(
        "check that the trainctl server of state directory {shown} is running and not stuck (its \
         pid is in {shown}/server.json), and that nothing else listens at {url}"
    );
    let started = std::time::Instant::now();
    let error = client
        .submit(b"kind: TFJob", "job.yaml", None, &[], None)
        .expect_err("no answer");
    assert_eq!(
        error.to_string(),
        format!("cannot submit the manifest at {url}: no answer within 1 s; {check}")
    );
    // A delete waits longer: its answer comes once the replicas have stopped.
    let error = client.delete(MNIST).expect_err("no answer");
    assert_eq!(
        error.to_string(),
        format!("cannot delete mnist at {url}: no answer within 2 s; {check}")
    );
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(3) && waited < Duration::from_secs(10),
        "{waited:?}"
    );
}

#[test]
fn a_server_that_never_accepts_is_a_connect_timeout() {
    // A listener that accepts nothing: once its queue is full, connecting waits.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let dir = state_dir_for(&listener);
    let address = listener.local_addr().expect("address");
    let mut queued = Vec::new();
    let mut client = Client::find(dir.path()).expect("server.json is read");
    client.connect_timeout = Duration::from_secs(1);
    let url = client.url.clone();
    // Fill the queue: connections that still complete at once are kept open.
    loop {
        match std::net::TcpStream::connect_timeout(&address, Duration::from_millis(200)) {
            Ok(stream) => queued.push(stream),
            Err(error) if error.kind() == io::ErrorKind::TimedOut => break,
            Err(error) => panic!("connect: {error}"),
        }
        assert!(queued.len() < 100_000, "the queue never fills");
    }
    let error = client.delete(MNIST).expect_err("no connection");
    assert!(
        matches!(
            &error,
            ClientError::Timeout {
                connecting: true,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(
        error.to_string().starts_with(&format!(
            "cannot delete mnist at {url}: no connection within 1 s; check that the trainctl \
             server of state directory {} is running",
            dir.path().display()
        )),
        "{error}"
    );
    drop(queued);
}
