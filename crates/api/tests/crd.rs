//! The generated CRDs: names, subresources and printer columns as docs/semantics.md §1 says, and a
//! schema that accepts every fixture manifest that the upstream Kubeflow CRDs accept.

use std::path::{Path, PathBuf};

use serde_json::Value;
use trainctl_api::JobKind;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/fixtures")
}

fn crd_json(kind: JobKind) -> Value {
    serde_json::to_value(trainctl_api::crd::crd(kind)).expect("CRDs serialize")
}

fn schema_of(crd: &Value) -> Value {
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone()
}

fn upstream_crd(kind: JobKind) -> Value {
    let path = fixtures().join(format!("upstream/crds/kubeflow.org_{}.yaml", kind.plural()));
    let text = std::fs::read_to_string(&path).expect("upstream CRD fixture");
    serde_saphyr::from_str(&text).expect("upstream CRD parses")
}

#[test]
fn crds_have_names_short_names_and_scope() {
    for kind in JobKind::ALL {
        let crd = crd_json(kind);
        assert_eq!(
            crd["metadata"]["name"],
            format!("{}.kubeflow.org", kind.plural())
        );
        let names = &crd["spec"]["names"];
        assert_eq!(names["kind"], kind.as_str());
        assert_eq!(names["plural"], kind.plural());
        assert_eq!(names["singular"], kind.singular());
        assert_eq!(names["shortNames"], serde_json::json!([kind.singular()]));
        assert_eq!(crd["spec"]["scope"], "Namespaced");
        assert_eq!(crd["spec"]["group"], "kubeflow.org");
        assert_eq!(crd["spec"]["versions"][0]["name"], "v1");
    }
}

#[test]
fn crds_print_state_and_age_columns() {
    for kind in JobKind::ALL {
        let columns = &crd_json(kind)["spec"]["versions"][0]["additionalPrinterColumns"];
        assert_eq!(
            columns,
            &serde_json::json!([
                {"jsonPath": ".status.conditions[-1:].type", "name": "State", "type": "string"},
                {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
            ]),
            "{kind}"
        );
    }
}

#[test]
fn status_subresource_everywhere_and_scale_on_pytorch_paddle_jax() {
    for kind in JobKind::ALL {
        let subresources = &crd_json(kind)["spec"]["versions"][0]["subresources"];
        assert_eq!(subresources["status"], serde_json::json!({}), "{kind}");
        if kind.has_scale_subresource() {
            assert_eq!(
                subresources["scale"],
                serde_json::json!({
                    "specReplicasPath": format!(".spec.{}.Worker.replicas", kind.replica_specs_field()),
                    "statusReplicasPath": ".status.replicaStatuses.Worker.active",
                    "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
                }),
                "{kind}"
            );
        } else {
            assert!(
                subresources.get("scale").is_none(),
                "{kind} has no scale subresource"
            );
        }
    }
}

#[test]
fn scale_subresources_match_upstream() {
    for kind in JobKind::ALL {
        let ours = &crd_json(kind)["spec"]["versions"][0]["subresources"];
        let upstream = &upstream_crd(kind)["spec"]["versions"][0]["subresources"];
        assert_eq!(ours.get("scale"), upstream.get("scale"), "{kind}");
    }
}

/// Every `kubeflow.org/v1` document of the fixtures, with its kind.
fn fixture_jobs() -> Vec<(String, JobKind, Value)> {
    let mut jobs = Vec::new();
    for dir in ["seeds", "upstream"] {
        for entry in std::fs::read_dir(fixtures().join(dir)).expect("fixture dir") {
            let path = entry.expect("entry").path();
            if path.extension().is_none_or(|e| e != "yaml") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("fixture");
            let documents: Vec<Value> = serde_saphyr::from_multiple(&text).expect("fixture parses");
            for document in documents {
                let kind = document["kind"]
                    .as_str()
                    .and_then(|k| k.parse::<JobKind>().ok());
                if let (Some("kubeflow.org/v1"), Some(kind)) =
                    (document["apiVersion"].as_str(), kind)
                {
                    jobs.push((path.display().to_string(), kind, document));
                }
            }
        }
    }
    jobs
}

#[test]
fn our_schema_accepts_every_fixture_the_upstream_schema_accepts() {
    let jobs = fixture_jobs();
    assert!(jobs.len() >= 30, "only {} fixture jobs", jobs.len());
    let validators: std::collections::HashMap<JobKind, _> = JobKind::ALL
        .into_iter()
        .map(|kind| {
            let upstream = jsonschema::validator_for(&schema_of(&upstream_crd(kind)))
                .expect("upstream schema compiles");
            let ours = jsonschema::validator_for(&schema_of(&crd_json(kind)))
                .expect("our schema compiles");
            (kind, (upstream, ours))
        })
        .collect();
    let mut accepted_upstream = 0;
    for (file, kind, document) in &jobs {
        let (upstream, ours) = &validators[kind];
        if upstream.is_valid(document) {
            accepted_upstream += 1;
            let errors: Vec<String> = ours
                .iter_errors(document)
                .map(|e| format!("{} at {}", e, e.instance_path()))
                .collect();
            assert!(
                errors.is_empty(),
                "{file}: our {kind} schema rejects what upstream accepts: {errors:?}"
            );
        }
    }
    assert_eq!(
        accepted_upstream,
        jobs.len(),
        "upstream should accept all its own fixtures"
    );
}

#[test]
fn our_schema_rejects_an_unknown_restart_policy() {
    let ours =
        jsonschema::validator_for(&schema_of(&crd_json(JobKind::TFJob))).expect("schema compiles");
    let document = serde_json::json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "x"},
        "spec": {"tfReplicaSpecs": {"Worker": {"restartPolicy": "Sometimes", "template": {}}}}
    });
    assert!(!ours.is_valid(&document));
}
