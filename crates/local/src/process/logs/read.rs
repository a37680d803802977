//! Reading a replica's log back: every file it keeps, oldest first, then on as it grows and is
//! rotated (as `tail -F` follows a file), with each file's index when asked
//! ([`ReplicaLog`](super::ReplicaLog) reads them), and what `describe` says of it.

use std::collections::VecDeque;
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::index::{IndexReader, Record, index_file};
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

/// A file open for reading, with what identifies it across renames, how much of it was read,
/// and its index when it is read with one.
#[derive(Debug)]
pub(super) struct Opened {
    file: File,
    id: (u64, u64),
    /// The name it was opened at (it may have been rotated to another since).
    name: PathBuf,
    /// Bytes of it read so far.
    position: u64,
    /// Its index, when read with one and it has one.
    index: Option<IndexReader>,
    /// Where the index said the file was accounted for when a read last stopped there with
    /// more in the file: a read that finds it there again reads on without the index.
    held_at: Option<u64>,
}

impl Opened {
    fn open(path: &Path, with_index: bool) -> io::Result<Opened> {
        let file = File::open(path)?;
        let metadata = file.metadata()?;
        let mut opened = Opened {
            file,
            id: (metadata.dev(), metadata.ino()),
            name: path.to_owned(),
            position: 0,
            index: None,
            held_at: None,
        };
        if with_index {
            opened.open_index();
        }
        Ok(opened)
    }

    /// Opens the file's index, if it has one: the index at its name's, taken only if the file
    /// is still at that name once the index is open (a rotation moves a file before its index,
    /// so the index found is the file's; see `rotate`).
    fn open_index(&mut self) {
        let Ok(index) = File::open(index_file(&self.name)) else {
            return;
        };
        if is_at(&self.name, self.id) {
            self.index = Some(IndexReader::new(index));
        }
    }

    /// Reads the index's new records; looks for an index again if the file had none and is
    /// still at its name (a writer of this version may have started on an older log).
    fn refresh_index(&mut self) -> io::Result<()> {
        if self.index.is_none() && is_at(&self.name, self.id) {
            self.open_index();
        }
        match &mut self.index {
            Some(index) => index.refresh(),
            None => Ok(()),
        }
    }

    /// Reads into `buf`, no further than `limit` when given.
    fn read(&mut self, buf: &mut [u8], limit: Option<u64>) -> io::Result<usize> {
        let room = match limit {
            Some(limit) => usize::try_from(limit.saturating_sub(self.position))
                .unwrap_or(usize::MAX)
                .min(buf.len()),
            None => buf.len(),
        };
        let read = self.file.read(&mut buf[..room])?;
        self.position += read as u64;
        Ok(read)
    }

    /// Whether the file holds more than was read.
    fn has_unread(&self) -> io::Result<bool> {
        Ok(self.file.metadata()?.len() > self.position)
    }

    /// What identifies it across renames: its device and inode.
    pub(super) fn id(&self) -> (u64, u64) {
        self.id
    }

    /// Bytes of it read so far: the offset after the last byte read.
    pub(super) fn position(&self) -> u64 {
        self.position
    }

    /// Its index's records so far (none without an index).
    pub(super) fn records(&self) -> &[Record] {
        self.index.as_ref().map_or(&[], IndexReader::records)
    }

    /// Whether it has an index of this format recording a run.
    pub(super) fn is_indexed(&self) -> bool {
        self.index
            .as_ref()
            .is_some_and(|index| index.accounted().is_some())
    }
}

/// Whether the file `id` is at `path`.
fn is_at(path: &Path, id: (u64, u64)) -> bool {
    fs::metadata(path).is_ok_and(|metadata| (metadata.dev(), metadata.ino()) == id)
}

/// A replica's log, read in order: the files it keeps, oldest first, then what is written
/// after, across rotations. A read that returns 0 found nothing more for now: the log may grow
/// still. A log that does not exist yet has nothing to read.
#[derive(Debug)]
pub struct LogReader {
    path: PathBuf,
    /// Whether each file is read with its index.
    indexed: bool,
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
            indexed: false,
            current: None,
            next: VecDeque::new(),
        }
    }

    /// The log written to `path`, not read yet, each file with its index.
    pub(super) fn with_indexes(path: PathBuf) -> LogReader {
        LogReader {
            indexed: true,
            ..LogReader::new(path)
        }
    }

    /// The log's path (the file written).
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file the last bytes read came from.
    pub(super) fn current(&self) -> Option<&Opened> {
        self.current.as_ref()
    }

    /// Opens the kept files of the log, oldest first; those that went between the listing and
    /// the opening are skipped.
    fn open_kept(&self) -> io::Result<Vec<Opened>> {
        let mut opened = Vec::new();
        for path in kept_log_files(&self.path)? {
            match Opened::open(&path, self.indexed) {
                Ok(file) => opened.push(file),
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
        }
        Ok(opened)
    }

    /// Whether `id` is still the file written to the log's path.
    fn is_written(&self, id: (u64, u64)) -> bool {
        is_at(&self.path, id)
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

    /// Reads what comes next into `buf`. With `accounted_only`, the file written is read only
    /// as far as its index accounts for (see [`super::index`]): its last bytes wait for their
    /// record, unless the index has not moved since the last read that waited (it will not).
    /// The bytes read come from [`LogReader::current`].
    pub(super) fn read_indexed(
        &mut self,
        buf: &mut [u8],
        accounted_only: bool,
    ) -> io::Result<usize> {
        if self.current.is_none() {
            self.next = self.open_kept()?.into();
            self.current = self.next.pop_front();
        }
        loop {
            let Some(current) = &mut self.current else {
                return Ok(0);
            };
            if self.indexed {
                // An index that cannot be read costs the times of the lines, not the lines.
                let _ = current.refresh_index();
            }
            let limit = current
                .index
                .as_ref()
                .and_then(IndexReader::accounted)
                .filter(|_| accounted_only);
            let read = current.read(buf, limit)?;
            if read > 0 {
                return Ok(read);
            }
            if limit.is_some() && current.has_unread()? {
                let id = current.id;
                let waited = current.held_at == limit;
                current.held_at = limit;
                if self.is_written(id) && !waited {
                    return Ok(0);
                }
                // Rotated away (its index is complete), or the index does not move: read on.
                let Some(current) = &mut self.current else {
                    return Ok(0);
                };
                let read = current.read(buf, None)?;
                if read > 0 {
                    return Ok(read);
                }
            }
            if let Some(next) = self.next.pop_front() {
                self.current = Some(next);
                continue;
            }
            let Some(current) = &mut self.current else {
                return Ok(0);
            };
            let id = current.id;
            if self.is_written(id) {
                return Ok(0);
            }
            // Rotated away: whatever was written to it before is in it now.
            let Some(current) = &mut self.current else {
                return Ok(0);
            };
            let read = current.read(buf, None)?;
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

impl Read for LogReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_indexed(buf, false)
    }
}
