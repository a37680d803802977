//! A `trainctl server` process on its own state directory, for the integration tests that drive
//! it through its HTTP API.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A server on its own state directory, stopped (`SIGTERM`) when dropped.
pub struct Server {
    child: Child,
    /// The server's base URL (`http://127.0.0.1:PORT`).
    pub url: String,
    token: String,
    state: tempfile::TempDir,
}

impl Server {
    /// Starts a server on a fresh state directory, with `extra` arguments.
    pub fn start(extra: &[&str]) -> Server {
        Server::start_in(tempfile::tempdir().expect("tempdir"), extra)
    }

    /// Starts a server on `state` (a previous server's, to see it take over).
    pub fn start_in(state: tempfile::TempDir, extra: &[&str]) -> Server {
        let address = state.path().join("server.json");
        // A killed server leaves its address behind: wait for the new one's.
        let _ = std::fs::remove_file(&address);
        let child = Command::new(crate::binary())
            .arg("--state-dir")
            .arg(state.path())
            .arg("server")
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the server");
        let started = Instant::now();
        while !address.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "no server.json"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let json: Value = serde_json::from_slice(&std::fs::read(&address).expect("read"))
            .expect("server.json is JSON");
        let token = std::fs::read_to_string(state.path().join("server.token")).expect("token");
        Server {
            child,
            url: json["url"].as_str().expect("url").to_owned(),
            token,
            state,
        }
    }

    /// The bearer token.
    pub fn token(&self) -> &str {
        self.token.trim()
    }

    /// The state directory.
    pub fn state_dir(&self) -> &Path {
        self.state.path()
    }

    /// Sends a request with the token; the status and the body (JSON, or the text as a string).
    pub fn request(&self, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
        let url = format!("{}{path}", self.url);
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let auth = format!("Bearer {}", self.token);
        let response = match (method, body) {
            ("POST", Some(body)) => agent.post(&url).header("Authorization", &auth).send(body),
            ("POST", None) => agent.post(&url).header("Authorization", &auth).send_empty(),
            ("DELETE", _) => agent.delete(&url).header("Authorization", &auth).call(),
            _ => agent.get(&url).header("Authorization", &auth).call(),
        }
        .expect("the server answers");
        let status = response.status().as_u16();
        let text = response.into_body().read_to_string().expect("body");
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// The view of the TFJob `name` in namespace `default`.
    pub fn job(&self, name: &str) -> (u16, Value) {
        self.request(
            "GET",
            &format!("/api/v1/namespaces/default/tfjobs/{name}"),
            None,
        )
    }

    /// Polls the job until `done` holds for its view.
    pub fn wait_for(&self, name: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        self.wait_for_within(name, what, Duration::from_secs(30), done)
    }

    /// Polls the job until `done` holds for its view, for at most `within`.
    pub fn wait_for_within(
        &self,
        name: &str,
        what: &str,
        within: Duration,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let started = Instant::now();
        loop {
            let (status, view) = self.job(name);
            if status == 200 && done(&view) {
                return view;
            }
            assert!(
                started.elapsed() < within,
                "{name}: never {what}; last {status} {view}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The state of a job's view in one word (`Pending`, `Running`, `Succeeded`...).
pub fn state(view: &Value) -> &str {
    view["state"].as_str().unwrap_or("")
}

impl Server {
    /// Kills the server with `SIGKILL`, as a crash would, and hands back its state directory.
    pub fn kill(mut self) -> tempfile::TempDir {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let state = tempfile::tempdir().expect("tempdir");
        std::mem::replace(&mut self.state, state)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Stops the server with `SIGTERM`, as `systemctl stop` would, and waits until it has exited.
    pub fn terminate(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}
