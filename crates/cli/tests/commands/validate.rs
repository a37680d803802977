//! `trainctl validate`: its exit codes and what it prints. What the diagnostics say is the api
//! crate's (`crates/api/tests`: the invalid-manifest corpus, manifest loading, validation); these
//! tests check that the command prints them as `FILE:LINE:COL: PATH: message` lines, then the
//! count, and exits 2.

use std::path::{Path, PathBuf};
use trainctl_cli_harness as harness;

use trainctl_api::manifest;
use trainctl_api::validation::Severity;
use trainctl_cli_harness::{invalid_corpus, trainctl};

/// What `trainctl validate` prints on standard error for files the api crate refuses: each
/// diagnostic on its line, then `N error(s)[, M warning(s)]`.
fn expected_stderr(files: &[&str]) -> String {
    use std::fmt::Write;
    let manifests = manifest::Manifests::load_files(files);
    assert!(manifests.has_errors(), "{files:?}");
    let mut text = String::new();
    for diagnostic in &manifests.diagnostics {
        writeln!(text, "{diagnostic}").expect("writes to a String");
    }
    let errors = manifests
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let warnings = manifests.diagnostics.len() - errors;
    write!(text, "{errors} error{}", if errors == 1 { "" } else { "s" }).expect("writes");
    match warnings {
        0 => {}
        1 => text.push_str(", 1 warning"),
        n => write!(text, ", {n} warnings").expect("writes"),
    }
    text + "\n"
}

#[test]
fn an_invalid_manifest_exits_2_printing_each_diagnostic_then_the_count() {
    for file in [
        "many-errors.yaml",
        "json-truncated.json",
        "multi-doc-second-invalid.yaml",
        "yaml-duplicate-key.yaml",
    ] {
        let shown = invalid_corpus().join(file).display().to_string();
        let run = trainctl(&["validate", "-f", &shown]);
        assert_eq!(run.code, Some(2), "{shown}\n{}", run.stderr);
        assert_eq!(run.stdout, "", "{shown}");
        assert_eq!(run.stderr, expected_stderr(&[&shown]), "{shown}");
    }
}

#[test]
fn errors_and_warnings_are_counted_apart() {
    // Unknown fields are found while reading the job, before it is validated.
    let dir = tempdir();
    let path = dir.join("both.yaml");
    std::fs::write(
        &path,
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: both\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: -1\n      template:\n        spec:\n          containers:\n            - name: tensorflow\n              image: img:1\n              imagePullPolcy: Always\n",
    )
    .expect("write");
    let shown = path.display().to_string();
    let run = trainctl(&["validate", "-f", &shown]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert_eq!(
        run.stderr,
        format!(
            "{shown}:14:15: warning: spec.tfReplicaSpecs[Worker].template.spec.containers[0].imagePullPolcy: unknown field, ignored (check its spelling)\n\
             {shown}:8:17: spec.tfReplicaSpecs[Worker].replicas: is -1: expected 0 or more\n\
             1 error, 1 warning\n"
        )
    );
}

#[test]
fn a_users_own_tf_config_is_warned_about_as_replaced() {
    let path = harness::fixtures().join("seeds/allreduce-tfjob.yaml");
    let shown = path.display().to_string();
    let run = trainctl(&["validate", "-f", &shown]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        run.stderr,
        format!(
            "{shown}:16:19: warning: spec.tfReplicaSpecs[Chief].template.spec.containers[0].env[0]: \
             `TF_CONFIG` is replaced by the one the operator injects into every replica of a \
             distributed TFJob (as Kubeflow's operator does): this value is never seen; remove it\n"
        )
    );
    // A job of one replica gets no `TF_CONFIG`: the user's stands, and nothing is said.
    let single = "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: one}\nspec:\n  \
                  tfReplicaSpecs:\n    Worker:\n      replicas: 1\n      template:\n        \
                  spec:\n          containers:\n          - name: tensorflow\n            image: tf\n            \
                  env: [{name: TF_CONFIG, value: '{}'}]\n";
    let run = harness::trainctl_with_stdin(&["validate", "-f", "-"], single);
    assert_eq!((run.code, run.stderr.as_str()), (Some(0), ""));
}

#[test]
fn v1alpha1_tfjob_is_converted_with_a_warning() {
    let path = harness::fixtures().join("seeds/mnist-simple-gpu-dist-v1alpha1.yaml");
    let shown = path.display().to_string();
    let run = trainctl(&["validate", "-f", &shown, "-o", "json"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "{shown}:2:13: warning: apiVersion: kubeflow.org/v1alpha1 is deprecated; converted to kubeflow.org/v1"
        )),
        "{}",
        run.stderr
    );
    let job: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON output");
    assert_eq!(job["apiVersion"], "kubeflow.org/v1");
    let specs = &job["spec"]["tfReplicaSpecs"];
    for (replica_type, policy) in [
        ("Master", "OnFailure"),
        ("Worker", "OnFailure"),
        ("PS", "OnFailure"),
    ] {
        assert_eq!(specs[replica_type]["replicas"], 1, "{replica_type}");
        assert_eq!(
            specs[replica_type]["restartPolicy"], policy,
            "{replica_type}"
        );
    }
}

#[test]
fn unknown_fields_are_warnings_with_their_path() {
    let dir = tempdir();
    let path = dir.join("typo.yaml");
    std::fs::write(
        &path,
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: typo\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replica: 2\n      template:\n        spec:\n          containers:\n            - name: tensorflow\n              image: img:1\n              imagePullPolcy: Always\n",
    )
    .expect("write");
    let shown = path.display().to_string();
    let run = trainctl(&["validate", "-f", &shown]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        run.stderr,
        format!(
            "{shown}:8:7: warning: spec.tfReplicaSpecs[Worker].replica: unknown field, ignored (check its spelling)\n\
             {shown}:14:15: warning: spec.tfReplicaSpecs[Worker].template.spec.containers[0].imagePullPolcy: unknown field, ignored (check its spelling)\n"
        )
    );
}

#[test]
fn standard_input_is_read_with_a_dash() {
    let yaml = "apiVersion: kubeflow.org/v1\nkind: JAXJob\nmetadata:\n  name: piped\nspec:\n  jaxReplicaSpecs:\n    Worker:\n      replicas: -1\n      template: {spec: {containers: [{name: jax, image: jax}]}}\n";
    let run = harness::trainctl_with_stdin(&["validate", "-f", "-"], yaml);
    assert_eq!(run.code, Some(2));
    assert_eq!(
        run.stderr,
        "-:8:17: spec.jaxReplicaSpecs[Worker].replicas: is -1: expected 0 or more\n1 error\n"
    );
    let run = harness::trainctl_with_stdin(&["validate", "-f", "-"], &yaml.replace("-1", "2"));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, "-: JAXJob default/piped is valid\n");
}

#[test]
fn errors_from_several_files_are_all_reported() {
    let invalid = invalid_corpus();
    let a = invalid.join("replicas-negative.yaml").display().to_string();
    let b = invalid
        .join("managed-by-invalid.yaml")
        .display()
        .to_string();
    let run = trainctl(&["validate", "-f", &a, "-f", &b]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr.contains(&format!("{a}:8:17: ")),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(&format!("{b}:7:16: ")),
        "{}",
        run.stderr
    );
    assert!(run.stderr.ends_with("2 errors\n"), "{}", run.stderr);
    assert_eq!(run.stderr, expected_stderr(&[&a, &b]));
}

/// A fresh directory under the target dir, unique per test (tests run in parallel).
fn tempdir() -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "validate-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}
