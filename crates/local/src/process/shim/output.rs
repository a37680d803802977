//! A replica's output as the shim wires it: through a pipe to a pump that keeps its log within
//! its limit, or straight to its log file.

use std::io;
use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

use super::super::logs::{LogFile, LogLimit};

/// How long the shim waits for a pump to write a replica's last lines once the replica and all
/// it started are killed (only a pipe's last megabyte is left then).
const PUMP_DRAINED_WITHIN: Duration = Duration::from_secs(2);

/// A replica's output: its stdout and stderr, and what its pump reads from and writes to.
pub(super) type Output = (Stdio, Stdio, Option<(io::PipeReader, LogFile)>);

/// The replica's stdout and stderr: a pipe to a pump (with its read end and the log, for
/// [`pump_thread`](super::super::logs::pump_thread)) when its log is kept within a limit, else the log file itself.
pub(super) fn output_of(log: LogFile, limit: LogLimit) -> io::Result<Output> {
    if !limit.rotates() {
        let copy = log.try_clone()?;
        return Ok((log.into(), copy.into(), None));
    }
    let (reader, writer) = io::pipe()?;
    let copy = writer.try_clone()?;
    Ok((writer.into(), copy.into(), Some((reader, log))))
}

/// Waits until `pump` has ended, for up to [`PUMP_DRAINED_WITHIN`].
pub(super) fn wait_for_pump(pump: &thread::JoinHandle<()>) {
    let deadline = Instant::now() + PUMP_DRAINED_WITHIN;
    while !pump.is_finished() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(1));
    }
}
