//! Manifest loading (`trainctl_api::manifest`): files, bytes and text in; jobs, companions and
//! `FILE:LINE:COL` diagnostics out. What `trainctl validate` prints is these diagnostics, one a
//! line (`crates/cli/tests/commands/validate.rs` checks the printing and the exit code).

use std::path::{Path, PathBuf};

use trainctl_api::manifest::{self, Companion, Diagnostic, Manifests};
use trainctl_api::validation::Severity;

/// Every diagnostic as printed.
fn printed(manifests: &Manifests) -> Vec<String> {
    manifests
        .diagnostics
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// The manifests of users and upstream that the tests load (`testdata/fixtures`).
fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/fixtures")
}

/// Every manifest fixture (seeds and upstream examples, not the CRDs), sorted.
fn fixture_manifests() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["seeds", "upstream"] {
        for entry in std::fs::read_dir(fixtures().join(dir)).expect("fixtures exist") {
            let path = entry.expect("readable fixture dir").path();
            if path.extension().is_some_and(|e| e == "yaml") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// A fresh directory under the target dir, unique per test (tests run in parallel).
fn tempdir() -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "api-manifest-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

const TFJOB: &str = "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: mnist\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 2\n      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n";

#[test]
fn every_fixture_is_valid_except_the_plain_batch_job() {
    let fixtures = fixture_manifests();
    assert!(fixtures.len() > 20, "{} fixtures", fixtures.len());
    for path in fixtures {
        let shown = path.display().to_string();
        let manifests = manifest::load_file(&path);
        if shown.ends_with("batch-job-tensorflow.yaml") {
            assert!(manifests.has_errors(), "{shown}");
            assert!(manifests.jobs.is_empty(), "{shown}");
            let lines = printed(&manifests);
            assert!(
                lines[0].starts_with(&format!(
                    "{shown}:3:7: kind: `Job` (batch/v1) is not a training job; trainctl runs \
                     kubeflow.org/v1 TFJob, PyTorchJob"
                )),
                "{lines:?}"
            );
        } else {
            assert!(
                !manifests.has_errors(),
                "{shown}: {:?}",
                printed(&manifests)
            );
            assert!(!manifests.jobs.is_empty(), "{shown} holds no job");
            assert!(manifests.jobs.iter().all(|job| job.source == shown));
        }
    }
}

#[test]
fn a_valid_job_is_loaded_defaulted_with_no_diagnostic() {
    let manifests = manifest::load_str("job.yaml", TFJOB);
    assert!(
        manifests.diagnostics.is_empty(),
        "{:?}",
        printed(&manifests)
    );
    assert!(manifests.companions.is_empty());
    let [loaded] = manifests.jobs.as_slice() else {
        panic!("one job expected: {:?}", manifests.jobs);
    };
    assert_eq!(loaded.source, "job.yaml");
    assert_eq!(loaded.job.name(), "mnist");
    assert_eq!(loaded.job.namespace(), "default");
    let json = serde_json::to_value(&loaded.job).expect("serializes");
    assert_eq!(
        json["spec"]["tfReplicaSpecs"]["Worker"]["restartPolicy"],
        "Never"
    );
}

#[test]
fn json_is_loaded_like_yaml() {
    let json = r#"{"apiVersion":"kubeflow.org/v1","kind":"JAXJob","metadata":{"name":"j"},
  "spec":{"jaxReplicaSpecs":{"Worker":{"replicas":-1,
  "template":{"spec":{"containers":[{"name":"jax","image":"jax"}]}}}}}}"#;
    let manifests = manifest::load_str("job.json", json);
    assert_eq!(
        printed(&manifests),
        ["job.json:2:51: spec.jaxReplicaSpecs[Worker].replicas: is -1: expected 0 or more"]
    );
}

#[test]
fn documents_are_read_in_order_with_their_companions() {
    let text = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings}}\ndata: {{a: b}}\n---\n{TFJOB}---\n\
         apiVersion: v1\nkind: Secret\nmetadata: {{name: token}}\nstringData: {{t: x}}\n---\n{}",
        TFJOB.replace("mnist", "second")
    );
    let manifests = manifest::load_str("all.yaml", &text);
    assert!(
        manifests.diagnostics.is_empty(),
        "{:?}",
        printed(&manifests)
    );
    let names: Vec<&str> = manifests.jobs.iter().map(|j| j.job.name()).collect();
    assert_eq!(names, ["mnist", "second"]);
    assert!(matches!(
        manifests.companions.as_slice(),
        [Companion::ConfigMap(_), Companion::Secret(_)]
    ));
}

#[test]
fn diagnostics_point_into_the_document_they_belong_to() {
    let text = format!(
        "{TFJOB}---\n{}",
        TFJOB.replace("replicas: 2", "replicas: -3")
    );
    let manifests = manifest::load_str("two.yaml", &text);
    assert_eq!(
        printed(&manifests),
        ["two.yaml:18:17: spec.tfReplicaSpecs[Worker].replicas: is -3: expected 0 or more"]
    );
    assert_eq!(manifests.jobs.len(), 1, "the valid job is kept");
}

#[test]
fn unknown_fields_are_warnings_at_their_key_and_the_job_is_kept() {
    let text = TFJOB
        .replace("replicas: 2", "replica: 2")
        .replace("image: tf}", "image: tf, imagePullPolcy: Always}");
    let manifests = manifest::load_str("typo.yaml", &text);
    assert!(!manifests.has_errors());
    assert_eq!(manifests.jobs.len(), 1);
    assert_eq!(
        printed(&manifests),
        [
            "typo.yaml:8:7: warning: spec.tfReplicaSpecs[Worker].replica: unknown field, ignored (check its spelling)",
            "typo.yaml:9:68: warning: spec.tfReplicaSpecs[Worker].template.spec.containers[0].imagePullPolcy: unknown field, ignored (check its spelling)",
        ]
    );
}

#[test]
fn a_v1alpha1_tfjob_is_converted_with_a_warning() {
    let path = fixtures().join("seeds/mnist-simple-gpu-dist-v1alpha1.yaml");
    let shown = path.display().to_string();
    let manifests = manifest::load_file(&path);
    assert!(!manifests.has_errors(), "{:?}", printed(&manifests));
    assert_eq!(
        printed(&manifests),
        [format!(
            "{shown}:2:13: warning: apiVersion: kubeflow.org/v1alpha1 is deprecated; converted to \
             kubeflow.org/v1 (`trainctl validate -o yaml` shows the converted job)"
        )]
    );
    let job = serde_json::to_value(&manifests.jobs[0].job).expect("serializes");
    assert_eq!(job["apiVersion"], "kubeflow.org/v1");
    for replica_type in ["Master", "Worker", "PS"] {
        let spec = &job["spec"]["tfReplicaSpecs"][replica_type];
        assert_eq!(spec["replicas"], 1, "{replica_type}");
        assert_eq!(spec["restartPolicy"], "OnFailure", "{replica_type}");
    }
}

#[test]
fn a_warning_alone_does_not_refuse_the_job() {
    let text = TFJOB.replace("Worker:\n      replicas: 2", "Chief:\n      replicas: 2");
    let manifests = manifest::load_str("-", &text);
    assert!(!manifests.has_errors());
    assert_eq!(manifests.jobs.len(), 1);
    assert_eq!(
        printed(&manifests),
        [
            "-:8:17: warning: spec.tfReplicaSpecs[Chief].replicas: is 2: TensorFlow accepts a single chief task; the others will fail to start"
        ]
    );
}

#[test]
fn empty_and_comment_only_text_is_refused() {
    for text in ["", "# nothing here\n\n---\n"] {
        let manifests = manifest::load_str("empty.yaml", text);
        assert_eq!(
            printed(&manifests),
            [
                "empty.yaml:1:1: the file holds no object: expected a kubeflow.org/v1 job (e.g. `kind: TFJob`)"
            ],
            "{text:?}"
        );
        assert!(manifests.jobs.is_empty());
    }
}

#[test]
fn bytes_that_are_not_utf8_are_refused_at_the_first_bad_byte() {
    // A little text, then a deterministic soup of bytes that are not UTF-8.
    let mut bytes = b"apiVersion: kubeflow.org/v1\nkind: TF".to_vec();
    let mut state = 0x2545_f491_u32;
    for _ in 0..4096 {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        bytes.push(state.to_le_bytes()[0] | 0x80);
    }
    let manifests = manifest::load_bytes("garbage.bin", &bytes);
    assert_eq!(
        printed(&manifests),
        [
            "garbage.bin:2:9: the file is not UTF-8 text (invalid byte at offset 36); a manifest is YAML or JSON"
        ]
    );
}

#[test]
fn control_characters_are_invalid_yaml_on_their_line() {
    let manifests = manifest::load_str(
        "nul.yaml",
        "apiVersion: kubeflow.org/v1\nkind: \u{0}\u{1}\u{7}\n",
    );
    let lines = printed(&manifests);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("nul.yaml:2:"), "{lines:?}");
}

#[test]
fn yaml_errors_carry_the_parsers_position_and_message() {
    let manifests = manifest::load_str("bad.yaml", "a: [1, 2\nb: 3\n");
    assert_eq!(
        printed(&manifests),
        ["bad.yaml:2:2: invalid YAML: illegal placement of ':' indicator at line 2, column 2"]
    );
}

#[test]
fn deeply_nested_yaml_is_refused_without_overflowing_the_stack() {
    let text = format!("a: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
    let manifests = manifest::load_str("deep.yaml", &text);
    let lines = printed(&manifests);
    assert_eq!(lines.len(), 1);
    assert!(lines[0].starts_with("deep.yaml:1:"), "{lines:?}");
    assert!(lines[0].contains("invalid YAML"), "{lines:?}");
}

#[test]
fn files_over_the_size_limit_are_refused_before_parsing() {
    let dir = tempdir();
    let path = dir.join("huge.yaml");
    let line = "# padding padding padding padding padding padding padding padding padding\n";
    std::fs::write(&path, line.repeat(50 * 1024 * 1024 / line.len() + 1)).expect("write");
    let shown = path.display().to_string();
    assert_eq!(
        printed(&manifest::load_file(&path)),
        [format!(
            "{shown}: the file is 50.0 MiB; manifests are limited to 16 MiB (the Kubernetes API server accepts at most 3 MiB per object)"
        )]
    );
    let bytes = vec![b'#'; manifest::MAX_MANIFEST_BYTES + 1];
    assert_eq!(
        printed(&manifest::load_bytes("-", &bytes)),
        [
            "-: the file is 16.0 MiB; manifests are limited to 16 MiB (the Kubernetes API server accepts at most 3 MiB per object)"
        ]
    );
}

/// What a file past the limit whose size is not known (a device, a pipe) is refused with.
fn more_than_the_limit(source: &str) -> String {
    format!(
        "{source}: the file holds more than 16 MiB; manifests are limited to 16 MiB (the \
         Kubernetes API server accepts at most 3 MiB per object)"
    )
}

#[test]
fn a_device_without_end_is_read_no_further_than_the_limit() {
    let zero = Path::new("/dev/zero");
    assert_eq!(
        printed(&manifest::load_file(zero)),
        [more_than_the_limit("/dev/zero")]
    );
    let refused = manifest::read_file(zero).expect_err("endless");
    assert_eq!(refused.to_string(), more_than_the_limit("/dev/zero"));
}

#[test]
fn a_pipe_past_the_limit_is_refused_without_being_read_whole() {
    use std::io::Write;
    let dir = tempdir();
    let fifo = dir.join("manifest.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut pipe = std::fs::OpenOptions::new()
                .write(true)
                .open(&fifo)
                .expect("open the fifo");
            let chunk = vec![b'#'; 64 * 1024];
            let mut written = 0;
            // 32 MiB, or until the reader goes.
            while written < 32 * 1024 * 1024 && pipe.write_all(&chunk).is_ok() {
                written += chunk.len();
            }
            written
        })
    };
    let shown = fifo.display().to_string();
    assert_eq!(
        printed(&manifest::load_file(&fifo)),
        [more_than_the_limit(&shown)]
    );
    let written = writer.join().expect("the writer");
    assert!(
        written <= manifest::MAX_MANIFEST_BYTES + 2 * 1024 * 1024,
        "{written} bytes of 32 MiB went in"
    );
}

#[test]
fn missing_files_and_directories_are_diagnostics() {
    let dir = tempdir();
    let missing = dir.join("nope.yaml");
    let lines = printed(&manifest::load_file(&missing));
    assert_eq!(lines.len(), 1);
    assert_eq!(lines, [format!("{}: no such file", missing.display())]);
    assert_eq!(
        printed(&manifest::load_file(&dir)),
        [format!(
            "{}: is a directory, not a manifest file",
            dir.display()
        )]
    );
}

#[test]
fn several_files_are_loaded_in_turn() {
    let dir = tempdir();
    let good = dir.join("good.yaml");
    let bad = dir.join("bad.yaml");
    std::fs::write(&good, TFJOB).expect("write");
    std::fs::write(&bad, TFJOB.replace("name: mnist", "name: Mnist")).expect("write");
    let manifests = Manifests::load_files(&[&bad, &good]);
    assert_eq!(manifests.jobs.len(), 1);
    assert_eq!(manifests.jobs[0].source, good.display().to_string());
    let lines = printed(&manifests);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with(&format!("{}:4:9: metadata.name: `Mnist`", bad.display())),
        "{lines:?}"
    );
}

#[test]
fn set_namespace_fills_an_unset_namespace_and_refuses_another() {
    let mut manifests = manifest::load_str("job.yaml", TFJOB);
    let loaded = &mut manifests.jobs[0];
    assert_eq!(loaded.set_namespace("team-a"), Ok(()));
    assert_eq!(loaded.job.namespace(), "team-a");
    assert_eq!(loaded.set_namespace("team-a"), Ok(()));
    assert_eq!(loaded.set_namespace("team-b"), Err("team-a".to_owned()));
    assert_eq!(loaded.job.namespace(), "team-a");
}

#[test]
fn a_diagnostic_prints_as_file_line_column_path_message() {
    let manifests = manifest::load_str("x.yaml", "[1, 2]\n");
    let [diagnostic] = manifests.diagnostics.as_slice() else {
        panic!("{:?}", manifests.diagnostics);
    };
    // No field concerned: no path in the line.
    assert_eq!(diagnostic.path, None);
    assert_eq!(
        diagnostic.to_string(),
        "x.yaml:1:1: expected a mapping with `apiVersion` and `kind`, found a list"
    );
    let warning = Diagnostic {
        severity: Severity::Warning,
        source: "y.yaml".to_owned(),
        position: manifest::location::Position { line: 3, column: 5 },
        path: Some(trainctl_api::FieldPath::fields("spec.runPolicy")),
        message: "look".to_owned(),
    };
    assert_eq!(
        warning.to_string(),
        "y.yaml:3:5: warning: spec.runPolicy: look"
    );
}
