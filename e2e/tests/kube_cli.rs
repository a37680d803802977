//! `trainctl --kube` against the real control plane: submit, get, describe, logs, wait,
//! suspend, resume and delete, through the admin kubeconfig as a user's kubectl would, with the
//! tables, prefixes and exit codes of this machine's commands. Run by `scripts/e2e`.

use std::process::{Command, Output};

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::wait::await_condition;
use trainctl_e2e::{IMAGE, in_namespace, within};

/// Runs `trainctl --kube ARGS -n NAMESPACE` (the binary `scripts/e2e` built).
fn trainctl(namespace: &str, args: &[&str]) -> Output {
    let binary = std::env::var("TRAINCTL_E2E_TRAINCTL")
        .expect("TRAINCTL_E2E_TRAINCTL: the trainctl binary (scripts/e2e sets it)");
    Command::new(binary)
        .arg("--kube")
        .args(args)
        .args(["-n", namespace])
        .env("NO_COLOR", "1")
        .output()
        .expect("trainctl runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Runs `trainctl --kube ARGS` and asserts it exits 0; its standard output.
fn ok(namespace: &str, args: &[&str]) -> String {
    let output = trainctl(namespace, args);
    assert!(
        output.status.success(),
        "trainctl --kube {}: {}\n{}{}",
        args.join(" "),
        output.status,
        stdout(&output),
        String::from_utf8_lossy(&output.stderr)
    );
    stdout(&output)
}

/// `trainctl --kube wait cli --for condition=CONDITION`, within a minute.
fn wait_for(namespace: &str, condition: &str) {
    let condition = format!("condition={condition}");
    ok(
        namespace,
        &["wait", "cli", "--for", &condition, "--timeout", "60s"],
    );
}

/// The cells of the table row whose first cell is `name`.
fn row(table: &str, name: &str) -> Vec<String> {
    table
        .lines()
        .map(|line| {
            line.split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .find(|cells| cells.first().map(String::as_str) == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in\n{table}"))
}

/// A job's whole life through `trainctl --kube`: submitted, running with its pods, described,
/// its logs prefixed by replica, suspended (its pods go) and resumed, deleted, then not found.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn trainctl_kube_drives_a_job_through_its_life() {
    in_namespace("kube-cli", |client, namespace| async move {
        let manifest = std::env::temp_dir().join(format!("{namespace}.yaml"));
        std::fs::write(
            &manifest,
            format!(
                "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {{name: cli}}\nspec:\n  \
                 tfReplicaSpecs:\n    Worker:\n      replicas: 2\n      template: {{spec: \
                 {{containers: [{{name: tensorflow, image: {IMAGE}}}]}}}}\n"
            ),
        )
        .expect("a manifest");
        let manifest = manifest.to_str().expect("a UTF-8 path").to_owned();

        let submitted = ok(&namespace, &["submit", "-f", &manifest]);
        assert!(
            submitted.starts_with("tfjob.kubeflow.org/cli submitted ("),
            "{submitted}"
        );
        wait_for(&namespace, "Running");

        let table = ok(&namespace, &["get"]);
        let header: Vec<&str> = table
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        assert_eq!(header[..3], ["NAME", "STATE", "AGE"], "{table}");
        assert_eq!(row(&table, "tfjob/cli")[1], "Running", "{table}");

        let described = ok(&namespace, &["describe", "cli"]);
        for expected in ["worker-0", "worker-1", "Running"] {
            assert!(
                described.contains(expected),
                "no {expected} in\n{described}"
            );
        }

        let logs = ok(&namespace, &["logs", "cli"]);
        for replica in ["worker-0", "worker-1"] {
            for line in ["trainctl e2e log line 1", "trainctl e2e log line 2"] {
                let prefixed = format!("{replica} | {line}");
                assert!(
                    logs.lines().any(|l| l == prefixed),
                    "no `{prefixed}` in\n{logs}"
                );
            }
        }

        ok(&namespace, &["suspend", "cli"]);
        wait_for(&namespace, "Suspended");
        let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
        for pod in ["cli-worker-0", "cli-worker-1"] {
            within(
                &format!("the suspended job's {pod} to go"),
                await_condition(pods.clone(), pod, |pod: Option<&Pod>| pod.is_none()),
            )
            .await
            .expect("the watch works");
        }
        assert_eq!(row(&ok(&namespace, &["get"]), "tfjob/cli")[1], "Suspended");

        ok(&namespace, &["resume", "cli"]);
        wait_for(&namespace, "Running");

        ok(&namespace, &["delete", "cli"]);
        let gone = trainctl(&namespace, &["get", "tfjob", "cli"]);
        assert_eq!(gone.status.code(), Some(1), "{}", stdout(&gone));
        let error = String::from_utf8_lossy(&gone.stderr);
        assert!(error.contains("not found"), "{error}");
    })
    .await;
}
