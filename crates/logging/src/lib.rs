//! How trainctl's long-running processes, `trainctl server` and the Kubernetes operator, log:
//! `tracing` events on stderr, as text or one JSON object a line, those that `RUST_LOG` selects
//! (`info` and above without it).

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

/// How a process logs on stderr (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One JSON object a line, with the span fields (`kind`, `job`).
    Json,
    /// Human-readable lines.
    Text,
}

impl LogFormat {
    /// Text when stderr is a terminal (a person reads it), else JSON (a log collector does).
    #[must_use]
    pub fn for_stderr() -> LogFormat {
        if std::io::stderr().is_terminal() {
            LogFormat::Text
        } else {
            LogFormat::Json
        }
    }
}

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
