//! `trainctl-operator`, the binary of the operator's image, as a user meets it without a
//! cluster: its help, its refusals, and its message when there is no cluster to connect to.
//! (`trainctl operator` takes the same flags: the CLI's tests check that it passes them on.) The
//! operator itself is tested against a mock API in this crate's unit tests.

use std::process::Command;

/// What a run printed, and how it ended.
struct Run {
    /// Exit code (`None` if a signal ended it).
    code: Option<i32>,
    /// Standard output.
    stdout: String,
    /// Standard error.
    stderr: String,
}

/// Runs `trainctl-operator ARGS` with a home and environment that name no cluster.
fn operator(args: &[&str]) -> Run {
    let home = tempfile::tempdir().expect("a temp dir");
    let output = Command::new(env!("CARGO_BIN_EXE_trainctl-operator"))
        .args(args)
        .env("HOME", home.path())
        .env("RUST_LOG", "off")
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .env_remove("POD_NAMESPACE")
        .env_remove("CUSTOM_CLUSTER_DOMAIN")
        .output()
        .expect("the trainctl-operator binary runs");
    let run = Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    run
}

#[test]
fn help_documents_every_flag_with_its_default() {
    let run = operator(&["--help"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    for expected in [
        "--enable-scheme <KIND>",
        "[default: every",
        "kind, MXJob only where its CRD is installed]",
        "--namespace <NS>",
        "[default: every namespace]",
        "--gang-scheduler-name <NAME>",
        "--kube-api-qps <F>",
        "[default: 500]",
        "--kube-api-burst <N>",
        "[default: 2000]",
        "--kube-api-max-in-flight <N>",
        "[default: 64]",
        "--controller-threads <N>",
        "[default: 16]",
        "--leader-elect",
        "--leader-election-namespace <NS>",
        "[env: POD_NAMESPACE=]",
        "--leader-election-id <NAME>",
        "[default: trainctl-operator]",
        "--metrics-bind-address <ADDR>",
        "[default: :8080]",
        "--health-probe-bind-address <ADDR>",
        "[default: :8081]",
        "--cluster-domain <D>",
        "[env: CUSTOM_CLUSTER_DOMAIN=]",
        "--pytorch-init-container-image <IMAGE>",
        "[default: alpine:3.10]",
        "--pytorch-init-container-max-tries <N>",
        "--mpi-kubectl-delivery-image <IMAGE>",
        "--kubeconfig <FILE>",
        "--context <NAME>",
        "--log-format <FORMAT>",
        "docs/operator.md",
        "trainctl-operator --leader-elect --gang-scheduler-name volcano",
    ] {
        assert!(
            run.stdout.contains(expected),
            "{expected} missing from:\n{}",
            run.stdout
        );
    }
}

#[test]
fn an_invalid_flag_value_exits_2_saying_what_is_expected() {
    let run = operator(&["--controller-threads", "none"]);
    assert_eq!(run.code, Some(2));
    assert_eq!(
        run.stderr.lines().next(),
        Some(
            "error: invalid value 'none' for '--controller-threads <N>': invalid digit found in string"
        )
    );
    let run = operator(&["--enable-scheme", "deployment"]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr.starts_with(
            "error: invalid value 'deployment' for '--enable-scheme <KIND>': unknown job kind `deployment`: expected one of TFJob, PyTorchJob"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn without_a_cluster_it_exits_1_naming_the_ways_to_give_one() {
    let run = operator(&[
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "0",
    ]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.starts_with(
            "error: no cluster to connect to: give a kubeconfig with --kubeconfig FILE or the \
             KUBECONFIG variable (and --context NAME to pick one of its contexts), or run the \
             operator in a pod with a service account (failed to infer config: "
        ),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

#[test]
fn a_missing_kubeconfig_file_is_named() {
    let run = operator(&["--kubeconfig", "/nonexistent/kubeconfig"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.starts_with(
            "error: cannot use the kubeconfig /nonexistent/kubeconfig: failed to read kubeconfig"
        ),
        "{}",
        run.stderr
    );
}
