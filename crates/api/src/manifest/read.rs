//! Reading a manifest's bytes from a file or standard input, never more than
//! [`MAX_MANIFEST_BYTES`] and one byte: an endless input (`/dev/zero`, a pipe that never ends) is
//! refused as soon as it passes the limit, not when memory runs out.

use std::io::Read;
use std::path::Path;

use super::diagnostic::Diagnostic;
use super::location::Position;
use crate::validation::Severity;

/// Manifests larger than this are refused before parsing (the Kubernetes API server accepts at
/// most 3 MiB per object, so a larger file is a mistake, not a job).
pub const MAX_MANIFEST_BYTES: usize = 16 * 1024 * 1024;

/// The bytes of the manifest file `path` (`-`: standard input), or the diagnostic saying why
/// there are none: it cannot be read, it is a directory, or it holds more than
/// [`MAX_MANIFEST_BYTES`] (of which no more than one byte past the limit is read).
pub fn read_file(path: &Path) -> Result<Vec<u8>, Box<Diagnostic>> {
    let source = path.display().to_string();
    let error = |message: String| {
        Box::new(Diagnostic {
            severity: Severity::Error,
            source: source.clone(),
            position: Position::WHOLE_FILE,
            path: None,
            message,
        })
    };
    if source == "-" {
        return read_at_most(std::io::stdin().lock())
            .map_err(|failure| error(format!("cannot read standard input: {failure}")))?
            .ok_or_else(|| error(more_than_the_limit("standard input")));
    }
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => {
            return Err(error("is a directory, not a manifest file".to_owned()));
        }
        // A regular file's size is known: say it, without reading anything.
        Ok(meta) if meta.len() > MAX_MANIFEST_BYTES as u64 => {
            return Err(error(too_large(meta.len())));
        }
        _ => {}
    }
    // A device or a pipe (`/dev/zero`, `<(command)`) has no size: it is read up to the limit.
    std::fs::File::open(path)
        .and_then(read_at_most)
        .map_err(|failure| error(cannot_read(&failure)))?
        .ok_or_else(|| error(more_than_the_limit("the file")))
}

/// Why a file cannot be read, in words (`no such file`), without the OS's error number.
fn cannot_read(failure: &std::io::Error) -> String {
    match failure.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_owned(),
        std::io::ErrorKind::PermissionDenied => "cannot read: permission denied".to_owned(),
        _ => format!("cannot read: {failure}"),
    }
}

/// Everything `input` holds when that is at most [`MAX_MANIFEST_BYTES`]; `None` when it holds
/// more (having read one byte past the limit, no more).
fn read_at_most(input: impl Read) -> std::io::Result<Option<Vec<u8>>> {
    let limit = MAX_MANIFEST_BYTES as u64;
    let mut bytes = Vec::new();
    input.take(limit + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

/// `the file is 50.0 MiB; manifests are limited to 16 MiB (...)`.
pub(super) fn too_large(len: u64) -> String {
    #[expect(clippy::cast_precision_loss, reason = "a size shown to one decimal")]
    let mib = len as f64 / (1024.0 * 1024.0);
    format!("the file is {mib:.1} MiB; {}", the_limit())
}

/// `standard input holds more than 16 MiB; manifests are limited to 16 MiB (...)`.
fn more_than_the_limit(what: &str) -> String {
    format!(
        "{what} holds more than {} MiB; {}",
        MAX_MANIFEST_BYTES / (1024 * 1024),
        the_limit()
    )
}

fn the_limit() -> String {
    format!(
        "manifests are limited to {} MiB (the Kubernetes API server accepts at most 3 MiB per \
         object)",
        MAX_MANIFEST_BYTES / (1024 * 1024)
    )
}
