//! The flags as parsed, and the settings they decide.

use clap::Parser;
use trainctl_api::JobKind;
use trainctl_engine::{Addressing, BuildOptions};

use super::{OperatorArgs, service_account_namespace, settings};
use crate::runtime::leader::LeaseSettings;
use crate::runtime::rate_limit::RateLimits;
use crate::runtime::settings::{BindAddress, Settings};

/// A command of the operator's flags alone.
#[derive(Debug, Parser)]
struct Operator {
    #[command(flatten)]
    args: OperatorArgs,
}

fn parse(flags: &[&str]) -> Result<OperatorArgs, clap::Error> {
    Operator::try_parse_from(["trainctl-operator"].iter().chain(flags)).map(|parsed| parsed.args)
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
            kinds: JobKind::ALL
                .into_iter()
                .filter(|kind| *kind != JobKind::MXJob)
                .collect(),
            kinds_where_installed: vec![JobKind::MXJob],
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
fn an_mxjob_named_by_enable_scheme_is_watched_whether_or_not_installed() {
    let settings = settings_of(&["--enable-scheme", "mxjobs,tfjob"]);
    assert_eq!(settings.kinds, [JobKind::TFJob, JobKind::MXJob]);
    assert_eq!(settings.kinds_where_installed, []);
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
            kinds_where_installed: vec![],
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
             expected one of TFJob, PyTorchJob, XGBoostJob, PaddleJob, JAXJob, MPIJob, MXJob \
             (kubectl spellings such as `tfjob` and `tfjobs` work too)",
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
