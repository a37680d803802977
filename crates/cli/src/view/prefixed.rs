//! The lines `logs` prints of every replica, each after its replica's prefix (`worker-1 | `), as
//! `run` prints them: from a log file on this machine, or a pod's log on a cluster.

use std::io::{self, Write};

/// A line longer than this is printed in pieces rather than held back whole until it ends.
const MAX_PENDING_LINE: usize = 64 * 1024;

/// Bytes cut into lines, each written after a prefix (`worker-1 | `) once it is complete.
#[derive(Debug)]
pub struct PrefixedLines {
    prefix: String,
    pending: Vec<u8>,
}

impl PrefixedLines {
    /// Lines to print after `prefix`.
    pub fn new(prefix: String) -> PrefixedLines {
        PrefixedLines {
            prefix,
            pending: Vec::new(),
        }
    }

    /// Writes every line that `data` completes; keeps the rest for later.
    pub fn push(&mut self, data: &[u8], out: &mut impl Write) -> io::Result<()> {
        self.pending.extend_from_slice(data);
        let complete = match self.pending.iter().rposition(|&byte| byte == b'\n') {
            Some(last) => last + 1,
            None if self.pending.len() >= MAX_PENDING_LINE => self.pending.len(),
            None => 0,
        };
        for line in self.pending[..complete].split_inclusive(|&byte| byte == b'\n') {
            write_line(&self.prefix, line, out)?;
        }
        self.pending.drain(..complete);
        Ok(())
    }

    /// Writes the last line, ended with a newline, if it was not.
    pub fn finish(&mut self, out: &mut impl Write) -> io::Result<()> {
        if !self.pending.is_empty() {
            write_line(&self.prefix, &self.pending, out)?;
            self.pending.clear();
        }
        Ok(())
    }
}

/// Writes `line` after `prefix`, ended with a newline.
fn write_line(prefix: &str, line: &[u8], out: &mut impl Write) -> io::Result<()> {
    out.write_all(prefix.as_bytes())?;
    out.write_all(line)?;
    if !line.ends_with(b"\n") {
        out.write_all(b"\n")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pushed(chunks: &[&[u8]], finish: bool) -> String {
        let mut lines = PrefixedLines::new("worker-0 | ".to_owned());
        let mut out = Vec::new();
        for chunk in chunks {
            lines.push(chunk, &mut out).expect("write to a Vec");
        }
        if finish {
            lines.finish(&mut out).expect("write to a Vec");
        }
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn each_complete_line_is_prefixed() {
        assert_eq!(
            pushed(&[b"one\ntwo\n"], false),
            "worker-0 | one\nworker-0 | two\n"
        );
    }

    #[test]
    fn a_line_split_across_reads_is_printed_once_whole() {
        assert_eq!(pushed(&[b"on", b"e\ntw"], false), "worker-0 | one\n");
        assert_eq!(
            pushed(&[b"on", b"e\ntw", b"o\n"], false),
            "worker-0 | one\nworker-0 | two\n"
        );
    }

    #[test]
    fn the_last_line_without_newline_is_ended_at_finish() {
        assert_eq!(
            pushed(&[b"one\nlast"], true),
            "worker-0 | one\nworker-0 | last\n"
        );
    }

    #[test]
    fn empty_lines_keep_their_prefix() {
        assert_eq!(pushed(&[b"\n\n"], true), "worker-0 | \nworker-0 | \n");
    }

    #[test]
    fn an_endless_line_is_printed_in_pieces() {
        let long = vec![b'x'; MAX_PENDING_LINE];
        let printed = pushed(&[&long], false);
        assert_eq!(printed.len(), "worker-0 | ".len() + MAX_PENDING_LINE + 1);
    }
}
