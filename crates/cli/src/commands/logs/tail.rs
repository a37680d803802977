//! Reading a replica's log file from where the last read stopped, as `tail -f` does: the file
//! may not exist yet, and may grow between reads.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::PathBuf;

use anyhow::Context;

use crate::view::prefixed::PrefixedLines;

/// How much is read from a log file at a time.
const CHUNK: usize = 64 * 1024;

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
}
