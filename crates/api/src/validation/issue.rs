//! What validation finds: an [`Issue`] at a field, and the field paths of a job's replica specs
//! that issues point at.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::field_path::FieldPath;
use crate::job::TrainingJob;
use crate::kind::JobKind;
use crate::replica::ReplicaType;

/// How serious an issue is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Severity {
    /// The job is rejected.
    Error,
    /// The job is accepted; the user should look.
    Warning,
}

/// One problem with a job, at a field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// Error or warning.
    pub severity: Severity,
    /// The field concerned.
    pub path: FieldPath,
    /// What is wrong and what is expected.
    pub message: String,
}

impl Issue {
    /// An error at `path`.
    pub fn error(path: FieldPath, message: impl Into<String>) -> Issue {
        Issue {
            severity: Severity::Error,
            path,
            message: message.into(),
        }
    }

    /// A warning at `path`.
    pub fn warning(path: FieldPath, message: impl Into<String>) -> Issue {
        Issue {
            severity: Severity::Warning,
            path,
            message: message.into(),
        }
    }
}

/// `spec.<kind's replica specs field>`: where the replica specs of a job of `kind` are.
pub(super) fn replica_specs_path(kind: JobKind) -> FieldPath {
    FieldPath::fields("spec").field(kind.replica_specs_field())
}

/// `spec.<kind's replica specs field>.<replica_type>`: where one replica type's spec is.
pub(super) fn replica_path(kind: JobKind, replica_type: &ReplicaType) -> FieldPath {
    replica_specs_path(kind).key(replica_type.as_str())
}

/// A string map of the job's metadata (`labels`, `annotations`: `field` names it, `pick`
/// reads it), then the same map of each replica's pod template, each with its field path.
pub(super) fn metadata_maps<'a>(
    job: &'a TrainingJob,
    field: &'a str,
    pick: impl Fn(&'a ObjectMeta) -> Option<&'a BTreeMap<String, String>> + 'a,
) -> impl Iterator<Item = (FieldPath, Option<&'a BTreeMap<String, String>>)> + 'a {
    let job_map = (
        FieldPath::fields("metadata").field(field),
        pick(job.metadata()),
    );
    let templates = job.replica_specs().iter().map(move |(replica_type, spec)| {
        let path = replica_path(job.kind(), replica_type)
            .field("template")
            .field("metadata")
            .field(field);
        (path, spec.template.metadata.as_ref().and_then(&pick))
    });
    std::iter::once(job_map).chain(templates)
}
