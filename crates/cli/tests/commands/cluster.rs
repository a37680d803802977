//! Cluster mode (`--kube`) from the command line, where no cluster answers: each failure is one
//! line saying what is wrong and what to do, with a non-zero exit. (What a cluster answers is
//! tested against a mock API server in `src/commands/tests`.)

use std::path::Path;
use std::process::Command;
use trainctl_cli_harness as harness;

use trainctl_cli_harness::Run;

/// Runs `trainctl ARGS` with `KUBECONFIG` set to `kubeconfig` and a home without a kubeconfig.
fn trainctl(home: &Path, kubeconfig: &Path, args: &[&str]) -> Run {
    let output = Command::new(trainctl_cli_harness::binary())
        .args(args)
        .env("HOME", home)
        .env("KUBECONFIG", kubeconfig)
        .env_remove("TRAINCTL_KUBE")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .expect("the trainctl binary runs");
    harness::into_run(&output)
}

/// A kubeconfig whose one context, `dev`, points at `server`.
fn kubeconfig(dir: &Path, server: &str) -> std::path::PathBuf {
    let path = dir.join("config");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev
  cluster: {{server: \"{server}\"}}
contexts:
- name: dev
  context: {{cluster: dev, user: dev, namespace: ml}}
users:
- name: dev
  user: {{token: secret}}
"
        ),
    )
    .expect("write the kubeconfig");
    path
}

#[test]
fn a_kubeconfig_that_does_not_exist_is_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("nowhere");
    let run = trainctl(dir.path(), &missing, &["--kube", "get"]);
    assert_eq!(run.code, Some(1));
    assert_eq!(
        run.stderr,
        format!(
            "error: cannot read the kubeconfig {}: No such file or directory (os error 2); point \
             KUBECONFIG or --kubeconfig at kubectl's config file\n",
            missing.display()
        )
    );
    assert_eq!(run.stdout, "");
}

#[test]
fn an_unreachable_cluster_is_one_line_naming_its_url() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = kubeconfig(dir.path(), "https://127.0.0.1:1");
    for args in [
        &["--kube", "get"][..],
        &["--kube", "describe", "mnist"],
        &["get", "tfjobs", "--context", "dev"],
        &[
            "logs",
            "--kubeconfig",
            config.to_str().expect("UTF-8"),
            "tfjob",
            "mnist",
        ],
    ] {
        let run = trainctl(dir.path(), &config, args);
        assert_eq!(run.code, Some(1), "{args:?}");
        assert!(
            run.stderr
                .starts_with("error: cannot reach the cluster at https://127.0.0.1:1: "),
            "{args:?}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("Connection refused"),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {}", run.stderr);
    }
}

#[test]
fn a_context_the_kubeconfig_lacks_is_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = kubeconfig(dir.path(), "https://127.0.0.1:1");
    let run = trainctl(dir.path(), &config, &["--context", "prod", "get"]);
    assert_eq!(run.code, Some(1));
    assert_eq!(
        run.stderr,
        "error: the kubeconfig has no context \"prod\" (see `kubectl config get-contexts`)\n"
    );
}

#[test]
fn an_invalid_manifest_is_refused_before_any_cluster_is_looked_for() {
    let dir = tempfile::tempdir().expect("temp dir");
    let manifest = dir.path().join("job.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: mnist}\nspec: {}\n",
    )
    .expect("write");
    let run = trainctl(
        dir.path(),
        &dir.path().join("nowhere"),
        &["--kube", "submit", "-f", manifest.to_str().expect("UTF-8")],
    );
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.ends_with("1 error\n"), "{}", run.stderr);
    assert!(!run.stderr.contains("kubeconfig"), "{}", run.stderr);
}

#[test]
fn run_and_server_have_no_cluster_mode() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = kubeconfig(dir.path(), "https://127.0.0.1:1");
    let run = trainctl(dir.path(), &config, &["--kube", "run", "-f", "job.yaml"]);
    assert_eq!(run.code, Some(1));
    assert_eq!(
        run.stderr,
        "error: `trainctl run` runs a job on this machine and has no cluster mode; to run it on \
         the cluster: trainctl --kube submit -f FILE\n"
    );
    let run = trainctl(dir.path(), &config, &["--kube", "server"]);
    assert_eq!(run.code, Some(1));
    assert_eq!(
        run.stderr,
        "error: `trainctl server` is this machine's control plane and has no cluster mode\n"
    );
}

#[test]
fn help_teaches_cluster_mode() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = trainctl(dir.path(), &dir.path().join("nowhere"), &["--help"]);
    assert_eq!(run.code, Some(0));
    for text in [
        "Cluster mode:",
        "--kube",
        "--context <NAME>",
        "--kubeconfig <FILE>",
        "trainctl --kube submit",
    ] {
        assert!(run.stdout.contains(text), "no {text:?} in:\n{}", run.stdout);
    }
}
