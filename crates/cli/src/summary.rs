//! The end of `trainctl run`: how the job ended, and each replica's exit and restarts.

use std::fmt::Write as _;
use std::time::Duration;

use trainctl_local::process::logs::Console;
use trainctl_local::runner::{RunEnd, RunReport};

use crate::paint;
use crate::table::Table;

/// Prints the summary on stderr.
pub fn print(report: &RunReport, console: &Console) {
    let job = &report.job;
    let colour = paint::stderr_takes_colour();
    let outcome = match report.end {
        RunEnd::Succeeded => "Succeeded".to_owned(),
        RunEnd::Failed => paint::painted("Failed", paint::state_colour("Failed"), colour),
        RunEnd::Interrupted(signal) => format!("interrupted ({})", signal.as_str()),
        RunEnd::Suspended => "suspended".to_owned(),
        RunEnd::Deleted => "deleted".to_owned(),
        RunEnd::Shutdown => "stopped with the server".to_owned(),
    };
    // From its admission to its end, as `get` shows it; a run that ended before then (or
    // before an end was recorded) counts from its own start.
    let status = job.status();
    let ran = status
        .and_then(|status| {
            let started = status.start_time.as_ref()?.0;
            let ended = status.completion_time.as_ref()?.0;
            Duration::try_from(ended.duration_since(started)).ok()
        })
        .unwrap_or(report.duration);
    let mut text = format!(
        "{}/{} {outcome} after {:.1}s",
        job.kind().singular(),
        job.name(),
        ran.as_secs_f64()
    );
    if report.replicas.is_empty() {
        console.say(&text);
        return;
    }
    let mut table = Table::new(["REPLICA", "STATE", "EXIT", "RESTARTS", "PORT", "GPUS"]);
    for replica in &report.replicas {
        table.row([
            replica.slot.to_string(),
            replica.state.as_str().to_owned(),
            replica
                .exit_code
                .map_or_else(|| "-".to_owned(), |code| code.to_string()),
            replica.restarts.to_string(),
            replica
                .port
                .map_or_else(|| "-".to_owned(), |port| port.to_string()),
            if replica.gpus.is_empty() {
                "-".to_owned()
            } else {
                replica
                    .gpus
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            },
        ]);
    }
    let rendered = if colour {
        table.render_painted(paint::state_colour)
    } else {
        table.render()
    };
    for line in rendered.lines() {
        let _ = write!(text, "\n  {line}");
    }
    console.say(&text);
}
