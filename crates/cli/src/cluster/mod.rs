//! Cluster mode (`trainctl --kube`): the job commands on a Kubernetes cluster, through the
//! kubeconfig. This module only translates: it reads jobs, pods, events and logs from the API
//! server into the rows of `view` (the same tables and prefixes as on this machine), and sends
//! the writes. What it reads prints the same as on this machine; whole command lines against a
//! mock API server are tested where the job commands are.

mod connect;
pub mod dashboard;
mod error;
mod events;
mod jobs;
mod kueue;
mod logs;
mod pods;

use kube::Client;

pub use connect::connect;
pub use error::{ClusterError, Operation, Resource};
pub use jobs::ClusterJob;
pub use logs::LogRequest;
pub use pods::{controller_uid, pods_reason, replica_rows, restarts_by_job, slot_of};

/// A connection to a cluster's API server.
#[derive(Clone)]
pub struct Cluster {
    client: Client,
    /// The namespace of a command that names none: the context's, else `default`.
    pub namespace: String,
    /// The API server's URL, for messages.
    server: String,
}

impl Cluster {
    /// A cluster reached through `client`; `namespace` is the default namespace, `server` the
    /// URL that messages name.
    pub fn new(client: Client, namespace: String, server: String) -> Cluster {
        Cluster {
            client,
            namespace,
            server,
        }
    }

    /// The error for `error`, the answer to `operation`.
    fn error(&self, operation: Operation, error: kube::Error) -> ClusterError {
        ClusterError::of(operation, &self.server, error)
    }
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("server", &self.server)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}
