//! Printing manifest diagnostics the way compilers do: one `FILE:LINE:COL: PATH: message` a line.

use std::process::ExitCode;

use trainctl_api::manifest::{LoadedJob, Manifests};
use trainctl_api::validation::Severity;

/// Exit status of a command given an invalid manifest (docs/architecture.md §7).
pub const EXIT_INVALID: u8 = 2;

/// Prints every diagnostic to standard error, then a count if there were errors.
/// Returns `Err(exit code 2)` when any diagnostic is an error.
pub fn report(manifests: &Manifests) -> Result<(), ExitCode> {
    for diagnostic in &manifests.diagnostics {
        eprintln!("{diagnostic}");
    }
    if !manifests.has_errors() {
        return Ok(());
    }
    let errors = manifests
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let warnings = manifests.diagnostics.len() - errors;
    eprintln!(
        "{errors} error{}{}",
        if errors == 1 { "" } else { "s" },
        match warnings {
            0 => String::new(),
            1 => ", 1 warning".to_owned(),
            n => format!(", {n} warnings"),
        }
    );
    Err(ExitCode::from(EXIT_INVALID))
}

/// Puts a job that names no namespace in `namespace` (`-n`); a job that names another one is an
/// error, as with kubectl: it is printed, and `Err` carries exit code 2.
pub fn set_namespace(loaded: &mut LoadedJob, namespace: &str) -> Result<(), ExitCode> {
    loaded.set_namespace(namespace).map_err(|own| {
        eprintln!(
            "{}: the job's namespace `{own}` does not match --namespace `{namespace}`",
            loaded.source
        );
        ExitCode::from(EXIT_INVALID)
    })
}
