//! `trainctl operator`: the Kubernetes operator, until SIGTERM or SIGINT.

use std::collections::BTreeSet;
use std::io::IsTerminal as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use trainctl_api::JobKind;
use trainctl_engine::{Addressing, BuildOptions};
use trainctl_operator::Settings;
use trainctl_operator::connect::{self, ClusterAccess};
use trainctl_operator::leader::{self, LeaseSettings};
use trainctl_operator::manager::{self, Observability};
use trainctl_operator::rate_limit::RateLimits;
use trainctl_operator::shutdown::StopRequests;

use crate::cli::{ClusterArgs, LogFormat, OperatorArgs};
use crate::telemetry;

/// Where a pod finds its service account's namespace.
const SERVICE_ACCOUNT_NAMESPACE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// The Lease namespace when neither the flag, `POD_NAMESPACE` nor a service account names one.
const DEFAULT_LEASE_NAMESPACE: &str = "kubeflow";

/// Runs the operator until it is stopped.
pub fn run(args: &OperatorArgs, cluster: &ClusterArgs) -> anyhow::Result<ExitCode> {
    telemetry::init(args.log_format.unwrap_or_else(|| {
        if std::io::stderr().is_terminal() {
            LogFormat::Text
        } else {
            LogFormat::Json
        }
    }));
    let settings = settings(
        args,
        leader::identity(),
        service_account_namespace(Path::new(SERVICE_ACCOUNT_NAMESPACE)),
    );
    let access = ClusterAccess {
        kubeconfig: cluster.kubeconfig.clone(),
        context: cluster.context.clone(),
    };
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?
        .block_on(async {
            let config = connect::config(&access).await?;
            let clients = connect::clients(config, settings.api_limits, connect::REQUEST_TIMEOUT)?;
            let stop = StopRequests::from_signals().context("cannot watch for signals")?;
            manager::run(settings, clients, stop, Observability::default(), |_| {}).await?;
            anyhow::Ok(())
        })?;
    Ok(ExitCode::SUCCESS)
}

/// The namespace in the service account's namespace file, if this is a pod.
fn service_account_namespace(file: &Path) -> Option<String> {
    std::fs::read_to_string(file)
        .ok()
        .map(|text| text.trim().to_owned())
        .filter(|namespace| !namespace.is_empty())
}

/// What the flags decide; `identity` holds the lease, `service_account_namespace` is the
/// pod's namespace when `--leader-election-namespace` and `POD_NAMESPACE` name none.
fn settings(
    args: &OperatorArgs,
    identity: String,
    service_account_namespace: Option<String>,
) -> Settings {
    let kinds = JobKind::ALL
        .into_iter()
        .filter(|kind| args.enable_scheme.is_empty() || args.enable_scheme.contains(kind))
        .collect();
    let namespaces: BTreeSet<String> = args.namespace.iter().cloned().collect();
    let non_empty = |value: &Option<String>| value.clone().filter(|value| !value.is_empty());
    Settings {
        kinds,
        namespaces: namespaces.into_iter().collect(),
        build: BuildOptions {
            addressing: Addressing::Cluster {
                cluster_domain: non_empty(&args.cluster_domain),
            },
            gang_scheduler: non_empty(&args.gang_scheduler_name),
            pytorch_init_image: args.pytorch_init_container_image.clone(),
            pytorch_init_max_tries: args.pytorch_init_container_max_tries,
            mpi_kubectl_delivery_image: args.mpi_kubectl_delivery_image.clone(),
        },
        controller_threads: args.controller_threads as usize,
        api_limits: RateLimits {
            qps: args.kube_api_qps,
            burst: args.kube_api_burst,
            max_in_flight: args.kube_api_max_in_flight as usize,
        },
        leader_election: args.leader_elect.then(|| {
            let namespace = args
                .leader_election_namespace
                .clone()
                .or(service_account_namespace)
                .unwrap_or_else(|| DEFAULT_LEASE_NAMESPACE.to_owned());
            LeaseSettings::new(namespace, args.leader_election_id.clone(), identity)
        }),
        metrics_address: args.metrics_bind_address,
        health_address: args.health_probe_bind_address,
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;
    use trainctl_operator::settings::BindAddress;

    use super::*;
    use crate::cli::{Cli, Command};

    fn parse(flags: &[&str]) -> Result<OperatorArgs, clap::Error> {
        let cli = Cli::try_parse_from(["trainctl", "operator"].iter().chain(flags))?;
        match cli.command {
            Command::Operator(args) => Ok(args),
            other => panic!("parsed as {other:?}"),
        }
    }

    fn settings_of(flags: &[&str]) -> Settings {
        settings(&parse(flags).expect("valid flags"), "me_1".to_owned(), None)
    }

    /// A variable of the test's own environment that clap reads (`env = ...`).
    fn from_env(variable: &str) -> Option<String> {
        std::env::var(variable)
            .ok()
            .filter(|value| !value.is_empty())
    }

    #[test]
    fn without_flags_every_kind_and_namespace_and_the_documented_defaults() {
        let settings = settings_of(&[]);
        assert_eq!(
            settings,
            Settings {
                kinds: JobKind::ALL.to_vec(),
                namespaces: vec![],
                build: BuildOptions {
                    addressing: Addressing::Cluster {
                        cluster_domain: from_env("CUSTOM_CLUSTER_DOMAIN"),
                    },
                    gang_scheduler: None,
                    ..BuildOptions::default()
                },
                controller_threads: 16,
                api_limits: RateLimits {
                    qps: 500.0,
                    burst: 2000,
                    max_in_flight: 64,
                },
                leader_election: None,
                metrics_address: BindAddress::Listen("0.0.0.0:8080".parse().expect("valid")),
                health_address: BindAddress::Listen("0.0.0.0:8081".parse().expect("valid")),
            }
        );
    }

    #[test]
    fn every_flag_lands_in_the_settings() {
        let settings = settings_of(&[
            "--enable-scheme",
            "PyTorchJob",
            "--enable-scheme=tfjobs,mpijob",
            "--namespace",
            "team-b",
            "--namespace=team-a,team-b",
            "--gang-scheduler-name",
            "volcano",
            "--kube-api-qps",
            "20.5",
            "--kube-api-burst",
            "40",
            "--kube-api-max-in-flight",
            "8",
            "--controller-threads",
            "4",
            "--leader-elect",
            "--leader-election-namespace",
            "ops",
            "--leader-election-id",
            "my-lease",
            "--metrics-bind-address",
            "127.0.0.1:9090",
            "--health-probe-bind-address",
            "0",
            "--cluster-domain",
            "example.org",
            "--pytorch-init-container-image",
            "busybox:1.36",
            "--pytorch-init-container-max-tries",
            "7",
            "--mpi-kubectl-delivery-image",
            "delivery:1",
        ]);
        assert_eq!(
            settings,
            Settings {
                kinds: vec![JobKind::TFJob, JobKind::PyTorchJob, JobKind::MPIJob],
                namespaces: vec!["team-a".to_owned(), "team-b".to_owned()],
                build: BuildOptions {
                    addressing: Addressing::Cluster {
                        cluster_domain: Some("example.org".to_owned()),
                    },
                    gang_scheduler: Some("volcano".to_owned()),
                    pytorch_init_image: "busybox:1.36".to_owned(),
                    pytorch_init_max_tries: 7,
                    mpi_kubectl_delivery_image: "delivery:1".to_owned(),
                },
                controller_threads: 4,
                api_limits: RateLimits {
                    qps: 20.5,
                    burst: 40,
                    max_in_flight: 8,
                },
                leader_election: Some(LeaseSettings::new(
                    "ops".to_owned(),
                    "my-lease".to_owned(),
                    "me_1".to_owned()
                )),
                metrics_address: BindAddress::Listen("127.0.0.1:9090".parse().expect("valid")),
                health_address: BindAddress::Disabled,
            }
        );
    }

    #[test]
    fn the_lease_namespace_falls_back_to_pod_namespace_then_the_service_account_then_kubeflow() {
        let args = parse(&["--leader-elect"]).expect("valid flags");
        let lease = |service_account: Option<&str>| {
            settings(&args, "me_1".to_owned(), service_account.map(str::to_owned))
                .leader_election
                .expect("elected")
                .namespace
        };
        if let Some(pod_namespace) = from_env("POD_NAMESPACE") {
            assert_eq!(lease(Some("from-file")), pod_namespace);
        } else {
            assert_eq!(lease(Some("from-file")), "from-file");
            assert_eq!(lease(None), "kubeflow");
        }
        let dir = tempfile::tempdir().expect("a temp dir");
        let file = dir.path().join("namespace");
        std::fs::write(&file, "training-system\n").expect("writes");
        assert_eq!(
            service_account_namespace(&file),
            Some("training-system".to_owned())
        );
        assert_eq!(service_account_namespace(&dir.path().join("missing")), None);
    }

    #[test]
    fn an_empty_gang_scheduler_or_cluster_domain_means_none() {
        let settings = settings_of(&["--gang-scheduler-name=", "--cluster-domain="]);
        assert_eq!(settings.build.gang_scheduler, None);
        assert_eq!(
            settings.build.addressing,
            Addressing::Cluster {
                cluster_domain: None
            }
        );
    }

    #[test]
    fn invalid_values_are_refused_with_what_is_expected() {
        for (flags, expected) in [
            (
                &["--enable-scheme", "job"][..],
                "error: invalid value 'job' for '--enable-scheme <KIND>': unknown job kind `job`: \
                 expected one of TFJob, PyTorchJob, XGBoostJob, PaddleJob, JAXJob, MPIJob (kubectl \
                 spellings such as `tfjob` and `tfjobs` work too)",
            ),
            (
                &["--kube-api-qps", "0"],
                "error: invalid value '0' for '--kube-api-qps <F>': expected a number of requests \
                 a second above 0, such as 500 or 20.5",
            ),
            (
                &["--kube-api-qps", "inf"],
                "error: invalid value 'inf' for '--kube-api-qps <F>': expected a number of \
                 requests a second above 0, such as 500 or 20.5",
            ),
            (
                &["--kube-api-burst", "0"],
                "error: invalid value '0' for '--kube-api-burst <N>': 0 is not in 1..=4294967295",
            ),
            (
                &["--controller-threads", "0"],
                "error: invalid value '0' for '--controller-threads <N>': 0 is not in \
                 1..=4294967295",
            ),
            (
                &["--namespace", "Team_A"],
                "error: invalid value 'Team_A' for '--namespace <NS>': `Team_A` is not a valid \
                 namespace: `T` is not allowed; a namespace is a DNS-1123 label: lowercase \
                 letters, digits and `-`, starting and ending with a letter or digit, at most 63 \
                 characters",
            ),
            (
                &["--metrics-bind-address", "8080"],
                "error: invalid value '8080' for '--metrics-bind-address <ADDR>': `8080` is not a \
                 listen address: expected HOST:PORT with an IP address (`127.0.0.1:8080`, \
                 `[::]:8080`), `:PORT` for every interface, or `0` to disable",
            ),
            (
                &["--log-format", "xml"],
                "error: invalid value 'xml' for '--log-format <FORMAT>'",
            ),
        ] {
            let error = parse(flags).expect_err("refused");
            assert_eq!(error.exit_code(), 2, "{flags:?}");
            let text = error.to_string();
            assert_eq!(text.lines().next(), Some(expected), "{flags:?}");
        }
    }
}
