//! Log capture: each replica's stdout and stderr, merged as `kubectl logs` shows them, go to the
//! replica's log file in the state directory and, line by line with a `worker-1 | ` prefix, to
//! the terminal.
//!
//! A pump is a task per running replica on the runtime's thread (or a thread of the shim's): it
//! reads the pipe in large chunks and writes each chunk to the file as it came, so capture
//! costs the replica one pipe and nothing else; the terminal copy is assembled per line so that
//! replicas' lines never interleave mid-line. Every replica's output goes through a pump, as a
//! container's goes through the kubelet's: the pump keeps the file within the run's
//! [`LogLimit`] (`rotate`: `NAME.log` becomes `NAME.log.1` and so on, the oldest dropped), and
//! records in the log's `index` when it read each chunk and where each run of the replica
//! started and ended (its exit code), which `logs --timestamps`, `--since`, `--previous` and
//! the restart separators read back. Log files are private to their owner (mode 0600), rotated
//! ones and indexes too.
//!
//! Reading a log back (`read`) goes through the files it keeps, oldest first, and follows it
//! across rotations; `lines` reads it as lines with their times and runs.

mod index;
mod lines;
mod read;
mod rotate;

use std::fs::{File, OpenOptions};
use std::io::{self, IsTerminal, PipeReader, Read as _, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::SystemTime;

use tokio::io::AsyncReadExt as _;
use tokio::net::unix::pipe;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use index::index_file;
pub use lines::{LogItem, LogLine, LogSelection, NoPreviousRun, ReplicaLog, Restart, previous_run};
pub use read::{LogReader, LogUsage, kept_log_files, log_usage};
pub use rotate::{Dropped, LogLimit, LogWriter, dropped, dropped_file};

/// The mode of every log file: readable and writable by its owner alone.
const LOG_FILE_MODE: u32 = 0o600;
/// A line longer than this reaches the terminal in pieces rather than waiting for its end.
const MAX_PENDING_LINE: usize = 64 * 1024;
/// How long a pump that found its pipe drained waits before reading again. A replica's line
/// reaches the terminal (or its log file) at most this late; the pipe (1 MiB) holds far more
/// than a fast writer writes meanwhile; and the log's index gets at most one record per this
/// long.
const GATHER: std::time::Duration = std::time::Duration::from_millis(2);
/// How much a pump reads at once.
const CHUNK: usize = 128 * 1024;

/// Where replicas' output goes besides their log files: the terminal's stderr (or nowhere).
#[derive(Debug, Clone)]
pub struct Console {
    inner: Arc<ConsoleInner>,
}

#[derive(Debug)]
struct ConsoleInner {
    /// Serializes lines from different replicas.
    lock: Mutex<()>,
    /// Whether replicas' lines are shown at all.
    show_logs: bool,
    /// Whether trainctl's own messages are shown.
    show_messages: bool,
    /// Whether stderr is a terminal that takes colours.
    colour: bool,
}

/// The colours prefixes cycle through, as ANSI SGR codes.
const PALETTE: [&str; 6] = ["36", "33", "35", "32", "34", "31"];

impl Console {
    /// A console on this process's stderr; `show_logs: false` keeps replicas' output in their
    /// log files only. Colour is used when stderr is a terminal and `NO_COLOR` is not set.
    #[must_use]
    pub fn stderr(show_logs: bool) -> Console {
        let colour = io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        Console {
            inner: Arc::new(ConsoleInner {
                lock: Mutex::new(()),
                show_logs,
                show_messages: true,
                colour,
            }),
        }
    }

    /// A console that shows nothing: a server's runs, whose replicas' output is in their log
    /// files and whose news is in the job's status and events.
    #[must_use]
    pub fn quiet() -> Console {
        Console {
            inner: Arc::new(ConsoleInner {
                lock: Mutex::new(()),
                show_logs: false,
                show_messages: false,
                colour: false,
            }),
        }
    }

    /// The prefix for the `n`th replica named `name`, padded to `width` and coloured on a TTY.
    #[must_use]
    pub fn prefix(&self, name: &str, width: usize, n: usize) -> String {
        if self.inner.colour {
            let colour = PALETTE[n % PALETTE.len()];
            format!("\x1b[{colour}m{name:<width$} |\x1b[0m ")
        } else {
            format!("{name:<width$} | ")
        }
    }

    /// Prints one of trainctl's own messages, between replicas' lines.
    pub fn say(&self, message: &str) {
        if !self.inner.show_messages {
            return;
        }
        let _guard = self.lock();
        let mut err = io::stderr().lock();
        let _ = if self.inner.colour {
            writeln!(err, "\x1b[1mtrainctl:\x1b[0m {message}")
        } else {
            writeln!(err, "trainctl: {message}")
        };
    }

    /// Whether replicas' output is shown (else it only goes to their log files).
    #[must_use]
    pub fn shows_logs(&self) -> bool {
        self.inner.show_logs
    }

    /// Whether this console prints in colour.
    #[must_use]
    pub fn colour(&self) -> bool {
        self.inner.colour
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.inner
            .lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Writes complete `lines` (each ending in `\n`, or a forced piece) after `prefix`.
    fn write_lines(&self, prefix: &str, lines: &[u8]) {
        if !self.inner.show_logs || lines.is_empty() {
            return;
        }
        // Stderr is unbuffered: one write for the whole chunk, not two per line.
        let mut out = Vec::with_capacity(lines.len() + lines.len() / 8 + prefix.len() + 1);
        for line in lines.split_inclusive(|&byte| byte == b'\n') {
            out.extend_from_slice(prefix.as_bytes());
            out.extend_from_slice(line);
            if !line.ends_with(b"\n") {
                out.push(b'\n');
            }
        }
        let _guard = self.lock();
        let _ = io::stderr().lock().write_all(&out);
    }
}

/// A replica's log file, open for appending, written through a pump ([`pump`],
/// [`pump_thread`]) by a [`LogWriter`], which knows it by its path to rotate it.
#[derive(Debug)]
pub struct LogFile {
    file: File,
    path: PathBuf,
}

impl LogFile {
    /// The file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Opens (creating it, mode 0600, and its directory, mode 0700) a replica's log file for appending. The
/// directory is made only when missing: a job's replicas share it.
pub fn open_log_file(path: &Path) -> io::Result<LogFile> {
    let open = || {
        OpenOptions::new()
            .create(true)
            .append(true)
            .mode(LOG_FILE_MODE)
            .open(path)
    };
    let file = match (open(), path.parent()) {
        (Err(error), Some(dir)) if error.kind() == io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(crate::state_dir::DIR_MODE)
                .create(dir)?;
            open()
        }
        (opened, _) => opened,
    }?;
    Ok(LogFile {
        file,
        path: path.to_owned(),
    })
}

/// Starts a task that copies `pipe` into `log` and, prefixed, to `console` until every writer
/// of the pipe has closed it (the replica and all it started have exited); then records the
/// run's exit code, once `exit` gives it. Must be called within a Tokio runtime.
pub fn pump(
    pipe: PipeReader,
    log: LogWriter,
    console: Console,
    prefix: String,
    exit: oneshot::Receiver<i32>,
) -> io::Result<JoinHandle<()>> {
    let pipe = pipe::Receiver::from_owned_fd(OwnedFd::from(pipe))?;
    Ok(tokio::spawn(copy(pipe, log, console, prefix, exit)))
}

async fn copy(
    mut pipe: pipe::Receiver,
    mut log: LogWriter,
    console: Console,
    prefix: String,
    exit: oneshot::Receiver<i32>,
) {
    let mut chunk = vec![0_u8; CHUNK];
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let read = match pipe.read(&mut chunk).await {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        // Read now: a wait below is for more output, not for this.
        let read_at = SystemTime::now();
        if read < chunk.len() {
            // The pipe is drained: let output gather for a moment rather than waking up (and
            // making the writer wake us) for every small write of a chatty replica.
            tokio::time::sleep(GATHER).await;
        }
        let data = &chunk[..read];
        // A full disk must not block the replica: what cannot be written is counted, and the
        // pipe drained all the same.
        log.write_read_at(data, read_at);
        if !console.inner.show_logs {
            continue;
        }
        pending.extend_from_slice(data);
        let complete = match pending.iter().rposition(|&byte| byte == b'\n') {
            Some(last) => last + 1,
            None if pending.len() >= MAX_PENDING_LINE => pending.len(),
            None => 0,
        };
        console.write_lines(&prefix, &pending[..complete]);
        pending.drain(..complete);
    }
    console.write_lines(&prefix, &pending);
    if let Ok(code) = exit.await {
        log.exited(code);
    }
    log.finish();
}

/// Starts a thread that copies `pipe` into `log` until every writer of the pipe has closed it,
/// then records the run's exit code, once `exit` gives it: the pump of a process without a
/// Tokio runtime (the shim), whose replicas show nothing on a terminal.
pub fn pump_thread(
    mut pipe: PipeReader,
    mut log: LogWriter,
    exit: mpsc::Receiver<i32>,
) -> io::Result<thread::JoinHandle<()>> {
    thread::Builder::new()
        .name("log-pump".to_owned())
        .spawn(move || {
            let mut chunk = vec![0_u8; CHUNK];
            loop {
                match pipe.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(read) => {
                        log.write(&chunk[..read]);
                        if read < chunk.len() {
                            // Drained: let output gather, as the task pump does.
                            thread::sleep(GATHER);
                        }
                    }
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            if let Ok(code) = exit.recv() {
                log.exited(code);
            }
            log.finish();
        })
}

#[cfg(test)]
mod tests;
