//! Sizes Kubernetes refuses: annotations over 256 KiB in total, on the job and on each replica's
//! pod template (the API server's `ValidateAnnotationsSize`).

use std::collections::BTreeMap;

use super::issue::{Issue, metadata_maps};
use crate::field_path::FieldPath;
use crate::job::TrainingJob;

/// The most bytes an object's annotations may hold, keys and values together.
pub const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

/// Checks the total size of the job's annotations and of each pod template's.
pub(super) fn validate_annotation_sizes(job: &TrainingJob, issues: &mut Vec<Issue>) {
    for (path, annotations) in metadata_maps(job, "annotations", |meta| meta.annotations.as_ref()) {
        check(annotations, path, issues);
    }
}

fn check(annotations: Option<&BTreeMap<String, String>>, path: FieldPath, issues: &mut Vec<Issue>) {
    let total: usize = annotations
        .into_iter()
        .flatten()
        .map(|(key, value)| key.len() + value.len())
        .sum();
    if total > MAX_ANNOTATIONS_BYTES {
        issues.push(Issue::error(
            path,
            format!(
                "too long: {total} bytes of keys and values; Kubernetes allows at most \
                 {MAX_ANNOTATIONS_BYTES} bytes (256 KiB) of annotations per object"
            ),
        ));
    }
}
