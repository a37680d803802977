//! Colour on a terminal: a failed job stands out in red, as kubectl's plugins and most CLIs do;
//! never when the output is not a terminal, or `NO_COLOR` is set (no-color.org).

use std::io::IsTerminal as _;

/// Whether standard output takes colour.
pub fn stdout_takes_colour() -> bool {
    std::io::stdout().is_terminal() && colour_allowed()
}

/// Whether standard error takes colour.
pub fn stderr_takes_colour() -> bool {
    std::io::stderr().is_terminal() && colour_allowed()
}

/// Whether the user allows colour: `NO_COLOR` unset or empty.
fn colour_allowed() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
}

/// `text` in the colour `code` when `colour`, else as it is.
pub fn painted(text: &str, code: Option<&str>, colour: bool) -> String {
    match code {
        Some(code) if colour => format!("\x1b[{code}m{text}\x1b[0m"),
        _ => text.to_owned(),
    }
}

/// The colour of a table cell that is a state: red for the states that need the user
/// (`Failed`, `CrashLoopBackOff`).
pub fn state_colour(cell: &str) -> Option<&'static str> {
    matches!(cell, "Failed" | "CrashLoopBackOff").then_some(RED)
}

/// The SGR code of red.
const RED: &str = "31";
