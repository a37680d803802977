//! The last lines of a replica's log, for the notification of a job that failed: read with the
//! log reader (every file the log keeps, oldest first), keeping only the last lines, each cut to
//! a bounded length so that a replica that never prints a newline cannot swell the payload.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::path::PathBuf;

use crate::process::logs::LogReader;

/// How many of a failed replica's last lines a notification carries.
pub const TAIL_LINES: usize = 20;

/// The longest line a notification carries, in bytes; a longer one is cut and ends with `…`.
pub const MAX_LINE_BYTES: usize = 4096;

/// The last `TAIL_LINES` lines of the log written to `path` (every file it keeps), without
/// their line ends; a log that does not exist has none.
pub fn last_lines(path: PathBuf) -> io::Result<Vec<String>> {
    let mut reader = LogReader::new(path);
    let mut tail = Tail::new(TAIL_LINES, MAX_LINE_BYTES);
    let mut chunk = vec![0_u8; 64 * 1024];
    loop {
        match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(read) => tail.push(&chunk[..read]),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(tail.finish())
}

/// The last lines of a stream of bytes, fed in chunks.
#[derive(Debug)]
struct Tail {
    /// The complete lines kept, oldest first.
    lines: VecDeque<String>,
    /// The line being read, up to `max_bytes`.
    current: Vec<u8>,
    /// Whether the line being read was longer than `max_bytes`.
    cut: bool,
    max_lines: usize,
    max_bytes: usize,
}

impl Tail {
    fn new(max_lines: usize, max_bytes: usize) -> Tail {
        Tail {
            lines: VecDeque::with_capacity(max_lines + 1),
            current: Vec::new(),
            cut: false,
            max_lines,
            max_bytes,
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let end = bytes.iter().position(|&byte| byte == b'\n');
            let part = &bytes[..end.unwrap_or(bytes.len())];
            let room = self.max_bytes.saturating_sub(self.current.len());
            self.current
                .extend_from_slice(&part[..part.len().min(room)]);
            self.cut |= part.len() > room;
            match end {
                Some(end) => {
                    self.end_line();
                    bytes = &bytes[end + 1..];
                }
                None => bytes = &[],
            }
        }
    }

    fn end_line(&mut self) {
        if self.current.last() == Some(&b'\r') && !self.cut {
            self.current.pop();
        }
        let mut line = String::from_utf8_lossy(&self.current).into_owned();
        if self.cut {
            line.push('…');
        }
        self.current.clear();
        self.cut = false;
        if self.lines.len() == self.max_lines {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }

    /// The lines kept; a last line without a line end counts.
    fn finish(mut self) -> Vec<String> {
        if !self.current.is_empty() || self.cut {
            self.end_line();
        }
        self.lines.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail_of(chunks: &[&[u8]], max_lines: usize, max_bytes: usize) -> Vec<String> {
        let mut tail = Tail::new(max_lines, max_bytes);
        for chunk in chunks {
            tail.push(chunk);
        }
        tail.finish()
    }

    #[test]
    fn keeps_the_last_lines_across_chunks_without_line_ends() {
        let lines = tail_of(&[b"one\ntw", b"o\r\nthree\nfo", b"ur"], 3, 100);
        assert_eq!(lines, ["two", "three", "four"]);
    }

    #[test]
    fn a_log_that_ends_with_a_newline_has_no_empty_last_line() {
        assert_eq!(tail_of(&[b"a\nb\n"], 5, 100), ["a", "b"]);
        assert_eq!(tail_of(&[b"a\n\nb\n"], 5, 100), ["a", "", "b"]);
        assert!(tail_of(&[], 5, 100).is_empty());
    }

    #[test]
    fn long_lines_are_cut_and_say_so() {
        let lines = tail_of(&[b"0123456789", b"abc\nshort\n"], 5, 4);
        assert_eq!(lines, ["0123…", "shor…"]);
        assert_eq!(tail_of(&[b"abcd\n"], 5, 4), ["abcd"]);
    }

    #[test]
    fn reads_every_file_the_log_keeps_oldest_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("worker-0.log");
        std::fs::write(path.with_extension("log.1"), "old 1\nold 2\n").expect("write");
        let current: Vec<String> = (1..=25).map(|n| format!("line {n}")).collect();
        std::fs::write(&path, current.join("\n") + "\n").expect("write");
        let lines = last_lines(path.clone()).expect("read");
        let expected: Vec<String> = (6..=25).map(|n| format!("line {n}")).collect();
        assert_eq!(lines, expected);
        std::fs::write(&path, "new\n").expect("write");
        assert_eq!(last_lines(path).expect("read"), ["old 1", "old 2", "new"]);
        assert!(
            last_lines(dir.path().join("absent.log"))
                .expect("no log")
                .is_empty()
        );
    }
}
