//! The dashboard's data from the cluster ([`Dashboard`] as a [`Source`]): what the dashboard
//! may do ([`Source::info`], its actions as RBAC allows them), every job in one line, one job
//! with its pods and events and its actions, and its logs ([`super::logs`]). Curves and the
//! Machine page are this machine's and are not read from a cluster. The cluster's failures
//! become the API's statuses (`From<ClusterError> for Failure`).

use std::time::Duration;

use axum::body::Body;
use axum::http::StatusCode;
use futures_util::future::try_join;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use tokio::sync::watch;
use trainctl_api::JobKind;
use trainctl_dashboard::{Failure, JobPath, Source};
use trainctl_server_api::{
    ClusterShown, DashboardInfo, JobSummary, JobView, LogsQuery, MachineView, ScalarsView,
};

use super::{Dashboard, views};
use crate::cluster::{ClusterError, ClusterJob};

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

/// Why there is no Machine page: it is a local server's.
fn no_machine() -> Failure {
    Failure::new(
        StatusCode::NOT_FOUND,
        "the Machine page shows a local server's machine (trainctl server); for a cluster's \
         nodes: kubectl top nodes",
    )
}

impl Dashboard {
    /// The view of `job`: its pods and its events, read now.
    async fn view_of(&self, job: &ClusterJob) -> Result<JobView, ClusterError> {
        let (pods, events) =
            try_join(self.cluster.pods_of(job), self.cluster.events_of(job)).await?;
        Ok(views::job_view(job, &pods, events))
    }

    /// `job` as it is now; [`Failure::gone`] once it is deleted, or another job took its name.
    async fn again(&self, job: &ClusterJob) -> Result<ClusterJob, Failure> {
        let now = self
            .cluster
            .get_job(job.kind, job.namespace(), job.name())
            .await?;
        now.filter(|now| now.uid() == job.uid())
            .ok_or_else(|| Failure::gone(format!("{} was deleted", job.resource())))
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

impl Source for Dashboard {
    type Job = ClusterJob;
    type Curves = ();
    const CURVES_EVERY: Option<Duration> = None;

    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.clone()
    }

    /// No curves, no Machine page; actions when RBAC allows them; the context and namespace
    /// shown.
    async fn info(&self) -> DashboardInfo {
        DashboardInfo {
            source: trainctl_server_api::Source::Kube,
            curves: false,
            machine: Some(false),
            actions: self.may_act().await,
            version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            cluster: Some(ClusterShown {
                context: self.context.clone(),
                namespace: self.namespace.clone(),
            }),
        }
    }

    async fn summaries(&self) -> Result<Vec<JobSummary>, Failure> {
        let namespace = self.namespace.as_deref();
        let (listed, pods) = try_join(
            self.cluster.list_jobs(None, namespace),
            self.cluster.training_pods(namespace),
        )
        .await?;
        Ok(views::summaries(&listed.jobs, &pods))
    }

    fn no_machine(&self) -> Option<Failure> {
        Some(no_machine())
    }

    async fn machine(&self) -> Result<MachineView, Failure> {
        Err(no_machine())
    }

    /// 400 when the plural is no kind's; 404 when the dashboard does not show the path's
    /// namespace or there is no such job.
    async fn find(&self, path: &JobPath) -> Result<ClusterJob, Failure> {
        let kind = path
            .kind()
            .map_err(|unknown| Failure::new(StatusCode::BAD_REQUEST, unknown.to_string()))?;
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

    async fn view(&self, job: &ClusterJob) -> Result<JobView, Failure> {
        Ok(self.view_of(job).await?)
    }

    async fn view_now(&self, job: &ClusterJob) -> Result<JobView, Failure> {
        let now = self.again(job).await?;
        Ok(self.view_of(&now).await?)
    }

    /// Deleted as `trainctl --kube delete` does (in the background).
    async fn delete(&self, job: ClusterJob) -> Result<JobView, Failure> {
        let view = self.view_of(&job).await?;
        if !self.cluster.delete_job(&job).await? {
            return Err(Failure::new(
                StatusCode::NOT_FOUND,
                format!("{} was deleted already", job.resource()),
            ));
        }
        Ok(view)
    }

    /// Sets the job's `spec.runPolicy.suspend`, as `trainctl --kube suspend` and `resume` do;
    /// 409 for a job that has finished.
    async fn set_suspended(&self, job: ClusterJob, suspend: bool) -> Result<JobView, Failure> {
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
        let changed = self.cluster.set_suspended(&job, suspend).await?;
        Ok(self.view_of(&changed).await?)
    }

    async fn logs(&self, job: ClusterJob, query: LogsQuery) -> Result<Body, Failure> {
        super::logs::logs(&self.cluster, job, query).await
    }

    /// No curves: a cluster's event files are not read.
    async fn scalars(&self, job: &ClusterJob, (): &(), _: usize) -> Result<ScalarsView, Failure> {
        self.again(job).await?;
        Ok(ScalarsView {
            roots: Vec::new(),
            series: Vec::new(),
            problems: Vec::new(),
            env: "TRAINCTL_TENSORBOARD_DIR",
        })
    }
}
