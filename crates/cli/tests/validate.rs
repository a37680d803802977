//! `trainctl validate`: exit codes and messages on the fixtures and on the invalid corpus.

mod common;

use std::path::{Path, PathBuf};

use common::{fixture_manifests, tests_dir, trainctl};

/// The expectations of an invalid manifest: `# expect:` trailing comments, or a `.expect` file.
fn expectations(path: &Path) -> Vec<String> {
    let sidecar = PathBuf::from(format!("{}.expect", path.display()));
    if let Ok(text) = std::fs::read_to_string(&sidecar) {
        return text.lines().map(str::to_owned).collect();
    }
    let text = std::fs::read_to_string(path).expect("readable corpus file");
    text.lines()
        .filter_map(|line| line.strip_prefix("# expect: "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_invalid_manifest_exits_2_with_its_location_and_field_path() {
    let dir = tests_dir().join("invalid");
    let mut corpus: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "json"))
        .collect();
    corpus.sort();
    assert!(
        corpus.len() >= 60,
        "the corpus has {} manifests",
        corpus.len()
    );
    let mut failures = Vec::new();
    for path in &corpus {
        let expected = expectations(path);
        assert!(
            !expected.is_empty(),
            "{} has no expectation",
            path.display()
        );
        let shown = path.display().to_string();
        let run = trainctl(&["validate", "-f", &shown]);
        if run.code != Some(2) {
            failures.push(format!(
                "{shown}: exit {:?}, expected 2\n{}",
                run.code, run.stderr
            ));
            continue;
        }
        for expectation in expected {
            // `LINE:COL: ...` must start a diagnostic; anything else must appear in one.
            let positioned = expectation.starts_with(|c: char| c.is_ascii_digit());
            let found = run
                .stderr
                .lines()
                .filter_map(|l| l.strip_prefix(&format!("{shown}:")))
                .any(|rest| {
                    if positioned {
                        rest.starts_with(&expectation)
                    } else {
                        rest.contains(&expectation)
                    }
                });
            if !found {
                failures.push(format!(
                    "{shown}: missing `{expectation}` in:\n{}",
                    run.stderr
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_fixture_is_valid_except_the_plain_batch_job() {
    for path in fixture_manifests() {
        let shown = path.display().to_string();
        let run = trainctl(&["validate", "-f", &shown]);
        if shown.ends_with("batch-job-tensorflow.yaml") {
            assert_eq!(run.code, Some(2), "{shown}\n{}", run.stderr);
            assert!(
                run.stderr.contains(&format!(
                    "{shown}:3:7: kind: `Job` (batch/v1) is not a training job; trainctl runs \
                     kubeflow.org/v1 TFJob, PyTorchJob"
                )),
                "{}",
                run.stderr
            );
        } else {
            assert_eq!(run.code, Some(0), "{shown}\n{}", run.stderr);
            assert!(run.stdout.contains("is valid"), "{shown}: {}", run.stdout);
        }
    }
}

#[test]
fn v1alpha1_tfjob_is_converted_with_a_warning() {
    let path = common::fixtures().join("seeds/mnist-simple-gpu-dist-v1alpha1.yaml");
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
fn tf_chief_with_two_replicas_is_a_warning_not_an_error() {
    let yaml = "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: two-chiefs\nspec:\n  tfReplicaSpecs:\n    Chief:\n      replicas: 2\n      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n";
    let run = common::trainctl_with_stdin(&["validate", "-f", "-"], yaml);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "-:8:17: warning: spec.tfReplicaSpecs[Chief].replicas: is 2: TensorFlow accepts a single chief task; the others will fail to start\n"
    );
}

#[test]
fn standard_input_is_read_with_a_dash() {
    let yaml = "apiVersion: kubeflow.org/v1\nkind: JAXJob\nmetadata:\n  name: piped\nspec:\n  jaxReplicaSpecs:\n    Worker:\n      replicas: -1\n      template: {spec: {containers: [{name: jax, image: jax}]}}\n";
    let run = common::trainctl_with_stdin(&["validate", "-f", "-"], yaml);
    assert_eq!(run.code, Some(2));
    assert_eq!(
        run.stderr,
        "-:8:17: spec.jaxReplicaSpecs[Worker].replicas: is -1: expected 0 or more\n1 error\n"
    );
    let run = common::trainctl_with_stdin(&["validate", "-f", "-"], &yaml.replace("-1", "2"));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, "-: JAXJob default/piped is valid\n");
}

#[test]
fn empty_and_comment_only_files_are_rejected() {
    let dir = tempdir();
    for (name, text) in [
        ("empty.yaml", ""),
        ("comments.yaml", "# nothing here\n\n---\n"),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        let shown = path.display().to_string();
        let run = trainctl(&["validate", "-f", &shown]);
        assert_eq!(run.code, Some(2), "{name}");
        assert_eq!(
            run.stderr,
            format!(
                "{shown}:1:1: the file holds no object: expected a kubeflow.org/v1 job (e.g. `kind: TFJob`)\n1 error\n"
            )
        );
    }
}

#[test]
fn binary_garbage_is_rejected_at_the_first_bad_byte() {
    let dir = tempdir();
    let path = dir.join("garbage.bin");
    // A deterministic byte soup: a little text, then bytes that are not UTF-8.
    let mut bytes = b"apiVersion: kubeflow.org/v1\nkind: TF".to_vec();
    let mut state = 0x2545_f491_u32;
    for _ in 0..4096 {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        bytes.push(state.to_le_bytes()[0] | 0x80);
    }
    std::fs::write(&path, &bytes).expect("write");
    let shown = path.display().to_string();
    let run = trainctl(&["validate", "-f", &shown]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr.starts_with(&format!(
            "{shown}:2:9: the file is not UTF-8 text (invalid byte at offset 36)"
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn control_characters_are_rejected_as_invalid_yaml() {
    let dir = tempdir();
    let path = dir.join("nul.yaml");
    std::fs::write(
        &path,
        "apiVersion: kubeflow.org/v1\nkind: \u{0}\u{1}\u{7}\n",
    )
    .expect("write");
    let shown = path.display().to_string();
    let run = trainctl(&["validate", "-f", &shown]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr.starts_with(&format!("{shown}:2:")),
        "{}",
        run.stderr
    );
}

#[test]
fn a_50_mb_file_is_refused_before_parsing() {
    let dir = tempdir();
    let path = dir.join("huge.yaml");
    let line = "# padding padding padding padding padding padding padding padding padding\n";
    let text = line.repeat(50 * 1024 * 1024 / line.len() + 1);
    std::fs::write(&path, text).expect("write");
    let shown = path.display().to_string();
    let run = trainctl(&["validate", "-f", &shown]);
    assert_eq!(run.code, Some(2));
    assert_eq!(
        run.stderr,
        format!(
            "{shown}:1:1: the file is 50.0 MiB; manifests are limited to 16 MiB (the Kubernetes API server accepts at most 3 MiB per object)\n1 error\n"
        )
    );
}

#[test]
fn deeply_nested_yaml_is_refused_without_overflowing_the_stack() {
    let dir = tempdir();
    let path = dir.join("deep.yaml");
    std::fs::write(
        &path,
        format!("a: {}{}\n", "[".repeat(100_000), "]".repeat(100_000)),
    )
    .expect("write");
    let shown = path.display().to_string();
    let run = trainctl(&["validate", "-f", &shown]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr.starts_with(&format!("{shown}:1:")),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("invalid YAML"), "{}", run.stderr);
}

#[test]
fn missing_files_and_directories_are_errors_not_crashes() {
    let dir = tempdir();
    let missing = dir.join("nope.yaml").display().to_string();
    let run = trainctl(&["validate", "-f", &missing]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr.starts_with(&format!(
            "{missing}:1:1: cannot read: No such file or directory"
        )),
        "{}",
        run.stderr
    );

    let shown = dir.display().to_string();
    let run = trainctl(&["validate", "-f", &shown]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr
            .starts_with(&format!("{shown}:1:1: is a directory, not a manifest file")),
        "{}",
        run.stderr
    );
}

#[test]
fn errors_from_several_files_are_all_reported() {
    let invalid = tests_dir().join("invalid");
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
