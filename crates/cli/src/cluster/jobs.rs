//! The cluster's jobs: `DynamicObject`s of their kind's resource (the operator's
//! [`api_resource`]), read into the api crate's [`TrainingJob`] as the operator reads them
//! ([`job::read`]: typed, then defaulted).

use futures_util::future::join_all;
use futures_util::{Stream, StreamExt};
use jiff::Timestamp;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde::Serialize;
use serde::de::DeserializeOwned;
use trainctl_api::manifest::Companion;
use trainctl_api::status::state_word;
use trainctl_api::{JobKind, JobStatus, TrainingJob};
use trainctl_operator::job::{self, api_resource};

use super::{Cluster, ClusterError, Operation, Resource};
use crate::target::Target;

/// The field manager of what `submit` applies (ConfigMaps and Secrets).
const FIELD_MANAGER: &str = "trainctl-cli";

/// A job read from the cluster.
#[derive(Debug, Clone)]
pub struct ClusterJob {
    /// Its kind.
    pub kind: JobKind,
    /// The object as the API server stores it.
    pub object: DynamicObject,
    /// The object read into its type, defaulted.
    pub job: TrainingJob,
}

impl ClusterJob {
    /// Reads `object`, a job of `kind`; an error names the field that does not fit.
    pub fn read(kind: JobKind, object: DynamicObject) -> Result<ClusterJob, ClusterError> {
        match job::read(kind, &object) {
            Ok(job) => Ok(ClusterJob { kind, object, job }),
            Err(message) => Err(ClusterError::Unreadable {
                kind: kind.singular(),
                namespace: object.metadata.namespace.clone().unwrap_or_default(),
                name: object.metadata.name.clone().unwrap_or_default(),
                message,
            }),
        }
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.job.name()
    }

    /// `metadata.namespace`.
    pub fn namespace(&self) -> &str {
        self.job.namespace()
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> &str {
        self.job.metadata().uid.as_deref().unwrap_or_default()
    }

    /// `metadata.creationTimestamp`.
    pub fn created(&self) -> Option<Timestamp> {
        self.job
            .metadata()
            .creation_timestamp
            .as_ref()
            .map(|time| time.0)
    }

    /// The state in one word, as `get` shows it.
    pub fn state(&self) -> &'static str {
        state_word(self.job.status())
    }

    /// Whether the job succeeded or failed.
    pub fn finished(&self) -> bool {
        self.job.status().is_some_and(JobStatus::is_finished)
    }

    /// `tfjob.kubeflow.org/mnist`, as kubectl names it.
    pub fn resource(&self) -> String {
        self.kind.qualified_name(self.name())
    }

    /// The object as `get -o yaml` prints it: as stored, without `managedFields` (as kubectl).
    pub fn shown(&self) -> DynamicObject {
        let mut object = self.object.clone();
        object.metadata.managed_fields = None;
        object
    }
}

/// The jobs a list found, and those that could not be read.
#[derive(Debug, Default)]
pub struct Listed {
    /// The jobs read.
    pub jobs: Vec<ClusterJob>,
    /// The jobs that do not fit the types, each with why.
    pub unreadable: Vec<ClusterError>,
}

impl Cluster {
    fn jobs_api(&self, kind: JobKind, namespace: Option<&str>) -> Api<DynamicObject> {
        let resource = api_resource(kind);
        match namespace {
            Some(namespace) => Api::namespaced_with(self.client.clone(), namespace, &resource),
            None => Api::all_with(self.client.clone(), &resource),
        }
    }

    /// The job of `kind` named `name` in `namespace`, or `None` when there is none.
    pub async fn get_job(
        &self,
        kind: JobKind,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ClusterJob>, ClusterError> {
        let operation = Operation::new("get", Resource::Job(kind), Some(namespace));
        match self.jobs_api(kind, Some(namespace)).get(name).await {
            Ok(object) => ClusterJob::read(kind, object).map(Some),
            Err(kube::Error::Api(status)) if is_object_not_found(&status, name) => Ok(None),
            Err(error) => Err(self.error(operation, error)),
        }
    }

    /// The jobs `target` may mean: of its kind, or of every kind whose CRD is installed.
    pub async fn find_jobs(&self, target: &Target<'_>) -> Result<Vec<ClusterJob>, ClusterError> {
        if let Some(kind) = target.kind {
            return Ok(self
                .get_job(kind, target.namespace, target.name)
                .await?
                .into_iter()
                .collect());
        }
        let answers =
            join_all(JobKind::ALL.map(|kind| self.get_job(kind, target.namespace, target.name)))
                .await;
        installed(answers).map(|found| found.into_iter().flatten().collect())
    }

    /// The error for a job `target` names that is not in its namespace, saying in which other
    /// namespaces a job of that name is (when the cluster lets us list them); `see` is the
    /// command that lists jobs, to point at.
    pub async fn not_found(&self, target: &Target<'_>, see: Option<&str>) -> anyhow::Error {
        let elsewhere: Vec<String> = match self.list_jobs(target.kind, None).await {
            Ok(listed) => listed
                .jobs
                .iter()
                .filter(|job| job.name() == target.name)
                .map(|job| job.namespace().to_owned())
                .collect(),
            Err(_) => Vec::new(),
        };
        target.not_found_elsewhere(see, &elsewhere)
    }

    /// The jobs of `kind` (every kind whose CRD is installed when `None`) in `namespace` (every
    /// namespace when `None`).
    pub async fn list_jobs(
        &self,
        kind: Option<JobKind>,
        namespace: Option<&str>,
    ) -> Result<Listed, ClusterError> {
        let kinds = match kind {
            Some(kind) => vec![kind],
            None => JobKind::ALL.to_vec(),
        };
        let answers = join_all(kinds.iter().map(|&kind| async move {
            let operation = Operation::new("list", Resource::Job(kind), namespace);
            match self
                .jobs_api(kind, namespace)
                .list(&ListParams::default())
                .await
            {
                Ok(list) => Ok((kind, list.items)),
                Err(error) => Err(self.error(operation, error)),
            }
        }))
        .await;
        let mut listed = Listed::default();
        for (kind, objects) in installed(answers)? {
            for object in objects {
                match ClusterJob::read(kind, object) {
                    Ok(job) => listed.jobs.push(job),
                    Err(error) => listed.unreadable.push(error),
                }
            }
        }
        listed.jobs.sort_by(|a, b| {
            (a.created(), a.name(), a.kind.as_str(), a.namespace()).cmp(&(
                b.created(),
                b.name(),
                b.kind.as_str(),
                b.namespace(),
            ))
        });
        Ok(listed)
    }

    /// Creates `job` (its namespace set); the job as stored.
    pub async fn create_job(&self, job: &TrainingJob) -> Result<ClusterJob, ClusterError> {
        let kind = job.kind();
        let namespace = job.namespace();
        let operation = Operation::new("create", Resource::Job(kind), Some(namespace));
        let object: DynamicObject = convert(job).map_err(|reason| ClusterError::Request {
            operation: operation.clone(),
            reason,
        })?;
        match self
            .jobs_api(kind, Some(namespace))
            .create(&PostParams::default(), &object)
            .await
        {
            Ok(created) => ClusterJob::read(kind, created),
            Err(kube::Error::Api(status)) if status.is_already_exists() => {
                Err(ClusterError::AlreadyExists {
                    resource: kind.qualified_name(job.name()),
                    namespace: namespace.to_owned(),
                    kind: kind.singular(),
                    name: job.name().to_owned(),
                })
            }
            Err(kube::Error::Api(status)) if status.is_invalid() => Err(ClusterError::Invalid {
                resource: kind.qualified_name(job.name()),
                message: status.message,
            }),
            Err(error) => Err(self.error(operation, error)),
        }
    }

    /// Applies a ConfigMap or Secret of a manifest in `namespace` (server-side apply, as
    /// `kubectl apply --server-side` does); its name as kubectl prints it (`configmap/NAME`).
    pub async fn apply_companion(
        &self,
        companion: &Companion,
        namespace: &str,
    ) -> Result<String, ClusterError> {
        match companion {
            Companion::ConfigMap(map) => {
                let name = map.metadata.name.clone().unwrap_or_default();
                self.apply(map, &name, namespace, Resource::ConfigMaps)
                    .await?;
                Ok(format!("configmap/{name}"))
            }
            Companion::Secret(secret) => {
                let name = secret.metadata.name.clone().unwrap_or_default();
                self.apply(secret, &name, namespace, Resource::Secrets)
                    .await?;
                Ok(format!("secret/{name}"))
            }
        }
    }

    async fn apply<K>(
        &self,
        object: &K,
        name: &str,
        namespace: &str,
        resource: Resource,
    ) -> Result<(), ClusterError>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + Serialize
            + std::fmt::Debug,
        K::DynamicType: Default,
    {
        let api: Api<K> = Api::namespaced(self.client.clone(), namespace);
        let mut object = object.clone();
        object.meta_mut().namespace = Some(namespace.to_owned());
        api.patch(
            name,
            &PatchParams::apply(FIELD_MANAGER),
            &Patch::Apply(&object),
        )
        .await
        .map(drop)
        .map_err(|error| self.error(Operation::new("patch", resource, Some(namespace)), error))
    }

    /// Deletes `job` as kubectl does by default: in the background (the job goes at once; the
    /// garbage collector removes its pods and services after). `false` when it was gone already.
    pub async fn delete_job(&self, job: &ClusterJob) -> Result<bool, ClusterError> {
        let operation = Operation::new("delete", Resource::Job(job.kind), Some(job.namespace()));
        match self
            .jobs_api(job.kind, Some(job.namespace()))
            .delete(job.name(), &DeleteParams::background())
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if is_object_not_found(&status, job.name()) => Ok(false),
            Err(error) => Err(self.error(operation, error)),
        }
    }

    /// Sets `spec.runPolicy.suspend` (a merge patch); the job after the change.
    pub async fn set_suspended(
        &self,
        job: &ClusterJob,
        suspend: bool,
    ) -> Result<ClusterJob, ClusterError> {
        let operation = Operation::new("patch", Resource::Job(job.kind), Some(job.namespace()));
        let patch = serde_json::json!({"spec": {"runPolicy": {"suspend": suspend}}});
        match self
            .jobs_api(job.kind, Some(job.namespace()))
            .patch(job.name(), &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(object) => ClusterJob::read(job.kind, object),
            Err(error) => Err(self.error(operation, error)),
        }
    }

    /// `job` as it changes: `Some` at each change, `None` once it is deleted (or replaced by
    /// another job of that name).
    pub fn watch_job(
        &self,
        job: &ClusterJob,
    ) -> impl Stream<Item = Result<Option<ClusterJob>, ClusterError>> + Send + use<> {
        let (kind, uid) = (job.kind, job.uid().to_owned());
        let operation = Operation::new("watch", Resource::Job(kind), Some(job.namespace()));
        let cluster = self.clone();
        watcher::watch_object(self.jobs_api(kind, Some(job.namespace())), job.name()).filter_map(
            move |event| {
                let answer = match event {
                    Ok(Some(object)) if object.metadata.uid.as_deref() == Some(uid.as_str()) => {
                        Some(ClusterJob::read(kind, object).map(Some))
                    }
                    Ok(_) => Some(Ok(None)),
                    Err(error) => cluster.watch_error(operation.clone(), error).map(Err),
                };
                std::future::ready(answer)
            },
        )
    }

    /// The error a watch stream reported, or `None` when the watch recovers by itself (`410
    /// Gone`: it lists again).
    pub(super) fn watch_error(
        &self,
        operation: Operation,
        error: watcher::Error,
    ) -> Option<ClusterError> {
        match error {
            watcher::Error::WatchError(status) if status.code == 410 => None,
            watcher::Error::WatchError(status) => {
                Some(self.error(operation, kube::Error::Api(status)))
            }
            watcher::Error::InitialListFailed(error)
            | watcher::Error::WatchStartFailed(error)
            | watcher::Error::WatchFailed(error) => Some(self.error(operation, error)),
            watcher::Error::NoResourceVersion => Some(ClusterError::Request {
                operation,
                reason: watcher::Error::NoResourceVersion.to_string(),
            }),
        }
    }
}

/// A 404 about the object `name` itself (not about its resource, which a missing CRD gives).
fn is_object_not_found(status: &kube::core::Status, name: &str) -> bool {
    status.code == 404 && status.details.as_ref().is_some_and(|d| d.name == name)
}

/// The answers of the kinds whose CRD is installed; an error when none is, or on any other error.
fn installed<T>(answers: Vec<Result<T, ClusterError>>) -> Result<Vec<T>, ClusterError> {
    let asked = answers.len();
    let mut found = Vec::new();
    let mut missing = None;
    for answer in answers {
        match answer {
            Ok(value) => found.push(value),
            Err(error) if error.is_crd_missing() => missing = Some(error),
            Err(error) => return Err(error),
        }
    }
    match missing {
        Some(error) if found.is_empty() => Err(if asked == 1 {
            error
        } else {
            ClusterError::NoCrds
        }),
        _ => Ok(found),
    }
}

/// One serializable object as another type (the typed job as a `DynamicObject`).
fn convert<T: Serialize, U: DeserializeOwned>(value: &T) -> Result<U, String> {
    serde_json::to_value(value)
        .and_then(serde_json::from_value)
        .map_err(|error| error.to_string())
}
