//! Reading a replica's log file from where the last read stopped, as `tail -f` does: the file
//! may not exist yet, and may grow between reads.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::PathBuf;

use anyhow::Context;

/// How much is read from a log file at a time.
const CHUNK: usize = 64 * 1024;

/// A line longer than this is printed in pieces rather than held back whole until it ends.
const MAX_PENDING_LINE: usize = 64 * 1024;

/// One replica's log file, read so far.
#[derive(Debug)]
pub struct Tail {
    path: PathBuf,
    file: Option<File>,
    lines: Option<PrefixedLines>,
}

impl Tail {
    /// The log file at `path`, not read yet; each line is printed after `prefix` when given,
    /// else the bytes are copied as they are.
    pub fn new(path: PathBuf, prefix: Option<String>) -> Tail {
        Tail {
            path,
            file: None,
            lines: prefix.map(PrefixedLines::new),
        }
    }

    /// Copies what was written since the last call to `out`; with a prefix, a last line not
    /// ended yet is held back unless `at_end` (the file will not grow any more). A file that does
    /// not exist yet has nothing to copy.
    pub fn copy_new(&mut self, out: &mut impl Write, at_end: bool) -> anyhow::Result<()> {
        if self.file.is_none() {
            match File::open(&self.path) {
                Ok(file) => self.file = Some(file),
                Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(error) => {
                    return Err(error)
                        .with_context(|| format!("cannot read {}", self.path.display()));
                }
            }
        }
        let Some(file) = &mut self.file else {
            return Ok(());
        };
        let mut chunk = vec![0; CHUNK];
        loop {
            let read = match file.read(&mut chunk) {
                Ok(0) => break,
                Ok(read) => read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => {
                    return Err(error)
                        .with_context(|| format!("cannot read {}", self.path.display()));
                }
            };
            match &mut self.lines {
                Some(lines) => lines.push(&chunk[..read], out)?,
                None => out.write_all(&chunk[..read])?,
            }
        }
        if at_end && let Some(lines) = &mut self.lines {
            lines.finish(out)?;
        }
        Ok(())
    }
}

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

    #[test]
    fn a_tail_copies_only_what_was_appended_since_the_last_read() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("worker-0.log");
        let mut tail = Tail::new(path.clone(), None);
        let mut out = Vec::new();
        tail.copy_new(&mut out, false).expect("no file yet");
        assert!(out.is_empty());
        std::fs::write(&path, "one\n").expect("write");
        tail.copy_new(&mut out, false).expect("read");
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open");
        file.write_all(b"two").expect("append");
        tail.copy_new(&mut out, true).expect("read");
        assert_eq!(out, b"one\ntwo");
    }
}
