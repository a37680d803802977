//! The operator's flags, named and defaulted as the Kubeflow training operator's: one definition
//! for `trainctl operator` and for the image's `trainctl-operator`.

use clap::Args;
use trainctl_api::JobKind;
use trainctl_api::namespace::check_namespace;
use trainctl_engine::objects::{
    DEFAULT_MPI_KUBECTL_DELIVERY_IMAGE, DEFAULT_PYTORCH_INIT_IMAGE, DEFAULT_PYTORCH_INIT_MAX_TRIES,
};
use trainctl_logging::LogFormat;

use crate::runtime::settings::BindAddress;

/// The operator's flags.
#[derive(Debug, Args)]
pub struct OperatorArgs {
    /// A kind to run a controller for (repeatable, or comma-separated): tfjob, pytorchjob,
    /// xgboostjob, paddlejob, jaxjob, mpijob, mxjob (kubectl spellings work too) [default: every
    /// kind, MXJob only where its CRD is installed].
    #[arg(long, value_name = "KIND", value_delimiter = ',')]
    pub enable_scheme: Vec<JobKind>,

    /// A namespace to watch (repeatable, or comma-separated) [default: every namespace].
    #[arg(long, value_name = "NS", value_delimiter = ',', value_parser = namespace_name)]
    pub namespace: Vec<String>,

    /// Gang scheduling: `kubernetes` (Kubernetes' own, 1.36+ with the `GenericWorkload` and
    /// `GangScheduling` feature gates: scheduling.k8s.io/v1alpha2 Workloads and PodGroups),
    /// `volcano` (scheduling.volcano.sh PodGroups), or the name of a scheduler-plugins scheduler
    /// (scheduling.x-k8s.io PodGroups) [default: none]. The operator exits at start when the
    /// API server does not serve the PodGroups asked for.
    #[arg(long, value_name = "NAME")]
    pub gang_scheduler_name: Option<String>,

    /// Requests a second the Kubernetes client sends, on average.
    #[arg(long, value_name = "F", default_value_t = 500.0, value_parser = requests_per_second)]
    pub kube_api_qps: f64,

    /// Requests the Kubernetes client may send at once, above the average rate (the default lets
    /// the 2,000 Pods and Services of a 1,000-replica job go out without waiting for the rate).
    #[arg(long, value_name = "N", default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..))]
    pub kube_api_burst: u32,

    /// Requests the Kubernetes client has waiting for their response at once (each holds a
    /// connection: kube's client speaks HTTP/1.1); further requests wait their turn.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub kube_api_max_in_flight: u32,

    /// Reconciles of one kind that run at once.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    pub controller_threads: u32,

    /// Run the controllers only while holding the leader Lease, so that several replicas can
    /// run with one active.
    #[arg(long)]
    pub leader_elect: bool,

    /// The namespace of the leader Lease [default: `POD_NAMESPACE`, else the service account's
    /// namespace, else kubeflow].
    #[arg(long, value_name = "NS", env = "POD_NAMESPACE", value_parser = namespace_name)]
    pub leader_election_namespace: Option<String>,

    /// The name of the leader Lease.
    #[arg(long, value_name = "NAME", default_value = "trainctl-operator")]
    pub leader_election_id: String,

    /// Where to serve /metrics: HOST:PORT, :PORT for every interface, or 0 to disable.
    #[arg(long, value_name = "ADDR", default_value = ":8080")]
    pub metrics_bind_address: BindAddress,

    /// Where to serve /healthz and /readyz: HOST:PORT, :PORT for every interface, or 0 to
    /// disable.
    #[arg(long, value_name = "ADDR", default_value = ":8081")]
    pub health_probe_bind_address: BindAddress,

    /// Cluster domain appended to TF_CONFIG addresses (`<pod>.<ns>.svc.<domain>`).
    #[arg(long, value_name = "D", env = "CUSTOM_CLUSTER_DOMAIN")]
    pub cluster_domain: Option<String>,

    /// Image of PyTorch's init container, which waits for the master's address.
    #[arg(long, value_name = "IMAGE", default_value = DEFAULT_PYTORCH_INIT_IMAGE)]
    pub pytorch_init_container_image: String,

    /// Lookups PyTorch's init container makes before giving up.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_PYTORCH_INIT_MAX_TRIES)]
    pub pytorch_init_container_max_tries: u32,

    /// Image of MPI's init container delivering kubectl to the launcher.
    #[arg(long, value_name = "IMAGE", default_value = DEFAULT_MPI_KUBECTL_DELIVERY_IMAGE)]
    pub mpi_kubectl_delivery_image: String,

    /// Log format on stderr [default: text on a terminal, else json]. `RUST_LOG` filters (default
    /// info).
    #[arg(long, value_name = "FORMAT", value_enum)]
    pub log_format: Option<LogFormat>,
}

/// A request rate: a finite number above 0.
fn requests_per_second(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if rate.is_finite() && rate > 0.0 => Ok(rate),
        _ => Err("expected a number of requests a second above 0, such as 500 or 20.5".to_owned()),
    }
}

/// A namespace: a DNS-1123 label, checked before anything is contacted.
fn namespace_name(text: &str) -> Result<String, String> {
    check_namespace(text).map(|()| text.to_owned())
}
