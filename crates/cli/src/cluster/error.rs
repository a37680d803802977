//! What can go wrong talking to a cluster, each as one line that says what to do.

use std::fmt;
use std::path::PathBuf;

use trainctl_api::JobKind;

/// The hint after a missing CRD.
const INSTALL_CRDS: &str = "trainctl crd | kubectl apply --server-side -f -";

/// Why a command could not do its work on the cluster.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// No kubeconfig file could be found.
    #[error(
        "no kubeconfig: KUBECONFIG is not set and there is no home directory to find \
         ~/.kube/config in; pass --kubeconfig FILE"
    )]
    NoKubeconfig,
    /// The kubeconfig file could not be read.
    #[error(
        "cannot read the kubeconfig {}: {reason}; point KUBECONFIG or --kubeconfig at kubectl's \
         config file",
        .path.display()
    )]
    ReadKubeconfig {
        /// The file.
        path: PathBuf,
        /// Why (said in the message, not chained again).
        reason: std::io::Error,
    },
    /// The kubeconfig names no current context and none was given.
    #[error("the kubeconfig has no current context; name one with --context")]
    NoContext,
    /// The context asked for is not in the kubeconfig.
    #[error("the kubeconfig has no context \"{0}\" (see `kubectl config get-contexts`)")]
    UnknownContext(String),
    /// The kubeconfig is not usable (a parse error, a missing cluster, a bad certificate...).
    #[error("the kubeconfig is not usable: {0}")]
    Kubeconfig(String),
    /// No connection to the API server could be made (refused, DNS, TLS, timeout).
    #[error("cannot reach the cluster at {server}: {reason}")]
    Unreachable {
        /// The API server's URL.
        server: String,
        /// Why, from the innermost error out.
        reason: String,
    },
    /// The API server refused the credentials.
    #[error(
        "the cluster at {server} refused the kubeconfig's credentials (HTTP 401): {message}; \
         log in again or check the context's user"
    )]
    Unauthorized {
        /// The API server's URL.
        server: String,
        /// The server's message.
        message: String,
    },
    /// A job kind's CRD is not installed.
    #[error("the {0} CRD is not installed in the cluster; install it with: {INSTALL_CRDS}")]
    CrdMissing(JobKind),
    /// None of the seven kinds' CRDs is installed.
    #[error(
        "no training job CRD (TFJob, PyTorchJob, XGBoostJob, PaddleJob, JAXJob, MPIJob, MXJob) \
         is installed in the cluster; install them with: {INSTALL_CRDS}"
    )]
    NoCrds,
    /// RBAC does not allow the request.
    #[error("forbidden: this user may not {operation} (RBAC): {message}")]
    Forbidden {
        /// What was refused.
        operation: Operation,
        /// The server's message.
        message: String,
    },
    /// The object to create exists already.
    #[error(
        "{resource} already exists in namespace \"{namespace}\"; delete it first \
         (trainctl --kube delete {kind} {name} -n {namespace}) or give the job another name"
    )]
    AlreadyExists {
        /// `tfjob.kubeflow.org/mnist`.
        resource: String,
        /// Its namespace.
        namespace: String,
        /// `tfjob`.
        kind: &'static str,
        /// Its name.
        name: String,
    },
    /// The API server refused the object (`422 Invalid`: its schema or a webhook).
    #[error("the cluster refused {resource}: {message}")]
    Invalid {
        /// `tfjob.kubeflow.org/mnist`.
        resource: String,
        /// The server's message.
        message: String,
    },
    /// A job in the cluster does not fit the kubeflow.org/v1 types.
    #[error("{kind} {namespace}/{name} in the cluster cannot be read: {message}")]
    Unreadable {
        /// `tfjob`.
        kind: &'static str,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Which field does not fit, and how.
        message: String,
    },
    /// Any other answer of the API server.
    #[error("cannot {operation}: {message} (HTTP {code})")]
    Api {
        /// What was asked.
        operation: Operation,
        /// The HTTP status.
        code: u16,
        /// The server's message.
        message: String,
    },
    /// The answer could not be read, or the request not built.
    #[error("cannot {operation}: {reason}")]
    Request {
        /// What was asked.
        operation: Operation,
        /// Why.
        reason: String,
    },
}

/// One request, as an error names it: `list tfjobs.kubeflow.org in namespace "default"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    /// The RBAC verb: `get`, `list`, `watch`, `create`, `patch`, `delete`.
    pub verb: &'static str,
    /// The resource.
    pub resource: Resource,
    /// The namespace; `None` for every namespace.
    pub namespace: Option<String>,
}

impl Operation {
    /// `verb` on `resource` in `namespace` (`None`: every namespace).
    pub fn new(verb: &'static str, resource: Resource, namespace: Option<&str>) -> Operation {
        Operation {
            verb,
            resource,
            namespace: namespace.map(str::to_owned),
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.verb, self.resource)?;
        match &self.namespace {
            Some(namespace) => write!(f, " in namespace \"{namespace}\""),
            None => f.write_str(" in all namespaces"),
        }
    }
}

/// A resource trainctl reads or writes, as RBAC rules name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// A job kind's resource (`tfjobs.kubeflow.org`).
    Job(JobKind),
    /// Pods.
    Pods,
    /// Pods' logs (`pods/log`).
    PodLogs,
    /// `events.events.k8s.io`.
    Events,
    /// ConfigMaps.
    ConfigMaps,
    /// Secrets.
    Secrets,
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resource::Job(kind) => write!(f, "{}.kubeflow.org", kind.plural()),
            Resource::Pods => f.write_str("pods"),
            Resource::PodLogs => f.write_str("pods/log"),
            Resource::Events => f.write_str("events.events.k8s.io"),
            Resource::ConfigMaps => f.write_str("configmaps"),
            Resource::Secrets => f.write_str("secrets"),
        }
    }
}

impl ClusterError {
    /// The error for `error`, an answer to `operation` sent to the API server at `server`.
    pub fn of(operation: Operation, server: &str, error: kube::Error) -> ClusterError {
        match error {
            kube::Error::Api(status) => match status.code {
                401 => ClusterError::Unauthorized {
                    server: server.to_owned(),
                    message: status.message,
                },
                403 => ClusterError::Forbidden {
                    operation,
                    message: status.message,
                },
                // A 404 that names no object: the resource itself is unknown.
                404 if status.details.as_ref().is_none_or(|d| d.name.is_empty()) => {
                    match operation.resource {
                        Resource::Job(kind) => ClusterError::CrdMissing(kind),
                        _ => api(operation, &status),
                    }
                }
                _ => api(operation, &status),
            },
            kube::Error::HyperError(error) => ClusterError::Unreachable {
                server: server.to_owned(),
                reason: innermost(&error),
            },
            kube::Error::Service(error) => ClusterError::Unreachable {
                server: server.to_owned(),
                reason: innermost(error.as_ref()),
            },
            other => ClusterError::Request {
                operation,
                reason: other.to_string(),
            },
        }
    }

    /// Whether this is a missing CRD.
    pub fn is_crd_missing(&self) -> bool {
        matches!(self, ClusterError::CrdMissing(_))
    }
}

fn api(operation: Operation, status: &kube::core::Status) -> ClusterError {
    ClusterError::Api {
        operation,
        code: status.code,
        message: status.message.clone(),
    }
}

/// An error's chain of causes, outermost first, without the repetitions that wrappers add.
fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(error) = next {
        let text = error.to_string();
        if !parts.iter().any(|part| part.contains(&text)) {
            parts.push(text);
        }
        next = error.source();
    }
    parts.join(": ")
}
