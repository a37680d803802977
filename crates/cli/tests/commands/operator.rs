//! `trainctl operator` runs the operator crate's command, which the operator's own tests check
//! through its image's binary `trainctl-operator`: here, that trainctl passes its global
//! cluster flags on and teaches its own name.

use std::process::Command;

use trainctl_cli_harness::{self as harness, Run};

/// Runs `trainctl ARGS` with a home and environment that name no cluster.
fn trainctl(args: &[&str]) -> Run {
    let home = tempfile::tempdir().expect("a temp dir");
    let output = Command::new(harness::binary())
        .args(args)
        .env("HOME", home.path())
        .env("RUST_LOG", "off")
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .output()
        .expect("the trainctl binary runs");
    harness::into_run(&output)
}

#[test]
fn help_shows_the_operators_flags_and_examples_under_trainctls_name() {
    let run = trainctl(&["operator", "--help"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    for expected in [
        "--gang-scheduler-name <NAME>",
        "--kubeconfig <FILE>",
        "trainctl operator --leader-elect --gang-scheduler-name volcano",
    ] {
        assert!(run.stdout.contains(expected), "{expected}:\n{}", run.stdout);
    }
}

#[test]
fn the_global_kubeconfig_and_context_flags_reach_the_operator() {
    for args in [
        &["operator", "--kubeconfig", "/nonexistent/kubeconfig"][..],
        &["--kubeconfig", "/nonexistent/kubeconfig", "operator"],
    ] {
        let run = trainctl(args);
        assert_eq!(run.code, Some(1), "{}", run.stderr);
        assert!(
            run.stderr.starts_with(
                "error: cannot use the kubeconfig /nonexistent/kubeconfig: failed to read kubeconfig"
            ),
            "{args:?}: {}",
            run.stderr
        );
    }
    let dir = tempfile::tempdir().expect("a temp dir");
    let kubeconfig = dir.path().join("config");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n",
    )
    .expect("writes");
    let path = kubeconfig.to_str().expect("UTF-8");
    let run = trainctl(&["operator", "--kubeconfig", path, "--context", "elsewhere"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with(&format!("error: cannot use the kubeconfig {path}: "))
            && run.stderr.contains("elsewhere"),
        "{}",
        run.stderr
    );
}
