//! The dashboard's data from this server ([`Local`], the [`Source`] its routes read): what the
//! dashboard may do here, every job in one line, the machine, one job with its actions and
//! logs, and a job's scalar curves, from the supervisor and the state database; and the
//! dashboard's login codes (`POST /api/v1/dashboard/codes`, [`issue_code`]).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use tokio::sync::watch;
use trainctl_api::JobKind;
use trainctl_dashboard::auth::CODE_LIFETIME;
use trainctl_dashboard::{Failure, JobPath, Source};
use trainctl_server_api::{
    DashboardInfo, JobSummary, JobView, LoginCode, LogsQuery, MachineView, ScalarsView,
};

use super::errors::refused;
use super::shared::Api;
use crate::curves::Curves;
use crate::logs::{self, LogQuery, LogStream};
use crate::supervisor::{Supervisor, SupervisorError};

/// How often a job's event files are read again while its curves are watched.
pub const CURVES_EVERY: Duration = Duration::from_secs(1);

/// The dashboard's data from this server's supervisor; its streams wait on `changes`, which
/// changes with the state database ([`crate::changes`]).
pub struct Local {
    /// The supervisor.
    pub supervisor: Arc<Supervisor>,
    /// Bumped at each change of the state database.
    pub changes: watch::Receiver<u64>,
}

/// A job the dashboard asked for, with its view when it was found.
#[derive(Debug, Clone)]
pub struct Found {
    namespace: String,
    kind: JobKind,
    name: String,
    view: JobView,
}

impl Local {
    /// `read` on a blocking thread (the supervisor reads the state database); a failure if it
    /// panicked.
    async fn blocking<T, F>(&self, read: F) -> Result<T, Failure>
    where
        T: Send + 'static,
        F: FnOnce(&Supervisor) -> Result<T, SupervisorError> + Send + 'static,
    {
        let supervisor = Arc::clone(&self.supervisor);
        match tokio::task::spawn_blocking(move || read(&supervisor)).await {
            Ok(read) => read.map_err(|failure| refused(&failure)),
            Err(panicked) => Err(Failure::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("reading the data failed: {panicked}"),
            )),
        }
    }
}

impl Source for Local {
    type Job = Found;
    type Curves = Arc<Mutex<Curves>>;
    const CURVES_EVERY: Option<Duration> = Some(CURVES_EVERY);

    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.clone()
    }

    /// Curves and actions are offered.
    async fn info(&self) -> DashboardInfo {
        DashboardInfo {
            source: trainctl_server_api::Source::Local,
            curves: true,
            machine: None,
            actions: true,
            version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            cluster: None,
        }
    }

    async fn summaries(&self) -> Result<Vec<JobSummary>, Failure> {
        self.blocking(Supervisor::summaries).await
    }

    async fn machine(&self) -> Result<MachineView, Failure> {
        self.blocking(Supervisor::machine).await
    }

    /// 404 when the plural is no kind's or there is no such job.
    async fn find(&self, path: &JobPath) -> Result<Found, Failure> {
        let kind = path
            .kind()
            .map_err(|unknown: trainctl_api::kind::UnknownKind| {
                Failure::new(StatusCode::NOT_FOUND, unknown.to_string())
            })?;
        let view = self
            .supervisor
            .get(&path.namespace, kind, &path.name)
            .map_err(|failure| refused(&failure))?;
        Ok(Found {
            namespace: path.namespace.clone(),
            kind,
            name: path.name.clone(),
            view,
        })
    }

    async fn view(&self, job: &Found) -> Result<JobView, Failure> {
        Ok(job.view.clone())
    }

    async fn view_now(&self, job: &Found) -> Result<JobView, Failure> {
        let job = job.clone();
        self.blocking(move |supervisor| supervisor.get(&job.namespace, job.kind, &job.name))
            .await
    }

    async fn delete(&self, job: Found) -> Result<JobView, Failure> {
        self.supervisor
            .delete(&job.namespace, job.kind, &job.name)
            .await
            .map_err(|failure| refused(&failure))
    }

    async fn set_suspended(&self, job: Found, suspend: bool) -> Result<JobView, Failure> {
        let done = if suspend {
            self.supervisor
                .suspend(&job.namespace, job.kind, &job.name)
                .await
        } else {
            self.supervisor.resume(&job.namespace, job.kind, &job.name)
        };
        done.map_err(|failure| refused(&failure))
    }

    /// 404 for a replica the job does not have; with `previous`, 400 when no replica asked
    /// for has a previous run.
    async fn logs(&self, job: Found, query: LogsQuery) -> Result<Body, Failure> {
        let view = job.view;
        if let Some(replica) = &query.replica {
            let replicas = logs::replica_names(&view);
            if !replicas.contains(replica) {
                return Err(Failure::new(
                    StatusCode::NOT_FOUND,
                    format!(
                        "{} {}/{} has no replica `{replica}`; its replicas: {}",
                        view.kind,
                        view.namespace,
                        view.name,
                        listed(&replicas)
                    ),
                ));
            }
        }
        let wanted = LogQuery {
            replica: query.replica,
            follow: query.follow,
            tail_lines: query
                .tail_lines
                .and_then(|lines| usize::try_from(lines).ok()),
            since_seconds: query.since_seconds.map(i64::unsigned_abs),
            timestamps: query.timestamps,
            previous: query.previous,
        };
        let runs = if wanted.previous {
            let name = format!("{} {}/{}", view.kind, view.namespace, view.name);
            let (sources, _) = self
                .supervisor
                .log_sources(&view.uid)
                .map_err(|failure| refused(&failure))?;
            let runs = logs::previous_runs(&name, &sources, wanted.replica.as_deref())
                .map_err(|none| Failure::new(StatusCode::BAD_REQUEST, none.to_string()))?;
            Some(runs)
        } else {
            None
        };
        let stream = LogStream::new(Arc::clone(&self.supervisor), view.uid, wanted, runs);
        Ok(Body::from_stream(stream.into_stream()))
    }

    /// Read from the job's event files (those appended since `curves` last read them).
    async fn scalars(
        &self,
        job: &Found,
        curves: &Arc<Mutex<Curves>>,
        points: usize,
    ) -> Result<ScalarsView, Failure> {
        let (job, curves) = (job.clone(), Arc::clone(curves));
        self.blocking(move |supervisor| {
            let roots = supervisor.event_roots(&job.namespace, job.kind, &job.name)?;
            let mut curves = curves.lock().unwrap_or_else(PoisonError::into_inner);
            Ok(curves.read(roots, points))
        })
        .await
    }
}

/// `a, b, c`; the first ten of a longer list, then how many in all.
fn listed(names: &[String]) -> String {
    match names.get(..10) {
        Some(first) if names.len() > 10 => {
            format!("{}, ... ({} in all)", first.join(", "), names.len())
        }
        _ => names.join(", "),
    }
}

/// `POST /api/v1/dashboard/codes`: a new one-time login code for the dashboard's address
/// (`/#code=...`), usable once within [`CODE_LIFETIME`].
pub async fn issue_code(State(api): State<Api>) -> Response {
    let code = api.codes.issue(CODE_LIFETIME);
    (
        StatusCode::CREATED,
        Json(LoginCode {
            code,
            expires_in_seconds: CODE_LIFETIME.as_secs(),
        }),
    )
        .into_response()
}
