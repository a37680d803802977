//! One replica's log as `logs` prints it, read from where the last read stopped, as `tail -F`
//! does: the log may not exist yet, may grow between reads, and may be rotated (`NAME.log` to
//! `NAME.log.1`...), whose kept files are read oldest first ([`ReplicaLog`]). Each line is
//! printed after the replica's prefix (every replica's log) and its time (`--timestamps`), and a
//! restart of the replica between two runs is a separator line.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Context;
use trainctl_local::process::logs::{LogSelection, ReplicaLog};

/// How much output is gathered before it is written.
const GATHERED: usize = 64 * 1024;

/// How a replica's lines are printed.
#[derive(Debug, Clone)]
pub struct Style {
    /// The replica's name, as restart separators say it (`worker-0`).
    pub replica: String,
    /// The prefix of each line (`worker-0 | `), when every replica's log is printed.
    pub prefix: Option<String>,
    /// Whether each line is printed after its time.
    pub timestamps: bool,
}

/// One replica's log, read so far.
#[derive(Debug)]
pub struct Tail {
    log: ReplicaLog,
    style: Style,
}

impl Tail {
    /// The log written to `path`, not read yet: `selection` of what it holds, then what is
    /// written to it, printed in `style`.
    pub fn new(path: PathBuf, selection: LogSelection, style: Style) -> Tail {
        Tail {
            log: ReplicaLog::new(path, selection),
            style,
        }
    }

    /// Prints what was written since the last call to `out` (at the first, the selection of
    /// what the log holds); a last line not ended yet is held back unless `at_end` (the log
    /// will not grow any more). A log that does not exist yet has nothing to print. An error
    /// writing to `out` (a reader that has gone) is returned as it is.
    pub fn copy_new(&mut self, out: &mut impl Write, at_end: bool) -> anyhow::Result<()> {
        let Tail { log, style } = self;
        let mut gathered = Vec::new();
        let mut written: io::Result<()> = Ok(());
        let read = log.read(at_end, &mut |item| {
            item.render(
                &style.replica,
                style.prefix.as_deref(),
                style.timestamps,
                &mut gathered,
            );
            if gathered.len() >= GATHERED {
                written = out.write_all(&gathered);
                gathered.clear();
                if let Err(error) = &written {
                    return Err(io::Error::new(error.kind(), "the output is closed"));
                }
            }
            Ok(())
        });
        written?;
        read.with_context(|| format!("cannot read {}", log.path().display()))?;
        out.write_all(&gathered)?;
        Ok(())
    }
}

impl Tail {
    /// Every item the log holds (its selection), each printed on its own and with its time
    /// (an item without one takes the time of the item before it), for [`interleaved`].
    pub fn items(&mut self) -> anyhow::Result<Vec<(i64, Vec<u8>)>> {
        let Tail { log, style } = self;
        let mut items = Vec::new();
        let mut last = i64::MIN;
        log.read(true, &mut |item| {
            last = item.at().unwrap_or(last);
            let mut text = Vec::new();
            item.render(
                &style.replica,
                style.prefix.as_deref(),
                style.timestamps,
                &mut text,
            );
            items.push((last, text));
            Ok(())
        })
        .with_context(|| format!("cannot read {}", log.path().display()))?;
        Ok(items)
    }
}

/// The lines of several replicas' logs, `tails` (in their order), in the order they were
/// written: by time, a replica's own lines keeping their order, and lines of the same time in
/// the order of `tails`.
pub fn interleaved<'a>(
    tails: impl IntoIterator<Item = &'a mut Tail>,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let mut all: Vec<(i64, usize, Vec<u8>)> = Vec::new();
    for (order, tail) in tails.into_iter().enumerate() {
        all.extend(
            tail.items()?
                .into_iter()
                .map(|(at, text)| (at, order, text)),
        );
    }
    // Stable: a replica's lines of the same time keep their order.
    all.sort_by_key(|&(at, order, _)| (at, order));
    for (_, _, text) in all {
        out.write_all(&text)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn style(prefix: Option<&str>) -> Style {
        Style {
            replica: "worker-0".to_owned(),
            prefix: prefix.map(str::to_owned),
            timestamps: false,
        }
    }

    #[test]
    fn a_tail_copies_only_what_was_appended_since_the_last_read() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("worker-0.log");
        let mut tail = Tail::new(path.clone(), LogSelection::default(), style(None));
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
        let mut tail = Tail::new(
            path.clone(),
            LogSelection::default(),
            style(Some("worker-0 | ")),
        );
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

    #[test]
    fn a_reader_that_has_gone_is_an_error_of_its_own() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("worker-0.log");
        std::fs::write(&path, "x\n".repeat(100_000)).expect("write");
        let mut tail = Tail::new(path, LogSelection::default(), style(None));
        let error = tail
            .copy_new(&mut Closed, true)
            .expect_err("nothing can be written");
        let io = error
            .downcast_ref::<io::Error>()
            .expect("the write's own error");
        assert_eq!(io.kind(), io::ErrorKind::BrokenPipe);
    }

    /// An output whose reader has gone.
    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
}
