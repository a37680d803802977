//! A replica's output as the shim wires it: through a pipe to a pump thread that keeps its log
//! within its limit and records when each chunk was read and how each run ended (the log's
//! index), as the kubelet reads a container's output.

use std::io;
use std::process::Stdio;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use nix::fcntl::{FcntlArg, fcntl};

use super::super::logs::{LogFile, LogLimit, LogWriter, pump_thread};

/// How long the shim waits for a pump to write a replica's last lines once the replica and all
/// it started are killed (only a pipe's last megabyte is left then).
const PUMP_DRAINED_WITHIN: Duration = Duration::from_secs(2);

/// A replica's output before its process starts: its stdout and stderr (the pipe's write end),
/// and its pump, to start once the process has.
pub(super) type Output = (Stdio, Stdio, UnstartedPump);

/// What a replica's pump will read from and write to.
pub(super) struct UnstartedPump {
    pipe: io::PipeReader,
    log: LogFile,
    limit: LogLimit,
    /// When the replica is about to start: its run's start in the log's index.
    started: SystemTime,
}

/// The pump of a started replica's output: the thread, and where its exit code goes so that
/// the pump records it after the replica's last lines.
pub(super) struct Pump {
    thread: thread::JoinHandle<()>,
    exit: mpsc::Sender<i32>,
}

/// The capacity asked for each replica's output pipe (Linux's default unprivileged maximum),
/// as the reaper's: a chatty replica writes on while the pump gathers.
const PIPE_SIZE: i32 = 1 << 20;

/// The output of a replica about to start, logged to `log` within `limit`.
pub(super) fn output_of(log: LogFile, limit: LogLimit) -> io::Result<Output> {
    let (pipe, writer) = io::pipe()?;
    // The default size is kept where the system refuses.
    let _ = fcntl(&pipe, FcntlArg::F_SETPIPE_SZ(PIPE_SIZE));
    let copy = writer.try_clone()?;
    let pump = UnstartedPump {
        pipe,
        log,
        limit,
        started: SystemTime::now(),
    };
    Ok((writer.into(), copy.into(), pump))
}

impl UnstartedPump {
    /// Starts the pump, once the replica has started (and the command holding the pipe's write
    /// ends is dropped).
    pub(super) fn start(self) -> io::Result<Pump> {
        let log = LogWriter::starting(self.log, self.limit, self.started);
        let (exit, exited) = mpsc::channel();
        let thread = pump_thread(self.pipe, log, exited)?;
        Ok(Pump { thread, exit })
    }
}

impl Pump {
    /// Hands the replica's exit code to the pump, then waits until it has written the replica's
    /// last lines and the code, for up to [`PUMP_DRAINED_WITHIN`].
    pub(super) fn finish(self, code: i32) {
        let _ = self.exit.send(code);
        let deadline = Instant::now() + PUMP_DRAINED_WITHIN;
        while !self.thread.is_finished() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(1));
        }
    }
}
