//! Where the dashboard's data comes from: a [`Source`] (the server's state database, or a
//! cluster) answers in the API's own types ([`trainctl_server_api`]), or with a [`Failure`],
//! which the routes send in the API's error envelope.

use std::future::Future;
use std::time::Duration;

use axum::Json;
use axum::body::Body;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use tokio::sync::watch;
use trainctl_api::JobKind;
use trainctl_api::kind::UnknownKind;
use trainctl_server_api::{
    DashboardInfo, ErrorBody, JobSummary, JobView, LogsQuery, MachineView, ScalarsView,
};

/// The data of the dashboard's routes ([`crate::app`]): the server's and the cluster's each
/// implement it. A job is first found from its path ([`Source::find`]), which says 400 or 404
/// at once; what is done with it afterwards is given the job found.
pub trait Source: Send + Sync + 'static {
    /// A job [`Source::find`] found, as the source needs it to read or act on it again.
    type Job: Clone + Send + Sync + 'static;

    /// What one stream of a job's curves keeps between two reads (the event files read so
    /// far); each stream starts with its default.
    type Curves: Default + Clone + Send + Sync + 'static;

    /// How often a stream of a job's curves reads them again when nothing changed; `None`:
    /// only when something changed.
    const CURVES_EVERY: Option<Duration>;

    /// A receiver whose value changes when the data may have changed; the event streams read
    /// again then, and end once its sender is gone.
    fn changes(&self) -> watch::Receiver<u64>;

    /// What the dashboard shows and may do here.
    fn info(&self) -> impl Future<Output = DashboardInfo> + Send;

    /// Every job shown, in one line each, oldest first.
    fn summaries(&self) -> impl Future<Output = Result<Vec<JobSummary>, Failure>> + Send;

    /// Why there is no Machine page here, if there is none: both its routes answer that.
    fn no_machine(&self) -> Option<Failure> {
        None
    }

    /// The machine: its capacity, what the admitted jobs hold, the GPUs, the queue.
    fn machine(&self) -> impl Future<Output = Result<MachineView, Failure>> + Send;

    /// The job `path` names (its namespace is a DNS-1123 label); a failure when there is none,
    /// or its plural is no kind's.
    fn find(&self, path: &JobPath) -> impl Future<Output = Result<Self::Job, Failure>> + Send;

    /// The view of a job just found.
    fn view(&self, job: &Self::Job) -> impl Future<Output = Result<JobView, Failure>> + Send;

    /// The view of a job found earlier, read again now; [`Failure::gone`] once it is gone.
    fn view_now(&self, job: &Self::Job) -> impl Future<Output = Result<JobView, Failure>> + Send;

    /// Deletes the job; its view as it was.
    fn delete(&self, job: Self::Job) -> impl Future<Output = Result<JobView, Failure>> + Send;

    /// Suspends the job (`suspend`) or resumes it; its view after.
    fn set_suspended(
        &self,
        job: Self::Job,
        suspend: bool,
    ) -> impl Future<Output = Result<JobView, Failure>> + Send;

    /// The job's logs as `query` asks for them (its `sinceSeconds`, when given, is above 0): the
    /// text of a `text/plain` answer.
    fn logs(
        &self,
        job: Self::Job,
        query: LogsQuery,
    ) -> impl Future<Output = Result<Body, Failure>> + Send;

    /// The job's curves, each series at most `points` points, reading on from `curves`;
    /// [`Failure::gone`] once the job is gone.
    fn scalars(
        &self,
        job: &Self::Job,
        curves: &Self::Curves,
        points: usize,
    ) -> impl Future<Output = Result<ScalarsView, Failure>> + Send;
}

/// The path of one job: `/api/v1/namespaces/{namespace}/{plural}/{name}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct JobPath {
    /// The namespace.
    pub namespace: String,
    /// The kind's plural (`tfjobs`).
    pub plural: String,
    /// The job's name.
    pub name: String,
}

impl JobPath {
    /// The kind the path's plural names.
    pub fn kind(&self) -> Result<JobKind, UnknownKind> {
        self.plural.parse()
    }
}

/// An answer other than a success: its status and its error envelope
/// (`{"error": "...", "details": [...]}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    status: StatusCode,
    body: ErrorBody,
    gone: bool,
}

impl Failure {
    /// A failure with `status` saying `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Failure {
        Failure {
            status,
            body: ErrorBody {
                error: message.into(),
                details: Vec::new(),
            },
            gone: false,
        }
    }

    /// A 404 saying `message`: the job is gone (a job's event stream then ends with
    /// `deleted`).
    pub fn gone(message: impl Into<String>) -> Failure {
        Failure {
            gone: true,
            ..Failure::new(StatusCode::NOT_FOUND, message)
        }
    }

    /// The same failure with more lines of `details`.
    #[must_use]
    pub fn with_details(mut self, details: Vec<String>) -> Failure {
        self.body.details = details;
        self
    }

    /// What it says, one line.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.body.error
    }

    /// Whether it says that the job is gone.
    #[must_use]
    pub fn is_gone(&self) -> bool {
        self.gone
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        (self.status, Json(self.body)).into_response()
    }
}
