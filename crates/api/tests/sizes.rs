//! Sizes Kubernetes refuses are refused here too, with the field path: annotations over 256 KiB
//! in total, on the job and on a replica's pod template.

use trainctl_api::manifest;
use trainctl_api::validation::MAX_ANNOTATIONS_BYTES;

/// A TFJob whose metadata has annotations of `job_bytes` bytes in all (keys and values), and
/// its worker template annotations of `template_bytes`.
fn annotated(job_bytes: usize, template_bytes: usize) -> String {
    // One key of 4 bytes (`note`) and a value of the rest.
    let value = |bytes: usize| "x".repeat(bytes - 4);
    format!(
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: noted
  annotations:
    note: {}
spec:
  tfReplicaSpecs:
    Worker:
      template:
        metadata:
          annotations:
            note: {}
        spec:
          containers:
            - name: tensorflow
              image: tf
",
        value(job_bytes),
        value(template_bytes)
    )
}

fn printed(text: &str) -> Vec<String> {
    manifest::load_str("job.yaml", text)
        .diagnostics
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn annotations_of_256_kib_are_accepted() {
    let text = annotated(MAX_ANNOTATIONS_BYTES, MAX_ANNOTATIONS_BYTES);
    assert_eq!(printed(&text), Vec::<String>::new());
}

#[test]
fn annotations_over_256_kib_are_refused_at_their_field() {
    let text = annotated(MAX_ANNOTATIONS_BYTES + 1, MAX_ANNOTATIONS_BYTES + 10);
    assert_eq!(
        printed(&text),
        [
            "job.yaml:5:3: metadata.annotations: too long: 262145 bytes of keys and values; \
             Kubernetes allows at most 262144 bytes (256 KiB) of annotations per object",
            "job.yaml:12:11: spec.tfReplicaSpecs[Worker].template.metadata.annotations: too \
             long: 262154 bytes of keys and values; Kubernetes allows at most 262144 bytes \
             (256 KiB) of annotations per object"
        ]
    );
}
