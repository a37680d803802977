//! Reading a replica's log back: every file it keeps, oldest first, then on as it grows and is
//! rotated (as `tail -F` follows a file), and what `describe` says of it.

use std::collections::VecDeque;
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::rotate::{Dropped, dropped, dropped_file, rotated_files};

/// The files of the log `path` that exist, oldest first: `path.N` ... `path.1`, then `path`.
pub fn kept_log_files(path: &Path) -> io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = rotated_files(path)?
        .into_iter()
        .rev()
        .map(|(_, rotated)| rotated)
        .collect();
    if path.exists() {
        files.push(path.to_owned());
    }
    Ok(files)
}

/// What a replica's log keeps and what it lost, for `describe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogUsage {
    /// Bytes in the files kept.
    pub kept: u64,
    /// How many files are kept.
    pub files: usize,
    /// What the log lost.
    pub dropped: Dropped,
    /// When it last lost something (the marker file's time); `None` when it lost nothing.
    pub dropped_at: Option<SystemTime>,
}

/// What the log `path` keeps and lost; a log that does not exist keeps nothing.
#[must_use]
pub fn log_usage(path: &Path) -> LogUsage {
    let files = kept_log_files(path).unwrap_or_default();
    let kept = files
        .iter()
        .filter_map(|file| fs::metadata(file).ok())
        .map(|metadata| metadata.len())
        .sum();
    let dropped = dropped(path);
    LogUsage {
        kept,
        files: files.len(),
        dropped,
        dropped_at: (!dropped.is_none())
            .then(|| {
                fs::metadata(dropped_file(path))
                    .and_then(|m| m.modified())
                    .ok()
            })
            .flatten(),
    }
}

/// A file open for reading, with what identifies it across renames.
#[derive(Debug)]
struct Opened {
    file: File,
    id: (u64, u64),
}

impl Opened {
    fn open(path: &Path) -> io::Result<Opened> {
        let file = File::open(path)?;
        let metadata = file.metadata()?;
        Ok(Opened {
            file,
            id: (metadata.dev(), metadata.ino()),
        })
    }
}

/// A replica's log, read in order: the files it keeps, oldest first, then what is written
/// after, across rotations. A read that returns 0 found nothing more for now: the log may grow
/// still. A log that does not exist yet has nothing to read.
#[derive(Debug)]
pub struct LogReader {
    path: PathBuf,
    /// The file being read; `None` until the log exists.
    current: Option<Opened>,
    /// The files to read after it, oldest first.
    next: VecDeque<Opened>,
}

impl LogReader {
    /// The log written to `path`, not read yet.
    #[must_use]
    pub fn new(path: PathBuf) -> LogReader {
        LogReader {
            path,
            current: None,
            next: VecDeque::new(),
        }
    }

    /// The log's path (the file written).
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the kept files of the log, oldest first; those that went between the listing and
    /// the opening are skipped.
    fn open_kept(&self) -> io::Result<Vec<Opened>> {
        let mut opened = Vec::new();
        for path in kept_log_files(&self.path)? {
            match Opened::open(&path) {
                Ok(file) => opened.push(file),
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
        }
        Ok(opened)
    }

    /// Whether `id` is still the file written to the log's path.
    fn is_written(&self, id: (u64, u64)) -> bool {
        fs::metadata(&self.path).is_ok_and(|metadata| (metadata.dev(), metadata.ino()) == id)
    }

    /// The kept files newer than the file `id`: those after it, or all of them when it is gone
    /// (a deleted file was older than any kept).
    fn newer_than(&self, id: (u64, u64)) -> io::Result<VecDeque<Opened>> {
        let mut kept = self.open_kept()?;
        if let Some(at) = kept.iter().position(|file| file.id == id) {
            kept.drain(..=at);
        }
        Ok(kept.into())
    }
}

impl Read for LogReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.current.is_none() {
            self.next = self.open_kept()?.into();
            self.current = self.next.pop_front();
        }
        loop {
            let Some(current) = &mut self.current else {
                return Ok(0);
            };
            let read = current.file.read(buf)?;
            if read > 0 {
                return Ok(read);
            }
            if let Some(next) = self.next.pop_front() {
                self.current = Some(next);
                continue;
            }
            let id = current.id;
            if self.is_written(id) {
                return Ok(0);
            }
            // Rotated away: whatever was written to it before is in it now.
            let Some(current) = &mut self.current else {
                return Ok(0);
            };
            let read = current.file.read(buf)?;
            if read > 0 {
                return Ok(read);
            }
            self.next = self.newer_than(id)?;
            match self.next.pop_front() {
                Some(next) => self.current = Some(next),
                None => return Ok(0),
            }
        }
    }
}
