//! Slow and silent peers do not hold the server: a connection that sends no request head
//! within 10 s (from when it opens, or from the previous answer) is closed, a body that stalls
//! is refused (408), and at most a quarter of the server's descriptors go to connections, a new
//! connection taking the place of the oldest silent one, so a flood of silent connections under
//! a low descriptor limit neither exhausts the server nor keeps `trainctl submit` waiting.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use trainctl_cli_harness::into_run;
use trainctl_cli_harness::server::Server;

/// The server's header read timeout.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

fn connect(url: &str) -> TcpStream {
    TcpStream::connect(url.trim_start_matches("http://")).expect("connect")
}

/// Reads until the server closes `stream`; what came, and when it closed.
fn until_closed(mut stream: TcpStream) -> (String, Instant) {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut came = Vec::new();
    let mut buffer = [0; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => came.extend_from_slice(&buffer[..read]),
            Err(error) if error.kind() == ErrorKind::ConnectionReset => break,
            Err(error) => panic!("not closed after 30 s: {error}"),
        }
    }
    (String::from_utf8_lossy(&came).into_owned(), Instant::now())
}

#[test]
fn silent_slow_and_idle_connections_are_closed_after_the_header_timeout() {
    let server = Server::start(&[]);
    let opened = Instant::now();
    let silent = connect(&server.url);
    let mut slow = connect(&server.url);
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHo")
        .expect("part of a head");
    let mut idle = connect(&server.url);
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("a request");
    let mut answer = [0; 17];
    idle.read_exact(&mut answer).expect("an answer");
    assert_eq!(&answer, b"HTTP/1.1 200 OK\r\n");
    let answered = Instant::now();
    let threads = [silent, slow, idle].map(|stream| std::thread::spawn(|| until_closed(stream)));
    let [silent, slow, idle] = threads.map(|thread| thread.join().expect("reader"));
    for (what, (came, closed), from) in [
        ("silent", silent, opened),
        ("slow", slow, opened),
        ("idle", idle, answered),
    ] {
        let after = closed - from;
        assert!(
            after >= Duration::from_millis(9500) && after < Duration::from_secs(15),
            "{what}: closed after {after:?}"
        );
        assert!(what == "idle" || came.is_empty(), "{what}: {came}");
    }
}

#[test]
fn a_body_that_stalls_is_refused() {
    let server = Server::start(&[]);
    let token = std::fs::read_to_string(server.state_dir().join("server.token")).expect("token");
    let mut stream = connect(&server.url);
    let started = Instant::now();
    write!(
        stream,
        "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Length: 100\r\n\r\nkind: TFJob\n"
    )
    .expect("a head and part of a body");
    let (answer, closed) = until_closed(stream);
    let after = closed - started;
    assert!(
        after >= Duration::from_millis(9500) && after < Duration::from_secs(15),
        "{after:?}"
    );
    let body = r#"{"error":"the request's body stalled: 12 bytes came, then nothing for 10 s (or it took more than 60 s in all)","details":[]}"#;
    assert!(
        answer.starts_with("HTTP/1.1 408 Request Timeout\r\n") && answer.ends_with(body),
        "{answer}"
    );
}

/// A server started under `ulimit -n {open_files}`, stopped when dropped.
struct Limited {
    child: Child,
    url: String,
    state: tempfile::TempDir,
}

impl Limited {
    fn start(open_files: u32) -> Limited {
        let state = tempfile::tempdir().expect("tempdir");
        let child = Command::new("sh")
            .args([
                "-c",
                &format!(r#"ulimit -n {open_files} && exec "$0" "$@""#),
            ])
            .arg(trainctl_cli_harness::binary())
            .arg("--state-dir")
            .arg(state.path())
            .arg("server")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the server");
        let address = state.path().join("server.json");
        let started = Instant::now();
        while !address.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "no server.json"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&address).expect("read")).expect("JSON");
        Limited {
            child,
            url: json["url"].as_str().expect("url").to_owned(),
            state,
        }
    }

    fn state_dir(&self) -> &Path {
        self.state.path()
    }
}

impl Drop for Limited {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

/// Whether the server has closed `stream` (without waiting).
fn closed(stream: &TcpStream) -> bool {
    stream.set_nonblocking(true).expect("non-blocking");
    let mut byte = [0; 1];
    match stream.peek(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(error) => error.kind() != ErrorKind::WouldBlock,
    }
}

#[test]
fn a_flood_of_silent_connections_under_a_low_descriptor_limit_does_not_stop_submit() {
    // 256 descriptors: at most 64 connections.
    let server = Limited::start(256);
    let flood: Vec<TcpStream> = (0..300).map(|_| connect(&server.url)).collect();
    let manifest = server.state_dir().join("job.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: through
spec:
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          containers: [{name: tensorflow, image: busybox, command: ['true']}]
",
    )
    .expect("write");
    let started = Instant::now();
    let mut submit = Command::new(trainctl_cli_harness::binary())
        .arg("--state-dir")
        .arg(server.state_dir())
        .args(["submit", "-f"])
        .arg(&manifest)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("trainctl runs");
    while submit.try_wait().expect("wait").is_none() {
        if started.elapsed() > Duration::from_secs(30) {
            let _ = submit.kill();
            panic!("submit still waits after 30 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let run = into_run(&submit.wait_with_output().expect("its output"));
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            Some(0),
            "tfjob.kubeflow.org/through submitted (Pending)\n",
            ""
        )
    );
    assert!(
        started.elapsed() < HEADER_READ_TIMEOUT,
        "submit took {:?}",
        started.elapsed()
    );
    // The oldest silent connections made room; no more than the limit are still held.
    let open = flood.iter().filter(|stream| !closed(stream)).count();
    assert!(open <= 64, "{open} of the flood still open");
}
