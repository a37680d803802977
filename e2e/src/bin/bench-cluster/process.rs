//! A measured process: started with its output in a log file, its memory and CPU read from
//! `/proc`, killed with the driver (`kill_on_drop`) when anything goes wrong.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Clock ticks a second in `/proc/PID/stat` (`USER_HZ`: 100 on every Linux architecture this
/// runs on; the kernel scales its own `HZ` to it).
const USER_HZ: f64 = 100.0;

/// A started subject.
pub struct Process {
    child: Child,
    pid: u32,
    log: PathBuf,
    stdin: Option<ChildStdin>,
    stdout: Option<Lines<BufReader<ChildStdout>>>,
}

/// The process's memory and CPU at one moment.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Resident memory (`VmRSS`), KiB.
    pub rss_kib: u64,
    /// Peak resident memory so far (`VmHWM`), KiB.
    pub hwm_kib: u64,
    /// User and system CPU time so far (`utime + stime`), seconds.
    pub cpu_seconds: f64,
}

impl Process {
    /// Starts `command` with `env` added, its stderr (and its stdout unless `piped`) into `log`;
    /// `piped` also gives it a stdin to write to.
    pub fn spawn(
        command: &[String],
        env: &[(String, String)],
        log: &Path,
        piped: bool,
    ) -> Result<Self> {
        let (program, arguments) = command.split_first().context("an empty command")?;
        let file = std::fs::File::create(log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let mut child = Command::new(program);
        child
            .args(arguments)
            .envs(env.iter().map(|(name, value)| (name, value)))
            .stderr(file.try_clone()?)
            .kill_on_drop(true);
        if piped {
            child.stdin(Stdio::piped()).stdout(Stdio::piped());
        } else {
            child.stdin(Stdio::null()).stdout(file);
        }
        let mut child = child
            .spawn()
            .with_context(|| format!("cannot start {program}"))?;
        let pid = child.id().context("the process is gone at once")?;
        let stdin = child.stdin.take();
        let stdout = child
            .stdout
            .take()
            .map(|stdout| BufReader::new(stdout).lines());
        Ok(Process {
            child,
            pid,
            log: log.to_owned(),
            stdin,
            stdout,
        })
    }

    /// Waits until a line of the log satisfies `ready`; fails if the process exits first or
    /// `limit` passes.
    pub async fn await_log(&mut self, ready: fn(&str) -> bool, limit: Duration) -> Result<()> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            if text.lines().any(ready) {
                return Ok(());
            }
            if let Some(status) = self.child.try_wait()? {
                bail!("it exited with {status}: see {}", self.log.display());
            }
            if tokio::time::Instant::now() > deadline {
                bail!("not within {limit:?}: see {}", self.log.display());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The next line of its stdout, within `limit`.
    pub async fn read_line(&mut self, limit: Duration) -> Result<String> {
        let lines = self.stdout.as_mut().context("no stdout to read")?;
        match tokio::time::timeout(limit, lines.next_line()).await {
            Ok(Ok(Some(line))) => Ok(line),
            Ok(Ok(None)) => bail!("its stdout closed: see {}", self.log.display()),
            Ok(Err(error)) => Err(error.into()),
            Err(_) => bail!("no line within {limit:?}: see {}", self.log.display()),
        }
    }

    /// Writes a line to its stdin.
    pub async fn send_line(&mut self, line: &str) -> Result<()> {
        let stdin = self.stdin.as_mut().context("no stdin to write to")?;
        stdin.write_all(format!("{line}\n").as_bytes()).await?;
        stdin.flush().await?;
        Ok(())
    }

    /// Closes its stdin (`bench-floor` exits then).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Its memory and CPU now.
    pub fn sample(&self) -> Result<Sample> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid))
            .context("the process is gone")?;
        let field = |name: &str| -> Result<u64> {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
                .and_then(|value| value.split_whitespace().next()?.parse().ok())
                .with_context(|| format!("no {name} in /proc/{}/status", self.pid))
        };
        Ok(Sample {
            rss_kib: field("VmRSS")?,
            hwm_kib: field("VmHWM")?,
            cpu_seconds: cpu_of(self.pid).context("cannot read /proc/PID/stat")?,
        })
    }

    /// Stops it: `grace` to exit by itself (`bench-floor`, its stdin closed), then `SIGKILL`.
    /// The measurements are taken; nothing it would do on a graceful stop is measured.
    pub async fn stop(mut self, grace: Duration) {
        let exited = tokio::time::timeout(grace, self.child.wait()).await;
        if !matches!(exited, Ok(Ok(_))) {
            let _ = self.child.kill().await;
        }
    }
}

/// The CPU seconds (user and system) process `pid` has used.
pub fn cpu_of(pid: u32) -> Option<f64> {
    cpu_seconds(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// `utime + stime` of a `/proc/PID/stat` line, in seconds. The command name (2nd field) is in
/// parentheses and may hold spaces: the fields are counted after its closing parenthesis.
#[expect(
    clippy::cast_precision_loss,
    reason = "exact below 2^52 ticks, over a million years of CPU"
)]
fn cpu_seconds(stat: &str) -> Option<f64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3, so utime (14) and stime (15) are at 11 and 12.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / USER_HZ)
}

/// A TCP port free on this machine now (for upstream's webhook server, which cannot be off).
pub fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_read_after_the_command_name() {
        let stat = "4242 (trainctl op (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 \
                    9 0 1234 100000 2000 18446744073709551615";
        assert_eq!(cpu_seconds(stat), Some(3.25));
    }

    #[test]
    fn this_process_can_be_read() {
        let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
        assert!(cpu_seconds(&stat).is_some());
    }
}
