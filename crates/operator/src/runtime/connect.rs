//! Connecting to the cluster the way kubectl does: a kubeconfig (`--kubeconfig`, else
//! `KUBECONFIG`, else `~/.kube/config`; its current context or `--context`), else the pod's
//! service account (in-cluster). The controllers' requests then go through the client-side rate
//! limit and a bound on the requests in flight; leader election has a client of its own, which
//! they cannot hold up. Every request has a timeout.
//!
//! kube's `Config` sets no read timeout (it would cut exec and attach sessions), so a call that
//! the API server (or a half-open connection) never answers hangs for ever. For a controller
//! that is worse than an error: kube-runtime reconciles one job at a time, so the job whose
//! reconcile hangs is never reconciled again. Here every call fails after a timeout if its
//! response has not begun, and the controller retries the job like after any error. The
//! timeout runs until the response begins, not until it ends: a watch's response begins at
//! once and its stream then runs on (kube's watcher has its own idle timeout for streams). It
//! starts when the rate limit lets the call go, so waiting for the limit never times a call out.

use std::path::PathBuf;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::{Client, Config};
use tower::limit::ConcurrencyLimitLayer;
use tower::timeout::TimeoutLayer;

use super::rate_limit::{RateLimitLayer, RateLimits};

/// How long a call may wait for its response to begin: far longer than a healthy API server
/// takes (milliseconds; it gives up on its own requests after 60 s), short enough that a lost
/// call holds its job up for half a minute, not for ever.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the cluster's address and credentials come from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterAccess {
    /// A kubeconfig file to use instead of `KUBECONFIG` and `~/.kube/config`.
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use instead of its current one.
    pub context: Option<String>,
}

/// Why no client could be made. kube's errors already write their causes into their messages,
/// so they are shown, not chained as sources (which would print each cause twice).
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// Neither a kubeconfig nor a service account was found.
    #[error(
        "no cluster to connect to: give a kubeconfig with --kubeconfig FILE or the KUBECONFIG \
         variable (and --context NAME to pick one of its contexts), or run the operator in a pod \
         with a service account ({0})"
    )]
    NoCluster(kube::config::InferConfigError),
    /// The kubeconfig named by `--kubeconfig` cannot be used.
    #[error("cannot use the kubeconfig {path}: {error}")]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        error: KubeconfigError,
    },
    /// The default kubeconfig cannot be used with the given context.
    #[error("cannot use the context {context} of the kubeconfig: {error}")]
    Context {
        /// The context asked for.
        context: String,
        /// What is wrong.
        error: KubeconfigError,
    },
    /// The client cannot be built from the configuration (TLS, proxy).
    #[error("cannot build the Kubernetes client: {0}")]
    Client(kube::Error),
}

/// The client configuration `access` leads to.
pub async fn config(access: &ClusterAccess) -> Result<Config, ConnectError> {
    let options = KubeConfigOptions {
        context: access.context.clone(),
        ..KubeConfigOptions::default()
    };
    match (&access.kubeconfig, &access.context) {
        (Some(path), _) => {
            let error = |error| ConnectError::Kubeconfig {
                path: path.clone(),
                error,
            };
            let kubeconfig = Kubeconfig::read_from(path).map_err(error)?;
            Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(error)
        }
        (None, Some(context)) => {
            Config::from_kubeconfig(&options)
                .await
                .map_err(|error| ConnectError::Context {
                    context: context.clone(),
                    error,
                })
        }
        (None, None) => Config::infer().await.map_err(ConnectError::NoCluster),
    }
}

/// The operator's clients.
#[derive(Clone)]
pub struct Clients {
    /// The controllers' client: rate-limited and bounded in flight ([`client`]).
    pub(crate) controllers: Client,
    /// Leader election's client, with a timeout only: renewing the Lease (every 2 s, within a
    /// 10 s deadline) must not queue behind the controllers' calls when 64 of them hang (a
    /// half-open connection, a slow admission webhook), or the leader would lose its lease for
    /// being busy. controller-runtime also gives leader election a client of its own.
    pub(crate) leader_election: Client,
}

impl From<Client> for Clients {
    /// One client for everything (tests).
    fn from(client: Client) -> Clients {
        Clients {
            controllers: client.clone(),
            leader_election: client,
        }
    }
}

/// The operator's [`Clients`] for `config`: the controllers' bounded by `limits`, both failing
/// a call after `timeout` without a response.
pub fn clients(
    config: Config,
    limits: RateLimits,
    timeout: Duration,
) -> Result<Clients, ConnectError> {
    let leader_election = kube::client::ClientBuilder::try_from(config.clone())
        .map_err(ConnectError::Client)?
        .with_layer(&TimeoutLayer::new(timeout))
        .build();
    Ok(Clients {
        controllers: client(config, limits, timeout)?,
        leader_election,
    })
}

/// A client for `config` whose requests are rate-limited and bounded in number by `limits`,
/// and fail after `timeout` without a response.
///
/// A request is in flight until its response begins: a watch's stream then runs on without
/// counting, and a list's body is read right after.
pub fn client(
    config: Config,
    limits: RateLimits,
    timeout: Duration,
) -> Result<Client, ConnectError> {
    // The layer added last is the outermost: a request waits for a token and then for a place
    // in flight, and only then does its timeout start.
    Ok(kube::client::ClientBuilder::try_from(config)
        .map_err(ConnectError::Client)?
        .with_layer(&TimeoutLayer::new(timeout))
        .with_layer(&ConcurrencyLimitLayer::new(limits.max_in_flight.max(1)))
        .with_layer(&RateLimitLayer::new(limits))
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_kubeconfig_file_is_used_with_its_context() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("config");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\ncurrent-context: a\n\
             clusters:\n- name: a\n  cluster: {server: 'https://a.example:6443'}\n\
             - name: b\n  cluster: {server: 'https://b.example:6443'}\n\
             contexts:\n- name: a\n  context: {cluster: a, user: u, namespace: team-a}\n\
             - name: b\n  context: {cluster: b, user: u}\n\
             users:\n- name: u\n  user: {token: secret}\n",
        )
        .expect("writes");
        let mut access = ClusterAccess {
            kubeconfig: Some(path.clone()),
            context: None,
        };
        let config = config(&access).await.expect("a config");
        assert_eq!(config.cluster_url.to_string(), "https://a.example:6443/");
        assert_eq!(config.default_namespace, "team-a");
        access.context = Some("b".to_owned());
        let config = super::config(&access).await.expect("a config");
        assert_eq!(config.cluster_url.to_string(), "https://b.example:6443/");
        assert!(client(config, RateLimits::default(), REQUEST_TIMEOUT).is_ok());
    }

    #[tokio::test]
    async fn leader_election_does_not_wait_behind_the_controllers_calls_in_flight() {
        use k8s_openapi::api::coordination::v1::Lease;
        use k8s_openapi::api::core::v1::Pod;
        use kube::Api;
        use trainctl_mock_apiserver::{Fault, Method, MockApiServer, Settings, Verb};

        let server = MockApiServer::start(Settings::default())
            .await
            .expect("a free port");
        let held = "/api/v1/namespaces/ml/pods/held";
        server.inject(Method::GET, held, 1, Fault::Hold(Duration::from_secs(10)));
        let limits = RateLimits {
            max_in_flight: 1,
            ..RateLimits::default()
        };
        let config = Config::new(server.url().parse().expect("a URL"));
        let clients = clients(config, limits, REQUEST_TIMEOUT).expect("clients");
        let pods: Api<Pod> = Api::namespaced(clients.controllers.clone(), "ml");
        let hanging = tokio::spawn(async move { pods.get_opt("held").await });
        // The server marks activity when a call ends, and this one does not end: poll.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while server.calls(Verb::Get, held) == 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the held call reaches the server"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }

        let pods: Api<Pod> = Api::namespaced(clients.controllers, "ml");
        let queued = tokio::time::timeout(Duration::from_millis(300), pods.get_opt("other")).await;
        assert!(queued.is_err(), "the controllers' next call waits its turn");
        let leases: Api<Lease> = Api::namespaced(clients.leader_election, "ml");
        let renewal =
            tokio::time::timeout(Duration::from_secs(5), leases.get_opt("trainctl-operator")).await;
        assert!(matches!(renewal, Ok(Ok(None))), "{renewal:?}");
        hanging.abort();
    }

    #[tokio::test]
    async fn a_missing_kubeconfig_file_is_named() {
        let access = ClusterAccess {
            kubeconfig: Some(PathBuf::from("/nonexistent/kubeconfig")),
            context: None,
        };
        let error = config(&access).await.expect_err("no such file");
        assert_eq!(
            error.to_string(),
            "cannot use the kubeconfig /nonexistent/kubeconfig: failed to read kubeconfig from \
             '\"/nonexistent/kubeconfig\"': No such file or directory (os error 2)"
        );
    }
}
