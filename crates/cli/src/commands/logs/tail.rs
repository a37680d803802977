//! Reading a replica's log from where the last read stopped, as `tail -F` does: the log may not
//! exist yet, may grow between reads, and may be rotated (`NAME.log` to `NAME.log.1`...), whose
//! kept files are read oldest first ([`LogReader`]).

use std::io::{self, Read, Write};
use std::path::PathBuf;

use anyhow::Context;
use trainctl_local::process::logs::LogReader;

use crate::view::prefixed::PrefixedLines;

/// How much is read from a log file at a time.
const CHUNK: usize = 64 * 1024;

/// One replica's log, read so far.
#[derive(Debug)]
pub struct Tail {
    reader: LogReader,
    lines: Option<PrefixedLines>,
}

impl Tail {
    /// The log written to `path`, not read yet; each line is printed after `prefix` when given,
    /// else the bytes are copied as they are.
    pub fn new(path: PathBuf, prefix: Option<String>) -> Tail {
        Tail {
            reader: LogReader::new(path),
            lines: prefix.map(PrefixedLines::new),
        }
    }

    /// Copies what was written since the last call to `out`; with a prefix, a last line not
    /// ended yet is held back unless `at_end` (the log will not grow any more). A log that does
    /// not exist yet has nothing to copy.
    pub fn copy_new(&mut self, out: &mut impl Write, at_end: bool) -> anyhow::Result<()> {
        let mut chunk = vec![0; CHUNK];
        loop {
            let read = match self.reader.read(&mut chunk) {
                Ok(0) => break,
                Ok(read) => read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => {
                    return Err(error)
                        .with_context(|| format!("cannot read {}", self.reader.path().display()));
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_tail_reads_rotated_files_oldest_first_then_follows_the_rotations() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("worker-0.log");
        std::fs::write(dir.path().join("worker-0.log.2"), "one\n").expect("write");
        std::fs::write(dir.path().join("worker-0.log.1"), "two\n").expect("write");
        std::fs::write(&path, "thr").expect("write");
        let mut tail = Tail::new(path.clone(), Some("worker-0 | ".to_owned()));
        let mut out = Vec::new();
        tail.copy_new(&mut out, false).expect("read");
        assert_eq!(out, b"worker-0 | one\nworker-0 | two\n");
        // Rotated as a writer rotates: the file written moves to `.1`, a new one takes its name.
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open");
        file.write_all(b"ee\n").expect("append");
        std::fs::rename(
            dir.path().join("worker-0.log.1"),
            dir.path().join("worker-0.log.2"),
        )
        .expect("rotate");
        std::fs::rename(&path, dir.path().join("worker-0.log.1")).expect("rotate");
        std::fs::write(&path, "four").expect("write");
        tail.copy_new(&mut out, true).expect("read");
        assert_eq!(
            String::from_utf8(out).expect("text"),
            "worker-0 | one\nworker-0 | two\nworker-0 | three\nworker-0 | four\n"
        );
    }
}
