//! Finding the cluster: the kubeconfig (`--kubeconfig`, `KUBECONFIG`, `~/.kube/config`) and its
//! context (`--context`, else the current one), or, inside a pod without a kubeconfig, its
//! service account.

use std::io;

use kube::Client;
use kube::config::{Config, KubeConfigOptions, Kubeconfig, KubeconfigError};

use super::{Cluster, ClusterError};
use crate::cli::ClusterArgs;

/// The variable Kubernetes sets in every pod, which says an in-cluster config may work.
const IN_POD: &str = "KUBERNETES_SERVICE_HOST";

/// Connects to the cluster that `flags` name. Nothing is sent yet: an unreachable server shows
/// at the first request.
pub async fn connect(flags: &ClusterArgs) -> Result<Cluster, ClusterError> {
    let options = KubeConfigOptions {
        context: flags.context.clone(),
        ..KubeConfigOptions::default()
    };
    let kubeconfig = match &flags.kubeconfig {
        Some(path) => Kubeconfig::read_from(path),
        None => match Kubeconfig::read() {
            Err(error)
                if flags.context.is_none()
                    && is_missing(&error)
                    && std::env::var_os(IN_POD).is_some() =>
            {
                let config = Config::incluster().map_err(|error| {
                    ClusterError::Kubeconfig(format!(
                        "no kubeconfig, and the pod's service account cannot be used: {error}"
                    ))
                })?;
                return client(config);
            }
            read => read,
        },
    }
    .map_err(kubeconfig_error)?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(kubeconfig_error)?;
    client(config)
}

fn client(config: Config) -> Result<Cluster, ClusterError> {
    let server = config
        .cluster_url
        .to_string()
        .trim_end_matches('/')
        .to_owned();
    let namespace = config.default_namespace.clone();
    let client = Client::try_from(config).map_err(|error| {
        ClusterError::Kubeconfig(format!(
            "cannot set up a client for the cluster at {server}: {error}"
        ))
    })?;
    Ok(Cluster::new(client, namespace, server))
}

/// Whether the kubeconfig is missing, rather than unreadable or wrong.
fn is_missing(error: &KubeconfigError) -> bool {
    match error {
        KubeconfigError::FindPath => true,
        KubeconfigError::ReadConfig(error, _) => error.kind() == io::ErrorKind::NotFound,
        _ => false,
    }
}

fn kubeconfig_error(error: KubeconfigError) -> ClusterError {
    match error {
        KubeconfigError::FindPath => ClusterError::NoKubeconfig,
        KubeconfigError::ReadConfig(reason, path) => ClusterError::ReadKubeconfig { path, reason },
        KubeconfigError::CurrentContextNotSet => ClusterError::NoContext,
        KubeconfigError::LoadContext(context) => ClusterError::UnknownContext(context),
        other => ClusterError::Kubeconfig(other.to_string()),
    }
}
