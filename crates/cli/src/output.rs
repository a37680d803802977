//! Writing objects as YAML or JSON on standard output.

use std::io::Write;

use anyhow::Context;
use serde::Serialize;

use crate::cli::Format;

/// Serializes `value` in `format`, with a trailing newline.
pub fn render<T: Serialize>(value: &T, format: Format) -> anyhow::Result<String> {
    let mut text = match format {
        Format::Yaml => serde_saphyr::to_string(value).context("cannot write YAML")?,
        Format::Json => serde_json::to_string_pretty(value).context("cannot write JSON")?,
    };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// Writes several objects: YAML documents separated by `---`, or one JSON value each.
pub fn print_all<T: Serialize>(values: &[T], format: Format) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    for (i, value) in values.iter().enumerate() {
        if format == Format::Yaml && i > 0 {
            stdout.write_all(b"---\n")?;
        }
        stdout.write_all(render(value, format)?.as_bytes())?;
    }
    stdout.flush()?;
    Ok(())
}
