//! The CLI's side of the `trainctl server` API (docs/server-api.md): it finds the server of a
//! state directory through `server.json` and `server.token`, and sends it the writes (submit,
//! delete, suspend, resume). Reads go to the state database directly. The answers are decoded
//! into the API's own types ([`trainctl_server_api`]), the ones the server sends.
//!
//! Every request is bounded in time: connecting, then sending it and receiving the answer's head
//! (a server that accepts and never answers is named with what to check, rather than waited for
//! forever). The answers are small JSON documents; nothing here streams.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::ResourceQuota;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use trainctl_api::JobKind;
use trainctl_server_api::{Deleted, ErrorBody, Items, JobSummary, JobView, LoginCode, Submitted};
use ureq::http::Response;
use ureq::{Agent, RequestBuilder, Timeout};

/// The file in the state directory holding the server's address.
pub const SERVER_FILE: &str = "server.json";
/// The file in the state directory holding the server's bearer token.
pub const TOKEN_FILE: &str = "server.token";

/// How long connecting to the server may take (it is on this machine, or near).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long sending a request and receiving the head of its answer may take: a submit's
/// records and queueing, a resume.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);
/// The same for a delete or a suspend, whose answer comes once the job's replicas have stopped:
/// each may take its `terminationGracePeriodSeconds` (30 s unless the manifest says otherwise).
pub const STOP_ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// Why a request to the server did not give the answer wanted.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No server runs for the state directory (no `server.json`, or nothing answers at its url).
    #[error(
        "no trainctl server is running for state directory {dir}; start one with: trainctl server --state-dir {dir} &",
        dir = .dir.display()
    )]
    NoServer {
        /// The state directory.
        dir: PathBuf,
    },
    /// `server.json` or `server.token` could not be read.
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// `server.json` is not what a server writes.
    #[error(
        "{} is not a server address file ({source}); expected {{\"url\": \"http://127.0.0.1:PORT\", \"pid\": PID}}",
        .path.display()
    )]
    ServerFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: serde_json::Error,
    },
    /// The server answered with an error: its message and details, verbatim.
    #[error("{}", lines(.error, .details))]
    Api {
        /// The HTTP status.
        status: u16,
        /// The one-line error.
        error: String,
        /// More lines (for an invalid manifest: one per problem, in the `validate` format).
        details: Vec<String>,
    },
    /// The server did not connect, or did not answer, in time.
    #[error(
        "cannot {operation} at {url}: {} within {} s; check that the trainctl server of state \
         directory {dir} is running and not stuck (its pid is in {dir}/server.json), and that \
         nothing else listens at {url}",
        if *.connecting { "no connection" } else { "no answer" },
        .after.as_secs(),
        dir = .dir.display()
    )]
    Timeout {
        /// What was asked (`submit the manifest`).
        operation: String,
        /// The server's url.
        url: String,
        /// The state directory whose `server.json` names the server.
        dir: PathBuf,
        /// Whether the connection was not made (else: made, and no answer came).
        connecting: bool,
        /// How long it waited.
        after: Duration,
    },
    /// The request could not be sent or its answer not read.
    #[error("cannot {operation} at {url}: {source}")]
    Http {
        /// What was asked (`submit the manifest`).
        operation: String,
        /// The server's url.
        url: String,
        /// Why.
        source: ureq::Error,
    },
    /// The server's answer is not the JSON the API describes.
    #[error("cannot {operation} at {url}: unexpected answer (HTTP {status}): {source}")]
    Answer {
        /// What was asked.
        operation: String,
        /// The server's url.
        url: String,
        /// The HTTP status.
        status: u16,
        /// What is wrong with the body.
        source: serde_json::Error,
    },
}

/// The error, then each detail on its own line.
fn lines(error: &str, details: &[String]) -> String {
    let mut text = error.to_owned();
    for detail in details {
        text.push('\n');
        text.push_str(detail);
    }
    text
}

/// A job's address on the server.
#[derive(Debug, Clone, Copy)]
pub struct JobPath<'a> {
    /// Its namespace.
    pub namespace: &'a str,
    /// Its kind.
    pub kind: JobKind,
    /// Its name.
    pub name: &'a str,
}

impl JobPath<'_> {
    /// `/api/v1/namespaces/{ns}/{plural}/{name}`, each segment percent-encoded.
    fn path(&self) -> String {
        format!(
            "/api/v1/namespaces/{}/{}/{}",
            encode_segment(self.namespace),
            self.kind.plural(),
            encode_segment(self.name)
        )
    }
}

/// Percent-encodes a URL path segment: anything but RFC 3986's unreserved characters.
fn encode_segment(segment: &str) -> String {
    let mut encoded = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(char::from(byte));
        } else {
            let _ = write!(encoded, "%{byte:02X}");
        }
    }
    encoded
}

/// What `server.json` holds (its `pid` is not needed to reach the server).
#[derive(Deserialize)]
struct ServerFile {
    url: String,
}

/// A connection to the server of one state directory.
#[derive(Debug)]
pub struct Client {
    agent: Agent,
    url: String,
    authorization: String,
    state_dir: PathBuf,
    connect_timeout: Duration,
    answer_timeout: Duration,
    stop_answer_timeout: Duration,
}

impl Client {
    /// Finds the server of `state_dir` through its `server.json` and `server.token`.
    pub fn find(state_dir: &Path) -> Result<Client, ClientError> {
        let server_file = state_dir.join(SERVER_FILE);
        let text = match std::fs::read_to_string(&server_file) {
            Ok(text) => text,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Err(ClientError::NoServer {
                    dir: state_dir.to_owned(),
                });
            }
            Err(source) => {
                return Err(ClientError::Read {
                    path: server_file,
                    source,
                });
            }
        };
        let server: ServerFile =
            serde_json::from_str(&text).map_err(|source| ClientError::ServerFile {
                path: server_file,
                source,
            })?;
        let token_file = state_dir.join(TOKEN_FILE);
        let token = std::fs::read_to_string(&token_file).map_err(|source| ClientError::Read {
            path: token_file,
            source,
        })?;
        let config = Agent::config_builder()
            // The API's errors are answers to read, not failures of the request.
            .http_status_as_error(false)
            // The server is on loopback: a proxy from the environment must not get in between.
            .proxy(None)
            .build();
        Ok(Client {
            agent: config.new_agent(),
            url: server.url.trim_end_matches('/').to_owned(),
            authorization: format!("Bearer {}", token.trim()),
            state_dir: state_dir.to_owned(),
            connect_timeout: CONNECT_TIMEOUT,
            answer_timeout: ANSWER_TIMEOUT,
            stop_answer_timeout: STOP_ANSWER_TIMEOUT,
        })
    }

    /// `POST /api/v1/jobs`: submits a manifest; the claims bound, the quotas applied and the
    /// jobs as recorded. `source` names the file in the server's messages; `namespace` is `-n`;
    /// `volumes` are the claims to bind first, `[NAMESPACE/]CLAIM=PATH` each; `on_finish` a
    /// command for the server to run when each job finishes.
    pub fn submit(
        &self,
        manifest: &[u8],
        source: &str,
        namespace: Option<&str>,
        volumes: &[String],
        on_finish: Option<&str>,
    ) -> Result<Submitted, ClientError> {
        let url = format!("{}/api/v1/jobs", self.url);
        let mut request = self
            .bounded(self.agent.post(&url), self.answer_timeout)
            .query("source", source);
        if let Some(namespace) = namespace {
            request = request.query("namespace", namespace);
        }
        for volume in volumes {
            request = request.query("volume", volume);
        }
        if let Some(command) = on_finish {
            request = request.query("onFinish", command);
        }
        let response = request.content_type("application/yaml").send(manifest);
        self.answer("submit the manifest", response, self.answer_timeout)
    }

    /// `DELETE` a job; the job as it was.
    pub fn delete(&self, job: JobPath<'_>) -> Result<JobView, ClientError> {
        let url = format!("{}{}", self.url, job.path());
        let wait = self.stop_answer_timeout;
        let response = self.bounded(self.agent.delete(&url), wait).call();
        let deleted: Deleted<JobView> =
            self.answer(&format!("delete {}", job.name), response, wait)?;
        Ok(deleted.deleted)
    }

    /// Suspends (`true`) or resumes (`false`) a job; the job after the change.
    pub fn set_suspended(&self, job: JobPath<'_>, suspend: bool) -> Result<JobView, ClientError> {
        let verb = if suspend { "suspend" } else { "resume" };
        let url = format!("{}{}/{verb}", self.url, job.path());
        let wait = if suspend {
            self.stop_answer_timeout
        } else {
            self.answer_timeout
        };
        let response = self.bounded(self.agent.post(&url), wait).send_empty();
        self.answer(&format!("{verb} {}", job.name), response, wait)
    }

    /// Every job in one line, as the dashboard's Jobs page lists them: with each queued job's
    /// place in the queue and why it waits.
    pub fn job_summaries(&self) -> Result<Vec<JobSummary>, ClientError> {
        let url = format!("{}/api/v1/job-summaries", self.url);
        let request = self.bounded(self.agent.get(&url), self.answer_timeout);
        let listed: Items<JobSummary> =
            self.answer("list the jobs", request.call(), self.answer_timeout)?;
        Ok(listed.items)
    }

    /// The ResourceQuotas of `namespace` (every namespace when `None`), with what each
    /// namespace uses (`status.used`).
    pub fn quotas(&self, namespace: Option<&str>) -> Result<Vec<ResourceQuota>, ClientError> {
        let url = format!("{}/api/v1/resourcequotas", self.url);
        let mut request = self.bounded(self.agent.get(&url), self.answer_timeout);
        if let Some(namespace) = namespace {
            request = request.query("namespace", namespace);
        }
        let listed: Items<ResourceQuota> =
            self.answer("list the quotas", request.call(), self.answer_timeout)?;
        Ok(listed.items)
    }

    /// The dashboard's address with a new one-time login code (`http://127.0.0.1:PORT/#code=...`,
    /// usable once within 5 minutes): the token itself never goes into an address, which a
    /// browser's arguments and history would keep.
    pub fn dashboard_url(&self) -> Result<String, ClientError> {
        let url = format!("{}/api/v1/dashboard/codes", self.url);
        let request = self.bounded(self.agent.post(&url), self.answer_timeout);
        let issued: LoginCode = self.answer(
            "ask for a dashboard login code",
            request.send_empty(),
            self.answer_timeout,
        )?;
        Ok(format!("{}/#code={}", self.url, issued.code))
    }

    /// `DELETE` the quota `namespace/name`; the quota as it was.
    pub fn delete_quota(&self, namespace: &str, name: &str) -> Result<ResourceQuota, ClientError> {
        let url = format!(
            "{}/api/v1/namespaces/{namespace}/resourcequotas/{name}",
            self.url
        );
        let response = self
            .bounded(self.agent.delete(&url), self.answer_timeout)
            .call();
        let deleted: Deleted<ResourceQuota> = self.answer(
            &format!("delete the quota {name}"),
            response,
            self.answer_timeout,
        )?;
        Ok(deleted.deleted)
    }

    /// The request with the token, and its time bounds: connecting, then sending it and
    /// receiving its answer (`answer` for each phase; the body is a small JSON document).
    fn bounded<B>(&self, request: RequestBuilder<B>, answer: Duration) -> RequestBuilder<B> {
        request
            .config()
            .timeout_connect(Some(self.connect_timeout))
            .timeout_send_request(Some(answer))
            .timeout_send_body(Some(answer))
            .timeout_recv_response(Some(answer))
            .timeout_recv_body(Some(answer))
            .build()
            .header("Authorization", &self.authorization)
    }

    /// The body of a successful answer, or the error the server or the connection gave.
    fn answer<T: DeserializeOwned>(
        &self,
        operation: &str,
        response: Result<Response<ureq::Body>, ureq::Error>,
        answer_timeout: Duration,
    ) -> Result<T, ClientError> {
        let http = |source| match source {
            ureq::Error::Timeout(phase) => {
                let connecting = matches!(phase, Timeout::Connect | Timeout::Resolve);
                ClientError::Timeout {
                    operation: operation.to_owned(),
                    url: self.url.clone(),
                    dir: self.state_dir.clone(),
                    connecting,
                    after: if connecting {
                        self.connect_timeout
                    } else {
                        answer_timeout
                    },
                }
            }
            source => ClientError::Http {
                operation: operation.to_owned(),
                url: self.url.clone(),
                source,
            },
        };
        let mut response = match response {
            Ok(response) => response,
            Err(ureq::Error::Io(error)) if error.kind() == io::ErrorKind::ConnectionRefused => {
                return Err(ClientError::NoServer {
                    dir: self.state_dir.clone(),
                });
            }
            Err(error) => return Err(http(error)),
        };
        let status = response.status().as_u16();
        let body = response.body_mut().read_to_vec().map_err(http)?;
        let unexpected = |source| ClientError::Answer {
            operation: operation.to_owned(),
            url: self.url.clone(),
            status,
            source,
        };
        if response.status().is_success() {
            return serde_json::from_slice(&body).map_err(unexpected);
        }
        match serde_json::from_slice::<ErrorBody>(&body) {
            Ok(ErrorBody { error, details }) => Err(ClientError::Api {
                status,
                error,
                details,
            }),
            // Not the API's error body (another program on the port?): show what came.
            Err(_) => Err(ClientError::Api {
                status,
                error: format!(
                    "the server at {} answered HTTP {status}: {}",
                    self.url,
                    String::from_utf8_lossy(&body).trim()
                ),
                details: Vec::new(),
            }),
        }
    }
}

#[cfg(test)]
mod tests;
