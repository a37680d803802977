//! Writing objects as YAML or JSON on standard output, streamed (a rendered job can be tens of
//! megabytes).

use std::io::{BufWriter, Write};

use anyhow::Context;
use serde::Serialize;

use crate::cli::Format;

/// Writes `value` in `format` to `out`, with a trailing newline.
pub fn write<T: Serialize, W: Write>(out: &mut W, value: &T, format: Format) -> anyhow::Result<()> {
    match format {
        Format::Yaml => {
            serde_saphyr::to_io_writer(&mut *out, value).context("cannot write YAML")?;
        }
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, value).context("cannot write JSON")?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

/// Prints one object on standard output.
pub fn print<T: Serialize>(value: &T, format: Format) -> anyhow::Result<()> {
    print_all(std::slice::from_ref(value), format)
}

/// Prints several objects: YAML documents separated by `---`, or one JSON value each.
pub fn print_all<T: Serialize>(values: &[T], format: Format) -> anyhow::Result<()> {
    let mut stdout = BufWriter::new(std::io::stdout().lock());
    for (i, value) in values.iter().enumerate() {
        if format == Format::Yaml && i > 0 {
            stdout.write_all(b"---\n")?;
        }
        write(&mut stdout, value, format)?;
    }
    stdout.flush()?;
    Ok(())
}
