//! A log file's index: when each byte of it was written, and where each run of the replica began
//! and ended, so that `logs` can print times (`--timestamps`), select by time (`--since`), tell
//! runs apart (`--previous`) and mark restarts, without writing anything into the log itself.
//!
//! Each log file `NAME.log`, `NAME.log.1`... has its index beside it, `NAME.log.index`,
//! `NAME.log.1.index`..., rotated with it ([`LogWriter`](super::LogWriter)). An index is
//! append-only, a sequence of fixed-size records of [`RECORD_SIZE`] bytes, little-endian:
//!
//! | bytes  | field                                                                  |
//! |--------|------------------------------------------------------------------------|
//! | 0      | kind: `H` header, `S` run start, `C` run continued, `R` read, `X` exit |
//! | 1..4   | zero                                                                   |
//! | 4..8   | `i32`: the format version (`H`), the run (`S`, `C`), the exit code (`X`)|
//! | 8..16  | `u64`: an offset in the log file                                       |
//! | 16..24 | `i64`: a time, nanoseconds since the Unix epoch (UTC)                  |
//!
//! - `H` is the first record: version [`FORMAT_VERSION`], offset 0, when the index was made.
//! - `S` (run `n`, offset `o`, time `t`): the replica's run `n` (0 for its first, `n` for its
//!   `n`th restart) started at `t`; its output begins at `o`.
//! - `C` (run `n`, offset 0, time `t`): the file was made by rotation while run `n`, started at
//!   `t`, was writing: its bytes from 0 are that run's.
//! - `R` (offset `e`, time `t`): the bytes before `e` not covered by an earlier `R` (and not before
//!   the last `S` or `C`) were read from the replica's pipe at `t`, as the kubelet timestamps
//!   what it reads from a container.
//! - `X` (exit code `c`, offset `e`, time `t`): the run ended with `c`, seen at `t`; its output
//!   ends at `e`.
//!
//! The log's bytes are written before the records that cover them: a reader that finds bytes
//! beyond the index's last offset is early, and may wait for their record. Bytes no `R` covers
//! (a log written before indexes existed, or a record that could not be written) have no known
//! time. A torn last record (a writer killed mid-write) is ignored.

use std::fs::{File, OpenOptions};
use std::io::{self, Read as _, Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::LOG_FILE_MODE;

/// The size of every record.
pub const RECORD_SIZE: usize = 24;
/// The version the header of an index in this format says.
pub const FORMAT_VERSION: i32 = 1;
/// How many records are read at once when an index is scanned backwards.
const SCAN_RECORDS: usize = 1024;

/// The index of the log file `log_file` (`worker-0.log.1` → `worker-0.log.1.index`).
#[must_use]
pub fn index_file(log_file: &Path) -> PathBuf {
    let mut name = log_file.as_os_str().to_os_string();
    name.push(".index");
    PathBuf::from(name)
}

/// Nanoseconds since the Unix epoch of `time` (0 before it).
#[must_use]
pub fn unix_nanos(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |since| {
        i64::try_from(since.as_nanos()).unwrap_or(i64::MAX)
    })
}

/// One record of an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    /// The first record of an index in this format.
    Header {
        /// The format's version.
        version: i32,
        /// When the index was made.
        at: i64,
    },
    /// A run of the replica started: its output begins at `offset`.
    RunStart {
        /// 0 for the replica's first run, `n` for its `n`th restart.
        run: u32,
        /// Where its output begins in this file.
        offset: u64,
        /// When it started.
        at: i64,
    },
    /// The file was made by rotation while `run` was writing: its bytes from 0 are that run's.
    RunContinued {
        /// The run writing.
        run: u32,
        /// When that run started.
        at: i64,
    },
    /// The bytes up to `end` (from the end of the previous read) were read at `at`.
    Read {
        /// The end of the bytes read.
        end: u64,
        /// When they were read.
        at: i64,
    },
    /// The run writing ended with `code`; its output ends at `offset`.
    Exit {
        /// Its exit code (`128 + n` for signal `n`).
        code: i32,
        /// Where its output ends in this file.
        offset: u64,
        /// When its exit was seen.
        at: i64,
    },
}

impl Record {
    /// The offset in the log file the record is about: every byte before it is accounted for
    /// once the record is written.
    #[must_use]
    pub fn offset(self) -> u64 {
        match self {
            Record::Header { .. } | Record::RunContinued { .. } => 0,
            Record::RunStart { offset, .. } | Record::Exit { offset, .. } => offset,
            Record::Read { end, .. } => end,
        }
    }

    /// The record as it is stored.
    #[must_use]
    pub fn encode(self) -> [u8; RECORD_SIZE] {
        let (kind, value, offset, at) = match self {
            Record::Header { version, at } => (b'H', version, 0, at),
            Record::RunStart { run, offset, at } => (b'S', run_value(run), offset, at),
            Record::RunContinued { run, at } => (b'C', run_value(run), 0, at),
            Record::Read { end, at } => (b'R', 0, end, at),
            Record::Exit { code, offset, at } => (b'X', code, offset, at),
        };
        let mut bytes = [0; RECORD_SIZE];
        bytes[0] = kind;
        bytes[4..8].copy_from_slice(&value.to_le_bytes());
        bytes[8..16].copy_from_slice(&offset.to_le_bytes());
        bytes[16..24].copy_from_slice(&at.to_le_bytes());
        bytes
    }

    /// The record stored as `bytes`; `None` for a kind this format does not have.
    #[must_use]
    pub fn decode(bytes: &[u8; RECORD_SIZE]) -> Option<Record> {
        let word = |range: std::ops::Range<usize>| -> [u8; 8] {
            bytes[range].try_into().unwrap_or_default()
        };
        let value = i32::from_le_bytes(bytes[4..8].try_into().unwrap_or_default());
        let offset = u64::from_le_bytes(word(8..16));
        let at = i64::from_le_bytes(word(16..24));
        let run = u32::try_from(value).ok();
        Some(match bytes[0] {
            b'H' => Record::Header { version: value, at },
            b'S' => Record::RunStart {
                run: run?,
                offset,
                at,
            },
            b'C' => Record::RunContinued { run: run?, at },
            b'R' => Record::Read { end: offset, at },
            b'X' => Record::Exit {
                code: value,
                offset,
                at,
            },
            _ => return None,
        })
    }
}

/// A run number as stored (runs past `i32::MAX` are counted as that).
fn run_value(run: u32) -> i32 {
    i32::try_from(run).unwrap_or(i32::MAX)
}

/// The records of `bytes` (whole records only; an unknown kind ends them).
fn decode_all(bytes: &[u8]) -> Vec<Record> {
    bytes
        .chunks_exact(RECORD_SIZE)
        .map_while(|chunk| Record::decode(chunk.try_into().ok()?))
        .collect()
}

/// A replica's run, as its index records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// 0 for the first run, `n` for the `n`th restart.
    pub number: u32,
    /// When it started, in Unix nanoseconds.
    pub started: i64,
}

/// An index being written, beside the log file a [`LogWriter`](super::LogWriter) writes.
/// Records are gathered and written together by [`IndexWriter::flush`], once per chunk of
/// output: never more than a few dozen bytes per write.
#[derive(Debug)]
pub(super) struct IndexWriter {
    file: File,
    pending: Vec<u8>,
    /// Where this index is, for a rotation to move it.
    path: PathBuf,
}

impl IndexWriter {
    /// A new, empty index at `path` (replacing any), with its header and, when a run writes
    /// across the rotation that made its log file, that run's [`Record::RunContinued`];
    /// written at once.
    pub(super) fn create(path: PathBuf, run: Option<Run>, now: i64) -> io::Result<IndexWriter> {
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .mode(LOG_FILE_MODE)
            .open(&path)?;
        let mut index = IndexWriter {
            file,
            pending: Vec::new(),
            path,
        };
        index.push(Record::Header {
            version: FORMAT_VERSION,
            at: now,
        });
        if let Some(run) = run {
            index.push(Record::RunContinued {
                run: run.number,
                at: run.started,
            });
        }
        index.flush()?;
        Ok(index)
    }

    /// The index of the log file `log_file`, whose size is `log_size`, opened to go on, and the
    /// last run it records, if any. An index that is not in this format is started again; so
    /// is one that describes more than the file holds (another file's, left by a rotation that
    /// was cut short), though its last run is still the replica's. A torn last record is cut
    /// off.
    pub(super) fn resume(
        log_file: &Path,
        log_size: u64,
        now: i64,
    ) -> io::Result<(IndexWriter, Option<Run>)> {
        let path = index_file(log_file);
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .mode(LOG_FILE_MODE)
            .open(&path)?;
        let length = file.metadata()?.len();
        let whole = length - length % RECORD_SIZE as u64;
        if whole != length {
            file.set_len(whole)?;
        }
        if header_of(&mut file)?.is_none() {
            return Ok((IndexWriter::create(path, None, now)?, None));
        }
        let last = last_records(&mut file, whole)?;
        let run = last_run_of(&last);
        if last
            .first()
            .is_some_and(|record| record.offset() > log_size)
        {
            // Another file's: its runs are the replica's all the same.
            return Ok((IndexWriter::create(path, None, now)?, run));
        }
        let index = IndexWriter {
            file,
            pending: Vec::new(),
            path,
        };
        Ok((index, run))
    }

    /// Where this index is.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The index has moved (its log file was rotated) to `path`.
    pub(super) fn moved_to(&mut self, path: PathBuf) {
        self.path = path;
    }

    /// Adds `record`, written at the next [`IndexWriter::flush`].
    pub(super) fn push(&mut self, record: Record) {
        self.pending.extend_from_slice(&record.encode());
    }

    /// Writes the records added since the last flush. What cannot be written is dropped: its
    /// bytes then have no known time, which costs the replica nothing.
    pub(super) fn flush(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let written = self.file.write_all(&self.pending);
        self.pending.clear();
        written
    }
}

/// The header of the index `file`, if it has one of this format.
fn header_of(file: &mut File) -> io::Result<Option<Record>> {
    let mut bytes = [0; RECORD_SIZE];
    file.seek(SeekFrom::Start(0))?;
    match file.read_exact(&mut bytes) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(error) => return Err(error),
    }
    Ok(Record::decode(&bytes).filter(|record| {
        matches!(
            record,
            Record::Header {
                version: FORMAT_VERSION,
                ..
            }
        )
    }))
}

/// The last run that the index `file` records, if it is in this format and records one.
pub(super) fn last_run(file: &mut File) -> io::Result<Option<Run>> {
    if header_of(file)?.is_none() {
        return Ok(None);
    }
    let length = file.metadata()?.len();
    let last = last_records(file, length - length % RECORD_SIZE as u64)?;
    Ok(last_run_of(&last))
}

/// The last run among `last_first`, records last first.
fn last_run_of(last_first: &[Record]) -> Option<Run> {
    last_first.iter().find_map(|record| match *record {
        Record::RunStart { run, at, .. } | Record::RunContinued { run, at } => Some(Run {
            number: run,
            started: at,
        }),
        _ => None,
    })
}

/// The records of the index `file` (`length` bytes of whole records), last first, back to its
/// last run's start (or its beginning).
fn last_records(file: &mut File, length: u64) -> io::Result<Vec<Record>> {
    let mut last_first = Vec::new();
    let mut end = length;
    while end > 0 {
        let start = end.saturating_sub((SCAN_RECORDS * RECORD_SIZE) as u64);
        let mut bytes = vec![0; (end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut bytes)?;
        let records = decode_all(&bytes);
        let found_run = records.iter().any(|record| {
            matches!(
                record,
                Record::RunStart { .. } | Record::RunContinued { .. }
            )
        });
        last_first.extend(records.into_iter().rev());
        if found_run {
            break;
        }
        end = start;
    }
    Ok(last_first)
}

/// An index being read, beside a log file being read: its records so far, read on as it grows.
#[derive(Debug)]
pub(super) struct IndexReader {
    file: File,
    /// The records read, in order (the header first).
    records: Vec<Record>,
    /// Bytes of the index read so far (whole records).
    read: u64,
    /// Whether it is in this format (decided by its header, once read).
    usable: bool,
    /// The largest offset of its records, once it records a run.
    accounted: Option<u64>,
}

impl IndexReader {
    /// Reads the index open as `file`.
    pub(super) fn new(file: File) -> IndexReader {
        IndexReader {
            file,
            records: Vec::new(),
            read: 0,
            usable: true,
            accounted: None,
        }
    }

    /// Reads the records appended since the last call.
    pub(super) fn refresh(&mut self) -> io::Result<()> {
        if !self.usable {
            return Ok(());
        }
        let length = self.file.metadata()?.len();
        let whole = length - length % RECORD_SIZE as u64;
        if whole <= self.read {
            return Ok(());
        }
        let mut bytes = vec![0; (whole - self.read) as usize];
        self.file.seek(SeekFrom::Start(self.read))?;
        self.file.read_exact(&mut bytes)?;
        self.read = whole;
        let new = decode_all(&bytes);
        if self.records.is_empty() {
            self.usable = matches!(
                new.first(),
                Some(Record::Header {
                    version: FORMAT_VERSION,
                    ..
                })
            );
            if !self.usable {
                return Ok(());
            }
        }
        for record in &new {
            let runs = matches!(
                record,
                Record::RunStart { .. } | Record::RunContinued { .. }
            );
            if runs || self.accounted.is_some() {
                self.accounted = self.accounted.max(Some(record.offset()));
            }
        }
        self.records.extend(new);
        Ok(())
    }

    /// The records read, in order; none for an index not in this format.
    pub(super) fn records(&self) -> &[Record] {
        if self.usable { &self.records } else { &[] }
    }

    /// The offset up to which every byte of the log file is accounted for: known to have a
    /// time, or known to have none (bytes before a run's start that no read covers); `None`
    /// until the index records a run (a writer records its run first).
    pub(super) fn accounted(&self) -> Option<u64> {
        self.accounted
    }
}
