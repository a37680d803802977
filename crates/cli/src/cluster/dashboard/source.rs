//! The API's answers (`/api/v1/...`), from the cluster: what the dashboard may do
//! ([`info`]), every job in one line ([`summaries`]), one job ([`one`]) and its actions; and
//! errors in the API's envelope `{"error": "...", "details": []}` ([`Failure`]).

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::future::try_join;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use serde::Deserialize;
use serde_json::{Value, json};
use trainctl_api::JobKind;
use trainctl_api::manifest::check_namespace;
use trainctl_server::view::{JobSummary, JobView};

use super::Dashboard;
use super::views;
use crate::cluster::{ClusterError, ClusterJob};

/// What `.../scalars` answers: a cluster's event files are not read.
pub fn no_curves() -> Value {
    json!({"roots": [], "series": [], "problems": [], "env": "TRAINCTL_TENSORBOARD_DIR"})
}

/// An answer other than a success: its status and message, sent in the API's envelope.
#[derive(Debug)]
pub struct Failure {
    status: StatusCode,
    message: String,
}

impl Failure {
    /// A failure with `status` saying `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
        }
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(json!({ "error": self.message, "details": [] })),
        )
            .into_response()
    }
}

impl From<ClusterError> for Failure {
    /// RBAC's refusal is 403, a kind whose CRD is not installed 404, a conflict 409; every
    /// other failure of the cluster is 502, with its message.
    fn from(error: ClusterError) -> Failure {
        let status = match &error {
            ClusterError::Forbidden { .. } => StatusCode::FORBIDDEN,
            ClusterError::CrdMissing(_) | ClusterError::NoCrds => StatusCode::NOT_FOUND,
            ClusterError::Api { code: 409, .. } => StatusCode::CONFLICT,
            _ => StatusCode::BAD_GATEWAY,
        };
        Failure::new(status, error.to_string())
    }
}

/// The path of one job: `/api/v1/namespaces/{namespace}/{plural}/{name}`.
#[derive(Debug, Clone, Deserialize)]
pub struct JobPath {
    namespace: String,
    plural: String,
    name: String,
}

impl Dashboard {
    /// Every job shown, oldest first.
    pub async fn summaries(&self) -> Result<Vec<JobSummary>, ClusterError> {
        let namespace = self.namespace.as_deref();
        let (listed, pods) = try_join(
            self.cluster.list_jobs(None, namespace),
            self.cluster.training_pods(namespace),
        )
        .await?;
        Ok(views::summaries(&listed.jobs, &pods))
    }

    /// The job `path` names: 400 when its namespace or plural is not one, 404 when the
    /// dashboard does not show its namespace or there is no such job.
    pub async fn find(
        &self,
        path: Result<Path<JobPath>, PathRejection>,
    ) -> Result<ClusterJob, Failure> {
        let Path(path) =
            path.map_err(|rejection| Failure::new(StatusCode::BAD_REQUEST, rejection.body_text()))?;
        check_namespace(&path.namespace).map_err(|problem| {
            Failure::new(
                StatusCode::BAD_REQUEST,
                format!("the path's namespace: {problem}"),
            )
        })?;
        let kind: JobKind =
            path.plural
                .parse()
                .map_err(|unknown: trainctl_api::kind::UnknownKind| {
                    Failure::new(StatusCode::BAD_REQUEST, unknown.to_string())
                })?;
        if let Some(shown) = self
            .namespace
            .as_deref()
            .filter(|&shown| shown != path.namespace)
        {
            return Err(Failure::new(
                StatusCode::NOT_FOUND,
                format!(
                    "this dashboard shows namespace \"{shown}\" only; for namespace \"{}\": \
                     trainctl --kube dashboard -n {} (or -A)",
                    path.namespace, path.namespace
                ),
            ));
        }
        self.cluster
            .get_job(kind, &path.namespace, &path.name)
            .await?
            .ok_or_else(|| {
                Failure::new(
                    StatusCode::NOT_FOUND,
                    format!(
                        "{} \"{}\" not found in namespace \"{}\"",
                        kind.singular(),
                        path.name,
                        path.namespace
                    ),
                )
            })
    }

    /// The view of `job`: its pods and its events, read now.
    pub async fn view(&self, job: &ClusterJob) -> Result<JobView, ClusterError> {
        let (pods, events) =
            try_join(self.cluster.pods_of(job), self.cluster.events_of(job)).await?;
        Ok(views::job_view(job, &pods, events))
    }

    /// Whether RBAC lets this user `patch` and `delete` jobs where the dashboard looks (asked
    /// for TFJobs, with SelfSubjectAccessReviews); `false` when the review itself is refused.
    async fn may_act(&self) -> bool {
        let reviews: Api<SelfSubjectAccessReview> = Api::all(self.cluster.client.clone());
        for verb in ["patch", "delete"] {
            let review = SelfSubjectAccessReview {
                spec: SelfSubjectAccessReviewSpec {
                    resource_attributes: Some(ResourceAttributes {
                        group: Some("kubeflow.org".to_owned()),
                        resource: Some(JobKind::TFJob.plural().to_owned()),
                        verb: Some(verb.to_owned()),
                        namespace: self.namespace.clone(),
                        ..ResourceAttributes::default()
                    }),
                    ..SelfSubjectAccessReviewSpec::default()
                },
                ..SelfSubjectAccessReview::default()
            };
            let allowed = reviews
                .create(&PostParams::default(), &review)
                .await
                .is_ok_and(|answer| answer.status.is_some_and(|status| status.allowed));
            if !allowed {
                return false;
            }
        }
        true
    }
}

/// `GET /api/v1/dashboard`: what the pages show and may do here.
pub async fn info(State(dashboard): State<Dashboard>) -> Response {
    Json(json!({
        "source": "kube",
        "curves": false,
        "machine": false,
        "actions": dashboard.may_act().await,
        "version": env!("CARGO_PKG_VERSION"),
        "context": dashboard.context,
        "namespace": dashboard.namespace,
    }))
    .into_response()
}

/// `GET /api/v1/job-summaries`.
pub async fn summaries(State(dashboard): State<Dashboard>) -> Result<Response, Failure> {
    let items = dashboard.summaries().await?;
    Ok(Json(json!({ "items": items })).into_response())
}

/// `GET /api/v1/machine` and its stream: not a cluster's.
pub async fn machine() -> Failure {
    Failure::new(
        StatusCode::NOT_FOUND,
        "the Machine page shows a local server's machine (trainctl server); for a cluster's \
         nodes: kubectl top nodes",
    )
}

/// `GET {job}`.
pub async fn one(
    State(dashboard): State<Dashboard>,
    path: Result<Path<JobPath>, PathRejection>,
) -> Result<Json<JobView>, Failure> {
    let job = dashboard.find(path).await?;
    Ok(Json(dashboard.view(&job).await?))
}

/// `DELETE {job}`: deleted as `trainctl --kube delete` does (in the background); the job as it
/// was.
pub async fn delete(
    State(dashboard): State<Dashboard>,
    path: Result<Path<JobPath>, PathRejection>,
) -> Result<Response, Failure> {
    let job = dashboard.find(path).await?;
    let view = dashboard.view(&job).await?;
    if !dashboard.cluster.delete_job(&job).await? {
        return Err(Failure::new(
            StatusCode::NOT_FOUND,
            format!("{} was deleted already", job.resource()),
        ));
    }
    Ok(Json(json!({ "deleted": view })).into_response())
}

/// `POST {job}/suspend`.
pub async fn suspend(
    State(dashboard): State<Dashboard>,
    path: Result<Path<JobPath>, PathRejection>,
) -> Result<Json<JobView>, Failure> {
    set_suspended(&dashboard, path, true).await
}

/// `POST {job}/resume`.
pub async fn resume(
    State(dashboard): State<Dashboard>,
    path: Result<Path<JobPath>, PathRejection>,
) -> Result<Json<JobView>, Failure> {
    set_suspended(&dashboard, path, false).await
}

/// Sets the job's `spec.runPolicy.suspend`, as `trainctl --kube suspend` and `resume` do;
/// 409 for a job that has finished.
async fn set_suspended(
    dashboard: &Dashboard,
    path: Result<Path<JobPath>, PathRejection>,
    suspend: bool,
) -> Result<Json<JobView>, Failure> {
    let job = dashboard.find(path).await?;
    if job.finished() {
        let verb = if suspend { "suspended" } else { "resumed" };
        return Err(Failure::new(
            StatusCode::CONFLICT,
            format!(
                "{} has {}: it cannot be {verb}",
                job.resource(),
                job.state()
            ),
        ));
    }
    let changed = dashboard.cluster.set_suspended(&job, suspend).await?;
    Ok(Json(dashboard.view(&changed).await?))
}

/// `GET {job}/scalars`: no curves (a cluster's event files are not read), for a job that
/// exists.
pub async fn scalars(
    State(dashboard): State<Dashboard>,
    path: Result<Path<JobPath>, PathRejection>,
) -> Result<Json<Value>, Failure> {
    dashboard.find(path).await?;
    Ok(Json(no_curves()))
}

/// A path the API does not have.
pub async fn unknown_path(method: Method, request: Request) -> Failure {
    Failure::new(
        StatusCode::NOT_FOUND,
        format!("no such path: {method} {}", request.uri().path()),
    )
}

/// A method a path does not take.
pub async fn not_allowed(method: Method, request: Request) -> Failure {
    Failure::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{method} is not allowed on {}", request.uri().path()),
    )
}
