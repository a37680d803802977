//! A replica's log kept within its [`LogLimit`], as the kubelet keeps a container's
//! (`containerLogMaxSize`, `containerLogMaxFiles`): once `NAME.log` reaches the size, it becomes
//! `NAME.log.1`, `NAME.log.1` becomes `NAME.log.2`, and so on; the oldest file beyond the count
//! is deleted. What was deleted, and what could not be written at all (a full disk), is counted
//! in the log's marker file `NAME.dropped`, for `describe`.
//!
//! A file is rotated between lines where it can be: each file then starts with a whole line,
//! unless a single line is longer than the size.
//!
//! Each file's [index](super::index) goes with it: `NAME.log.index` becomes `NAME.log.1.index`
//! as `NAME.log` becomes `NAME.log.1`, and is deleted with it. A reader pairs a file with its
//! index only while the file is at its name (see [`LogReader`](super::LogReader)); so that a
//! pair found that way is always right, a file is renamed before its index, an index is deleted
//! before its file, whatever index a rotated file is about to replace is deleted first, and the
//! new file's index is in place before the new file.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::index::{IndexWriter, Record, Run, index_file, unix_nanos};
use super::{LOG_FILE_MODE, LogFile};
use crate::state_dir::{keep_reserve, release_reserve};

/// How large a replica's log may grow: the file written is rotated at `max_size` bytes, and
/// `max_files` files are kept, the one written included. Serializable, so that a request to
/// start a replica can carry it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogLimit {
    /// The size at which the file written is rotated; 0 never rotates it.
    pub max_size: u64,
    /// How many files are kept, the one written included (at least 1: with 1, the file is
    /// emptied when it reaches `max_size`).
    pub max_files: u32,
}

impl LogLimit {
    /// The kubelet's defaults: 10 MiB, 5 files.
    pub const DEFAULT: LogLimit = LogLimit {
        max_size: 10 * 1024 * 1024,
        max_files: 5,
    };

    /// Whether a log under this limit is rotated at all.
    #[must_use]
    pub fn rotates(self) -> bool {
        self.max_size > 0
    }
}

impl Default for LogLimit {
    fn default() -> LogLimit {
        LogLimit::DEFAULT
    }
}

/// What a replica's log lost, as its marker file records it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Bytes of the oldest output, deleted by rotation.
    pub rotated: u64,
    /// Bytes of output that could not be written (the disk was full).
    pub unwritten: u64,
}

impl Dropped {
    /// Whether nothing was lost.
    #[must_use]
    pub fn is_none(self) -> bool {
        self == Dropped::default()
    }

    fn parse(text: &str) -> Dropped {
        let mut dropped = Dropped::default();
        for line in text.lines() {
            let Some((key, value)) = line.split_once(' ') else {
                continue;
            };
            let Ok(value) = value.trim().parse() else {
                continue;
            };
            match key {
                "rotated" => dropped.rotated = value,
                "unwritten" => dropped.unwritten = value,
                _ => {}
            }
        }
        dropped
    }

    fn text(self) -> String {
        format!("rotated {}\nunwritten {}\n", self.rotated, self.unwritten)
    }
}

/// The marker file of the log `path` (`worker-0.log` → `worker-0.dropped`), which exists once
/// the log lost something.
#[must_use]
pub fn dropped_file(path: &Path) -> PathBuf {
    path.with_extension("dropped")
}

/// The room kept beside the log `path` (`worker-0.log` → `worker-0.reserve`), from its first
/// writer on: on a full disk, the marker of what could not be written takes its place, for what
/// a full disk cost is the one thing that must be said. It goes with the job's logs.
#[must_use]
pub fn reserve_file(path: &Path) -> PathBuf {
    path.with_extension("reserve")
}

/// How much room is kept: a block, more than a marker takes.
const RESERVE_BYTES: u64 = 4096;

/// What the log `path` lost, as its marker file says (nothing when it has none).
#[must_use]
pub fn dropped(path: &Path) -> Dropped {
    fs::read_to_string(dropped_file(path))
        .map_or_else(|_| Dropped::default(), |t| Dropped::parse(&t))
}

/// The rotated files of the log `path` (`path.1`, `path.2`...) that exist, by number.
pub(super) fn rotated_files(path: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(Vec::new());
    };
    let mut prefix = name.to_os_string();
    prefix.push(".");
    let prefix = prefix.as_encoded_bytes();
    let entries = match fs::read_dir(dir) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        entries => entries?,
    };
    let mut rotated = Vec::new();
    for entry in entries {
        let entry = entry?;
        let file_name = entry.file_name();
        let number = file_name
            .as_encoded_bytes()
            .strip_prefix(prefix)
            .and_then(|digits| std::str::from_utf8(digits).ok())
            .filter(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|digits| digits.parse::<u64>().ok())
            .filter(|&n| n > 0);
        if let Some(number) = number {
            rotated.push((number, entry.path()));
        }
    }
    rotated.sort();
    Ok(rotated)
}

/// `path.n`.
fn numbered(path: &Path, n: u64) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

/// A replica's log being written: appended to and rotated by its limit, one run of the replica
/// (a start of its process) per writer, recorded with the time of each chunk in the log's
/// [index](super::index). Writing never fails: what cannot be written is counted as
/// [`Dropped::unwritten`], so that a full disk costs output, never the replica; an index that
/// cannot be written costs the times of the output, never the output.
#[derive(Debug)]
pub struct LogWriter {
    path: PathBuf,
    file: File,
    /// Bytes in the file written.
    size: u64,
    limit: LogLimit,
    dropped: Dropped,
    /// Whether `dropped` changed since the marker file was written.
    unrecorded: bool,
    /// The index of the file written; `None` when it could not be opened.
    index: Option<IndexWriter>,
    /// The run this writer writes.
    run: Run,
}

impl LogWriter {
    /// Writes a run of the replica, started now, to `log`, as it stands (a restarted replica's
    /// log goes on), within `limit`.
    #[must_use]
    pub fn new(log: LogFile, limit: LogLimit) -> LogWriter {
        LogWriter::starting(log, limit, SystemTime::now())
    }

    /// Writes a run of the replica, started at `started` (just before its process was
    /// spawned), to `log`, as it stands, within `limit`. The run is the one after the last
    /// that the log's index records (0 when it records none), and its start is recorded at
    /// once.
    #[must_use]
    pub fn starting(log: LogFile, limit: LogLimit, started: SystemTime) -> LogWriter {
        let size = log.file.metadata().map_or(0, |metadata| metadata.len());
        let started = unix_nanos(started);
        let resumed = IndexWriter::resume(&log.path, size, unix_nanos(SystemTime::now())).ok();
        let number = resumed
            .as_ref()
            .and_then(|(_, last)| *last)
            .map_or(0, |last| last.number.saturating_add(1));
        let run = Run { number, started };
        let index = resumed.map(|(mut index, _)| {
            index.push(Record::RunStart {
                run: number,
                offset: size,
                at: started,
            });
            let _ = index.flush();
            index
        });
        // Best effort: a disk already full has no room to keep.
        let _ = keep_reserve(&reserve_file(&log.path), RESERVE_BYTES);
        LogWriter {
            dropped: dropped(&log.path),
            path: log.path,
            file: log.file,
            size,
            limit,
            unrecorded: false,
            index,
            run,
        }
    }

    /// Appends `data`, read from the replica now (see [`LogWriter::write_read_at`]).
    pub fn write(&mut self, data: &[u8]) {
        self.write_read_at(data, SystemTime::now());
    }

    /// Appends `data`, read from the replica at `at`, rotating the file first whenever it would
    /// grow past the limit (between lines, where one falls within the room left); then records
    /// when it was read in the index (one small write).
    pub fn write_read_at(&mut self, mut data: &[u8], at: SystemTime) {
        let at = unix_nanos(at);
        if !self.limit.rotates() {
            self.append(data, at);
            self.flush_index();
            return;
        }
        while !data.is_empty() {
            let room = self.limit.max_size.saturating_sub(self.size);
            if data.len() as u64 <= room {
                self.append(data, at);
                break;
            }
            let room = room as usize;
            let cut = match data[..room].iter().rposition(|&byte| byte == b'\n') {
                Some(newline) => newline + 1,
                // A line longer than the file: cut it where the file is full.
                None if self.size == 0 => room,
                None => 0,
            };
            self.append(&data[..cut], at);
            data = &data[cut..];
            if self.rotate().is_err() {
                // Kept in the file written: the next write tries again.
                self.append(data, at);
                break;
            }
        }
        self.flush_index();
    }

    /// Records that the run ended with `code`, its output complete (the pipe closed).
    pub fn exited(&mut self, code: i32) {
        if let Some(index) = &mut self.index {
            index.push(Record::Exit {
                code,
                offset: self.size,
                at: unix_nanos(SystemTime::now()),
            });
        }
        self.flush_index();
    }

    /// Records what the log lost in its marker file, if that changed since it was last recorded;
    /// on a full disk, in the room kept for it ([`reserve_file`]).
    pub fn finish(&mut self) {
        self.flush_index();
        if !self.unrecorded {
            return;
        }
        let written = write_marker(&self.path, self.dropped).or_else(|error| {
            if error.raw_os_error() != Some(nix::libc::ENOSPC) {
                return Err(error);
            }
            release_reserve(&reserve_file(&self.path))?;
            write_marker(&self.path, self.dropped)
        });
        if written.is_ok() {
            self.unrecorded = false;
        }
    }

    /// Writes the index records gathered since the last flush.
    fn flush_index(&mut self) {
        if let Some(index) = &mut self.index {
            let _ = index.flush();
        }
    }

    /// Appends what it can of `data`, read at `at`, to the file written; counts the rest as
    /// unwritten.
    fn append(&mut self, mut data: &[u8], at: i64) {
        let before = self.size;
        while !data.is_empty() {
            match self.file.write(data) {
                Ok(0) => break,
                Ok(written) => {
                    self.size += written as u64;
                    data = &data[written..];
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if self.size > before
            && let Some(index) = &mut self.index
        {
            index.push(Record::Read { end: self.size, at });
        }
        if !data.is_empty() {
            self.dropped.unwritten += data.len() as u64;
            self.unrecorded = true;
        }
    }

    /// Rotates the file written: the oldest files beyond the limit are deleted (and counted),
    /// every other one moves up a number, and a new, empty file takes the log's name; each
    /// index goes with its file, in the order the module's documentation gives.
    fn rotate(&mut self) -> io::Result<()> {
        let fresh_path = self.path.with_extension("rotating");
        let fresh = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .mode(LOG_FILE_MODE)
            .open(&fresh_path)?;
        let fresh_index = self.index.as_ref().and_then(|_| {
            let now = unix_nanos(SystemTime::now());
            IndexWriter::create(index_file(&fresh_path), Some(self.run), now).ok()
        });
        self.flush_index();
        // The rotated files kept once this one is rotated too.
        let kept = u64::from(self.limit.max_files.saturating_sub(1));
        for (n, rotated) in rotated_files(&self.path)?.into_iter().rev() {
            if n >= kept {
                let size = fs::metadata(&rotated).map_or(0, |metadata| metadata.len());
                remove_index_of(&rotated);
                fs::remove_file(&rotated)?;
                self.dropped.rotated += size;
                self.unrecorded = true;
            } else {
                move_with_index(&rotated, &numbered(&self.path, n + 1))?;
            }
        }
        if kept == 0 {
            remove_index_of(&self.path);
            fs::remove_file(&self.path)?;
            self.dropped.rotated += self.size;
            self.unrecorded = true;
        } else {
            move_with_index(&self.path, &numbered(&self.path, 1))?;
        }
        self.index = fresh_index.and_then(|mut index| {
            let path = index_file(&self.path);
            fs::rename(index.path(), &path).ok()?;
            index.moved_to(path);
            Some(index)
        });
        fs::rename(&fresh_path, &self.path)?;
        self.file = fresh;
        self.size = 0;
        self.finish();
        Ok(())
    }
}

/// Deletes the index of the log file `file`, if it has one.
fn remove_index_of(file: &Path) {
    let _ = fs::remove_file(index_file(file));
}

/// Renames the log file `from` to `to`, then its index (after deleting whatever index `to` had:
/// it was another file's).
fn move_with_index(from: &Path, to: &Path) -> io::Result<()> {
    remove_index_of(to);
    fs::rename(from, to)?;
    let _ = fs::rename(index_file(from), index_file(to));
    Ok(())
}

/// Writes the marker file of the log `path` whole (a reader never sees half of it).
fn write_marker(path: &Path, dropped: Dropped) -> io::Result<()> {
    let marker = dropped_file(path);
    let partial = marker.with_extension("dropped-partial");
    let mut file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(LOG_FILE_MODE)
        .open(&partial)?;
    file.write_all(dropped.text().as_bytes())?;
    fs::rename(&partial, &marker)
}
