//! Log capture: each replica's stdout and stderr, merged as `kubectl logs` shows them, go to the
//! replica's log file in the state directory and, line by line with a `worker-1 | ` prefix, to
//! the terminal.
//!
//! A pump is a task per running replica on the runtime's thread: it reads the pipe in large chunks
//! and writes each chunk to the file as it came, so capture costs the replica one pipe and nothing
//! else; the terminal copy is assembled per line so that replicas' lines never interleave
//! mid-line. When nothing goes to the terminal (`trainctl run -q`, a server's runs), there is no
//! pipe and no pump: the replica writes to its log file itself.

use std::fs::{File, OpenOptions};
use std::io::{self, IsTerminal, PipeReader, Write};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncReadExt as _;
use tokio::net::unix::pipe;
use tokio::task::JoinHandle;

/// A line longer than this reaches the terminal in pieces rather than waiting for its end.
const MAX_PENDING_LINE: usize = 64 * 1024;
/// How long a pump that found its pipe drained waits before reading again. A replica's line
/// reaches the terminal at most this late; the pipe (1 MiB) holds far more than a fast writer
/// writes meanwhile.
const GATHER: std::time::Duration = std::time::Duration::from_millis(2);
/// How much a pump reads at once.
const CHUNK: usize = 128 * 1024;

/// Where replicas' prefixed lines go: the terminal's stderr (or nowhere).
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

/// Opens (creating it and its directory) a replica's log file for appending. The directory is
/// made only when missing: a job's replicas share it.
pub fn open_log_file(path: &Path) -> io::Result<File> {
    let open = || OpenOptions::new().create(true).append(true).open(path);
    match (open(), path.parent()) {
        (Err(error), Some(dir)) if error.kind() == io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)?;
            open()
        }
        (opened, _) => opened,
    }
}

/// Starts a task that copies `pipe` into `file` and, prefixed, to `console` until every writer
/// of the pipe has closed it (the replica and all it started have exited). Must be called within
/// a Tokio runtime.
pub fn pump(
    pipe: PipeReader,
    file: File,
    console: Console,
    prefix: String,
) -> io::Result<JoinHandle<()>> {
    let pipe = pipe::Receiver::from_owned_fd(OwnedFd::from(pipe))?;
    Ok(tokio::spawn(copy(pipe, file, console, prefix)))
}

async fn copy(mut pipe: pipe::Receiver, mut file: File, console: Console, prefix: String) {
    let mut chunk = vec![0_u8; CHUNK];
    let mut pending: Vec<u8> = Vec::new();
    let mut file_ok = true;
    loop {
        let read = match pipe.read(&mut chunk).await {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if read < chunk.len() {
            // The pipe is drained: let output gather for a moment rather than waking up (and
            // making the writer wake us) for every small write of a chatty replica.
            tokio::time::sleep(GATHER).await;
        }
        let data = &chunk[..read];
        if file_ok && file.write_all(data).is_err() {
            // A full disk must not block the replica: keep draining the pipe.
            file_ok = false;
        }
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
    let _ = file.flush();
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    #[test]
    fn a_log_file_is_made_with_its_directories_then_appended_to() {
        let dir = tempfile::tempdir().expect("temp dir");
        let first = dir.path().join("logs/job/worker-0.log");
        let second = dir.path().join("logs/job/worker-1.log");
        writeln!(open_log_file(&first).expect("log file"), "one").expect("write");
        writeln!(open_log_file(&first).expect("log file"), "two").expect("write");
        writeln!(open_log_file(&second).expect("log file"), "three").expect("write");
        let read = |path| std::fs::read_to_string(path).expect("read");
        assert_eq!(
            (read(&first), read(&second)),
            ("one\ntwo\n".to_owned(), "three\n".to_owned())
        );
        let error = open_log_file(dir.path()).expect_err("a directory is no log file");
        assert_ne!(error.kind(), io::ErrorKind::NotFound, "{error}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_pump_copies_everything_to_the_file_until_the_writers_close() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("logs/worker-0.log");
        let file = open_log_file(&path).expect("log file");
        let (reader, mut writer) = io::pipe().expect("pipe");
        let console = Console::stderr(false);
        let handle = pump(reader, file, console, "worker-0 | ".to_owned()).expect("pump");
        let writing = std::thread::spawn(move || {
            let mut expected = Vec::new();
            for line in 0..10_000 {
                let text = format!("line {line}\n");
                writer.write_all(text.as_bytes()).expect("write");
                expected.extend_from_slice(text.as_bytes());
            }
            writer.write_all(b"no newline at the end").expect("write");
            expected.extend_from_slice(b"no newline at the end");
            expected
        });
        handle.await.expect("pump task");
        let expected = writing.join().expect("writer");
        assert_eq!(std::fs::read(&path).expect("read log"), expected);
    }

    #[test]
    fn log_files_are_appended_to_across_restarts() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("chief-0.log");
        for run in ["first\n", "second\n"] {
            let mut file = open_log_file(&path).expect("log file");
            file.write_all(run.as_bytes()).expect("write");
        }
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            "first\nsecond\n"
        );
    }

    #[test]
    fn prefixes_are_padded_and_plain_without_a_terminal() {
        let console = Console {
            inner: Arc::new(ConsoleInner {
                lock: Mutex::new(()),
                show_logs: true,
                show_messages: true,
                colour: false,
            }),
        };
        assert_eq!(console.prefix("ps-0", 8, 3), "ps-0     | ");
    }
}
