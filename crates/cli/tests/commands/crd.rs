//! `trainctl crd`: the committed CRDs are exactly what the code generates.

use trainctl_cli_harness::trainctl;

#[test]
fn committed_crds_match_the_generated_ones() {
    let generated = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("crds-{}", std::process::id()));
    let shown = generated.display().to_string();
    let run = trainctl(&["crd", "--dir", &shown]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crds");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&generated).expect("generated dir") {
        let name = entry.expect("entry").file_name();
        let fresh = std::fs::read_to_string(generated.join(&name)).expect("generated CRD");
        let stored = std::fs::read_to_string(committed.join(&name)).unwrap_or_else(|_| {
            panic!(
                "deploy/crds/{} is missing: run `trainctl crd --dir deploy/crds`",
                name.display()
            )
        });
        assert!(
            fresh == stored,
            "deploy/crds/{} is stale: run `trainctl crd --dir deploy/crds`",
            name.display()
        );
        names.push(name.to_string_lossy().into_owned());
    }
    names.sort();
    assert_eq!(
        names,
        [
            "kubeflow.org_jaxjobs.yaml",
            "kubeflow.org_mpijobs.yaml",
            "kubeflow.org_mxjobs.yaml",
            "kubeflow.org_paddlejobs.yaml",
            "kubeflow.org_pytorchjobs.yaml",
            "kubeflow.org_tfjobs.yaml",
            "kubeflow.org_xgboostjobs.yaml",
        ]
    );
}

#[test]
fn crd_prints_seven_yaml_documents() {
    let run = trainctl(&["crd"]);
    assert_eq!(run.code, Some(0));
    assert_eq!(
        run.stdout.matches("kind: CustomResourceDefinition").count(),
        7
    );
    assert_eq!(run.stdout.matches("\n---\n").count(), 6);
}
