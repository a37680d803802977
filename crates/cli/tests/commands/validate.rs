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
    let run = trainctl(&["--kube", "validate", "-f", &shown]);
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
    let run = harness::trainctl_with_stdin(&["--kube", "validate", "-f", "-"], single);
    assert_eq!((run.code, run.stderr.as_str()), (Some(0), ""));
}

#[test]
fn v1alpha1_tfjob_is_converted_with_a_warning() {
    let path = harness::fixtures().join("seeds/mnist-simple-gpu-dist-v1alpha1.yaml");
    let shown = path.display().to_string();
    let run = trainctl(&["--kube", "validate", "-f", &shown, "-o", "json"]);
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
    let run = trainctl(&["--kube", "validate", "-f", &shown]);
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
    let run =
        harness::trainctl_with_stdin(&["--kube", "validate", "-f", "-"], &yaml.replace("-1", "2"));
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

#[test]
fn a_job_this_machine_cannot_run_is_valid_with_every_reason_it_cannot_and_exit_1() {
    let path = harness::fixtures().join("seeds/multi-node-gpu-tfjob.yaml");
    let shown = path.display().to_string();
    let run = trainctl(&[
        "validate", "-f", &shown, "--cpus", "64", "--memory", "256Gi",
    ]);
    assert_eq!(run.code, Some(1), "{run}");
    let no_command = format!(
        "{shown}:13:15: spec.tfReplicaSpecs[Chief].template.spec.containers[0]: cannot run on \
         this machine: chief-0: container `tensorflow` has no `command`: locally the entrypoint \
         of image `tensorflow/tensorflow:2.12.0-gpu` is not available; set `command` (and \
         `args`); and 4 more replicas\n"
    );
    assert_eq!(
        run.stderr,
        format!(
            "{shown}:7:3: spec.tfReplicaSpecs: cannot run on this machine: the job can never \
             start here: its replicas together need 20 GPUs but this machine has 0 GPUs; lower \
             their resource requests, run the job on a larger machine, or pretend this one is \
             larger with --gpus 20\n\
             {no_command}\
             1 job cannot run on this machine as written (for a cluster, check with `trainctl \
             --kube validate`)\n"
        )
    );
    assert_eq!(
        run.stdout,
        format!(
            "{shown}: TFJob kubeflow-user-example-com/multi-node-gpu-tfjob is valid, but cannot \
             run on this machine\n"
        )
    );
    // A machine said to be larger leaves the command.
    let run = trainctl(&[
        "validate", "-f", &shown, "--gpus", "20", "--cpus", "64", "--memory", "256Gi",
    ]);
    assert_eq!(run.code, Some(1), "{run}");
    assert!(run.stderr.starts_with(&no_command), "{run}");
    // For a cluster, only what the API server checks.
    let run = trainctl(&["--kube", "validate", "-f", &shown]);
    assert_eq!((run.code, run.stderr.as_str()), (Some(0), ""), "{run}");
}

#[test]
fn a_script_missing_from_the_working_directory_is_warned_of() {
    let dir = tempdir();
    std::fs::create_dir_all(dir.join("code")).expect("mkdir");
    std::fs::write(dir.join("code/train.py"), "print('trained')\n").expect("write");
    let job = |script: &str| {
        format!(
            "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {{name: relative}}\nspec:\n  \
             tfReplicaSpecs:\n    Worker:\n      replicas: 1\n      template:\n        spec:\n          \
             containers:\n          - name: tensorflow\n            image: tf\n            \
             command: [python3, -u, {script}]\n"
        )
    };
    let validate = |text: &str| {
        let mut command = std::process::Command::new(harness::binary());
        command
            .args(["validate", "-f", "-"])
            .current_dir(&dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = command.spawn().expect("trainctl starts");
        std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), text.as_bytes())
            .expect("write stdin");
        harness::into_run(&child.wait_with_output().expect("trainctl finishes"))
    };
    let found = validate(&job("code/train.py"));
    assert_eq!(
        (found.code, found.stderr.as_str()),
        (Some(0), ""),
        "{found}"
    );
    let missing = validate(&job("examples/train.py"));
    assert_eq!(missing.code, Some(0), "{missing}");
    assert_eq!(
        missing.stderr,
        format!(
            "-:11:13: warning: spec.tfReplicaSpecs[Worker].template.spec.containers[0]: Worker: \
             `examples/train.py` is not in {}, where the replica starts: `python3` will fail to \
             open it; run trainctl from the directory the path is relative to, or set the \
             container's `workingDir`\n",
            dir.display()
        )
    );
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
