//! What can go wrong in a reconcile: each variant names the operation that failed and the object
//! it was about, and has a stable label for metrics.

/// A failed step of a reconcile. The controller retries the job after any of them.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Listing the job's pods failed.
    #[error("listing the pods of {job}: {source}")]
    ListPods {
        /// `namespace/name` of the job.
        job: String,
        /// What the API server said.
        #[source]
        source: kube::Error,
    },
    /// Listing the job's services failed.
    #[error("listing the services of {job}: {source}")]
    ListServices {
        /// `namespace/name` of the job.
        job: String,
        /// What the API server said.
        #[source]
        source: kube::Error,
    },
    /// Reading the job's PodGroup failed.
    #[error("reading the PodGroup of {job}: {source}")]
    GetPodGroup {
        /// `namespace/name` of the job.
        job: String,
        /// What the API server said.
        #[source]
        source: kube::Error,
    },
    /// Applying (creating) an object of the job failed.
    #[error("applying {kind} {name}: {source}")]
    Apply {
        /// The object's kind (`Pod`, `Service`, `ConfigMap`, ...).
        kind: &'static str,
        /// The object's name.
        name: String,
        /// What the API server said.
        #[source]
        source: kube::Error,
    },
    /// Deleting a pod, service or PodGroup of the job failed.
    #[error("deleting {kind} {name}: {source}")]
    Delete {
        /// `Pod`, `Service` or `PodGroup`.
        kind: &'static str,
        /// The object's name.
        name: String,
        /// What the API server said.
        #[source]
        source: kube::Error,
    },
    /// Writing the job's status subresource failed.
    #[error("patching the status of {job}: {source}")]
    PatchStatus {
        /// `namespace/name` of the job.
        job: String,
        /// What the API server said.
        #[source]
        source: kube::Error,
    },
    /// Writing the job's restart ledger annotation failed.
    #[error("annotating {job} with its retired restarts: {source}")]
    PatchLedger {
        /// `namespace/name` of the job.
        job: String,
        /// What the API server said.
        #[source]
        source: kube::Error,
    },
    /// Deleting the job after its TTL failed.
    #[error("deleting {job} after its TTL: {source}")]
    DeleteJob {
        /// `namespace/name` of the job.
        job: String,
        /// What the API server said.
        #[source]
        source: kube::Error,
    },
}

impl Error {
    /// A stable, lowercase label for metrics and logs (`apply`, `patch_status`, ...).
    #[must_use]
    pub(crate) fn metric_label(&self) -> &'static str {
        match self {
            Error::ListPods { .. } => "list_pods",
            Error::ListServices { .. } => "list_services",
            Error::GetPodGroup { .. } => "get_pod_group",
            Error::Apply { .. } => "apply",
            Error::Delete { .. } => "delete",
            Error::PatchStatus { .. } => "patch_status",
            Error::PatchLedger { .. } => "patch_ledger",
            Error::DeleteJob { .. } => "delete_job",
        }
    }
}
