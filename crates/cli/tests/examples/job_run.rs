//! A `trainctl run` of an example in the background, its stderr read as it comes.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use trainctl_cli_harness::{Run, signal};

/// How long one job may take before the test kills `trainctl` and fails: several times what
/// the slowest of them (MWMS with a kill and three restarts, ~50 s) takes on a busy 2-core box.
const JOB_TIMEOUT: Duration = Duration::from_secs(240);
/// How long trainctl's stderr may stay open after it exited (its replicas' output is copied
/// by trainctl itself, so nothing should hold it).
const STDERR_AFTER_EXIT: Duration = Duration::from_secs(10);

/// What a running `trainctl run` reports, in order.
enum Event {
    /// One line of its stderr.
    Line(String),
    /// Its stderr closed.
    StderrClosed,
    /// It exited.
    Exited(ExitStatus),
}

/// A `trainctl run` in the background, its stderr read line by line as it comes; killed if the
/// test ends before it does, or when it runs past [`JOB_TIMEOUT`].
pub(crate) struct JobRun {
    pid: u32,
    events: Receiver<Event>,
    stdout: Option<JoinHandle<String>>,
    stderr: String,
    stderr_open: bool,
    status: Option<ExitStatus>,
    deadline: Instant,
}

impl JobRun {
    /// Starts `command` with stdout and stderr piped.
    pub(crate) fn start(mut command: Command) -> JobRun {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the trainctl binary starts");
        let deadline = Instant::now() + JOB_TIMEOUT;
        let mut stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let (events, receiver) = channel();
        let lines: Sender<Event> = events.clone();
        std::thread::spawn(move || {
            let mut stderr = BufReader::new(stderr);
            let mut line = Vec::new();
            while stderr.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                let text = String::from_utf8_lossy(&line)
                    .trim_end_matches('\n')
                    .to_owned();
                if lines.send(Event::Line(text)).is_err() {
                    return;
                }
                line.clear();
            }
            let _ = lines.send(Event::StderrClosed);
        });
        let pid = child.id();
        std::thread::spawn(move || {
            let status = child.wait().expect("wait for trainctl");
            let _ = events.send(Event::Exited(status));
        });
        let stdout = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stdout.read_to_string(&mut text);
            text
        });
        JobRun {
            pid,
            events: receiver,
            stdout: Some(stdout),
            stderr: String::new(),
            stderr_open: true,
            status: None,
            deadline,
        }
    }

    /// The next event, or a failed test (with trainctl killed) at the deadline.
    fn next_event(&mut self, what: &str) -> Event {
        let left = self.deadline.saturating_duration_since(Instant::now());
        match self.events.recv_timeout(left) {
            Ok(event) => event,
            Err(RecvTimeoutError::Timeout) => {
                self.kill();
                panic!(
                    "timed out waiting for {what} (trainctl: {}); stderr so far:\n{}",
                    self.status
                        .map_or_else(|| "running".to_owned(), |status| status.to_string()),
                    self.stderr
                );
            }
            Err(RecvTimeoutError::Disconnected) => {
                unreachable!("the waiting thread reports trainctl's exit before it ends")
            }
        }
    }

    /// The next line of trainctl's stderr, `None` once it is closed.
    fn next_line(&mut self, what: &str) -> Option<String> {
        while self.stderr_open {
            match self.next_event(what) {
                Event::Line(line) => {
                    self.stderr.push_str(&line);
                    self.stderr.push('\n');
                    return Some(line);
                }
                Event::StderrClosed => self.stderr_open = false,
                Event::Exited(status) => {
                    // Whatever still holds trainctl's stderr now is a process it left behind.
                    self.deadline = self.deadline.min(Instant::now() + STDERR_AFTER_EXIT);
                    self.status = Some(status);
                }
            }
        }
        None
    }

    /// Reads stderr up to the first line for which `probe` gives a value.
    pub(crate) fn wait_for_line<T>(
        &mut self,
        what: &str,
        mut probe: impl FnMut(&str) -> Option<T>,
    ) -> T {
        while let Some(line) = self.next_line(what) {
            if let Some(value) = probe(&line) {
                return value;
            }
        }
        panic!("trainctl closed its stderr before {what}:\n{}", self.stderr);
    }

    /// Waits for trainctl to exit (reading all of its output); what it did.
    pub(crate) fn finish(mut self) -> Run {
        while self.next_line("trainctl to finish the job").is_some() {}
        while self.status.is_none() {
            if let Event::Exited(status) = self.next_event("trainctl to exit") {
                self.status = Some(status);
            }
        }
        let stdout = self
            .stdout
            .take()
            .expect("stdout is collected once")
            .join()
            .expect("the stdout reader does not panic");
        let run = Run {
            code: self.status.and_then(|status| status.code()),
            stdout,
            stderr: std::mem::take(&mut self.stderr),
        };
        assert!(
            !run.stderr.contains("panicked"),
            "trainctl panicked:\n{run}"
        );
        run
    }

    /// Kills trainctl unless it has exited already.
    fn kill(&mut self) {
        if self.status.is_none() {
            signal(self.pid, "KILL");
        }
    }
}

impl Drop for JobRun {
    fn drop(&mut self) {
        self.kill();
    }
}
