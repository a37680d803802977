//! The invalid-manifest corpus (`tests/invalid/`): every file is refused, each problem at its
//! `LINE:COL` with its field path.
//!
//! Each corpus file says what it expects: `# expect: ` trailing comments in a YAML file, or the
//! lines of a `.expect` file beside it (for JSON, which has no comments). An expectation that
//! starts with a digit (`LINE:COL: PATH: message`) must start a diagnostic after `FILE:`; any
//! other must appear in one. `crates/cli/tests/commands/validate.rs` checks that `trainctl validate`
//! prints these diagnostics and exits 2.

use std::path::{Path, PathBuf};

use trainctl_api::manifest;

/// The corpus directory.
fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/invalid")
}

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
fn every_invalid_manifest_is_refused_with_its_location_and_field_path() {
    let mut corpus: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
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
        let manifests = manifest::load_file(path);
        let lines: Vec<String> = manifests
            .diagnostics
            .iter()
            .map(ToString::to_string)
            .collect();
        if !manifests.has_errors() {
            failures.push(format!("{shown}: no error in:\n{}", lines.join("\n")));
            continue;
        }
        for expectation in expected {
            // `LINE:COL: ...` must start a diagnostic; anything else must appear in one.
            let positioned = expectation.starts_with(|c: char| c.is_ascii_digit());
            let found = lines
                .iter()
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
                    lines.join("\n")
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_multi_document_file_keeps_its_valid_jobs_beside_the_invalid_one() {
    let manifests = manifest::load_file(&corpus_dir().join("multi-doc-second-invalid.yaml"));
    assert!(manifests.has_errors());
    assert_eq!(
        manifests.diagnostics.len(),
        1,
        "{:?}",
        manifests.diagnostics
    );
    let names: Vec<&str> = manifests.jobs.iter().map(|j| j.job.name()).collect();
    assert_eq!(names, ["mnist"]);
}
