//! Logging of the long-running commands (`server`, `operator`): `tracing` events on stderr,
//! filtered by `RUST_LOG` (default `info`).

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

use crate::cli::LogFormat;

/// Sends the `tracing` events of this process to stderr in `format`, those that `RUST_LOG`
/// selects (`info` and above without it); text is in colour only on a terminal. Once per
/// process.
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    match format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .init(),
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
    }
}
