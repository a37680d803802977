//! How `trainctl logs` prints a replica's log, the same for a job on this machine and on a
//! cluster: each line after the replica's prefix (`worker-0 | `) and, with `--timestamps`, its
//! time; a restart as a line of its own between the lines of two runs.

/// A run of a replica that began after another: where its log shows a restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restart {
    /// The run that began: `n` for the `n`th restart.
    pub run: u32,
    /// When it began, in Unix nanoseconds.
    pub at: i64,
    /// The exit code of the run before, when it is known.
    pub previous_exit: Option<i32>,
}

impl Restart {
    /// Appends the line that marks the restart of `replica` to `out`, after [`lead`], such as
    /// (for run 2, after an exit code of 1):
    ///
    /// ```text
    /// --- worker-0: restart 2 at 2026-11-24T10:00:00.123Z (the previous run exited with code 1) ---
    /// ```
    pub fn render(&self, replica: &str, prefix: Option<&str>, timestamps: bool, out: &mut Vec<u8>) {
        lead(prefix, timestamps.then_some(self.at), out);
        let exit = self.previous_exit.map_or_else(String::new, |code| {
            format!(" (the previous run exited with code {code})")
        });
        let line = format!(
            "--- {replica}: restart {} at {}{exit} ---\n",
            self.run,
            rfc3339_nanos(self.at, 3)
        );
        out.extend_from_slice(line.as_bytes());
    }
}

/// Appends what precedes a line of a log to `out`: `prefix` when given (`worker-0 | `), then the
/// line's time `at` (Unix nanoseconds) when given, in RFC 3339 with nanoseconds as `kubectl logs
/// --timestamps` prints it, and a space.
pub fn lead(prefix: Option<&str>, at: Option<i64>, out: &mut Vec<u8>) {
    out.extend_from_slice(prefix.unwrap_or_default().as_bytes());
    if let Some(at) = at {
        out.extend_from_slice(rfc3339_nanos(at, 9).as_bytes());
        out.push(b' ');
    }
}

/// `nanos` (since the Unix epoch) in RFC 3339, UTC, with `digits` fractional digits.
fn rfc3339_nanos(nanos: i64, digits: usize) -> String {
    match jiff::Timestamp::from_nanosecond(i128::from(nanos)) {
        Ok(time) => format!("{time:.digits$}"),
        Err(_) => format!("@{nanos}ns"),
    }
}

#[cfg(test)]
mod tests {
    use super::{Restart, lead};

    fn rendered(restart: Restart, prefix: Option<&str>, timestamps: bool) -> String {
        let mut out = Vec::new();
        restart.render("worker-0", prefix, timestamps, &mut out);
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn a_restart_is_a_line_naming_the_replica_the_run_its_time_and_the_exit_before() {
        let restart = Restart {
            run: 2,
            at: 1_764_000_000_123_456_789,
            previous_exit: Some(1),
        };
        assert_eq!(
            rendered(restart, None, false),
            "--- worker-0: restart 2 at 2025-11-24T16:00:00.123Z (the previous run exited with \
             code 1) ---\n"
        );
        assert_eq!(
            rendered(
                Restart {
                    previous_exit: None,
                    ..restart
                },
                Some("worker-0 | "),
                true
            ),
            "worker-0 | 2025-11-24T16:00:00.123456789Z --- worker-0: restart 2 at \
             2025-11-24T16:00:00.123Z ---\n"
        );
    }

    #[test]
    fn the_lead_is_the_prefix_then_the_time_when_known() {
        let mut out = Vec::new();
        lead(Some("ps-0 | "), None, &mut out);
        lead(None, Some(0), &mut out);
        assert_eq!(
            String::from_utf8(out).expect("UTF-8"),
            "ps-0 | 1970-01-01T00:00:00.000000000Z "
        );
    }
}
