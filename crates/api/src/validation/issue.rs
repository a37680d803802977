//! What validation finds: an [`Issue`] at a field, and the field paths of a job's replica specs
//! that issues point at.

use crate::field_path::FieldPath;
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
