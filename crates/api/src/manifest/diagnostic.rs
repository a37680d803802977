//! One problem found in a manifest, with where it is, and how it is printed:
//! `FILE:LINE:COL: PATH: message`.

use std::fmt;

use super::location::Position;
use crate::field_path::FieldPath;
use crate::validation::Severity;

/// One problem found in a manifest, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The file, as the user named it (`-` for standard input).
    pub source: String,
    /// Line and column in the file.
    pub position: Position,
    /// The field concerned, when the problem is about a field.
    pub path: Option<FieldPath>,
    /// What is wrong and what would be right.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    /// `FILE:LINE:COL: PATH: message` (`FILE: message` for the file as a whole), with `warning: ` before the path for warnings; control
    /// characters (from the manifest, or the file's name) escaped as `\u{1b}`, so that a
    /// diagnostic is one line and cannot drive the terminal.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Position { line, column } = self.position;
        let warning = if self.severity == Severity::Warning {
            "warning: "
        } else {
            ""
        };
        let path = self
            .path
            .as_ref()
            .map(|path| format!("{path}: "))
            .unwrap_or_default();
        let line = if self.position == Position::WHOLE_FILE {
            format!("{}: {warning}{path}{}", self.source, self.message)
        } else {
            format!(
                "{}:{line}:{column}: {warning}{path}{}",
                self.source, self.message
            )
        };
        for c in line.chars() {
            if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
                write!(f, "{}", c.escape_default())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}
