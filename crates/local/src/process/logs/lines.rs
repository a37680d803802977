//! A replica's log read as lines, each with the time it was read from the replica (when the
//! log's [index](super::index) says) and the run of the replica that wrote it, with a
//! [`Restart`] where a run began after another; and the part of it that `logs` selects, as
//! `kubectl logs` does: the last lines (`--tail`), those of a recent window (`--since`), the run
//! before the last (`--previous`).
//!
//! A line whose time is not known (a log written before indexes existed, or an index that
//! could not be written) has none: it is never given another's time.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

pub use trainctl_api::log_lines::Restart;
use trainctl_api::log_lines::lead;

use super::index::{Record, index_file, last_run};
use super::read::{LogReader, Opened, kept_log_files};

/// How much is read from a log file at a time.
const CHUNK: usize = 64 * 1024;
/// A line longer than this is handed on in pieces rather than held back whole until it ends.
const MAX_LINE: usize = 64 * 1024;

/// One line of a replica's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// Its bytes, without its newline.
    pub text: Vec<u8>,
    /// Whether it ended (with a newline, or where its run ended); `false` for a piece of a
    /// longer line, or a last line not ended yet.
    pub ended: bool,
    /// When it was read from the replica (when its last byte was), in Unix nanoseconds; `None`
    /// when the log does not say.
    pub at: Option<i64>,
    /// The run of the replica that wrote it (0 for the first), when the log says.
    pub run: Option<u32>,
}

/// What a replica's log holds, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogItem {
    /// A line the replica wrote.
    Line(LogLine),
    /// A restart, between the lines of two runs.
    Restart(Restart),
}

impl LogItem {
    /// When it happened, when known.
    #[must_use]
    pub fn at(&self) -> Option<i64> {
        match self {
            LogItem::Line(line) => line.at,
            LogItem::Restart(restart) => Some(restart.at),
        }
    }

    /// Appends the item to `out` as `logs` prints it for `replica`: after `prefix` when given
    /// (`worker-0 | `), after its time when `timestamps` (a line of unknown time gets none),
    /// ended with a newline unless it is an unended line printed as it is (no prefix, no time).
    pub fn render(&self, replica: &str, prefix: Option<&str>, timestamps: bool, out: &mut Vec<u8>) {
        match self {
            LogItem::Line(line) => {
                lead(prefix, line.at.filter(|_| timestamps), out);
                out.extend_from_slice(&line.text);
                if line.ended || prefix.is_some() || timestamps {
                    out.push(b'\n');
                }
            }
            LogItem::Restart(restart) => restart.render(replica, prefix, timestamps, out),
        }
    }
}

/// The part of a log to read, as `kubectl logs` selects it. `tail` applies to what the log holds
/// when it is first read (what is written after, when following, is read whole); `since`, to
/// everything; `run`, to the first read only (nothing is read after).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogSelection {
    /// Only the last lines (`--tail`): this many; restarts between them are kept.
    pub tail: Option<usize>,
    /// Only what was written from this time on (`--since`), in Unix nanoseconds: lines of
    /// unknown time are left out, being of no known time.
    pub since: Option<i64>,
    /// Only the lines of this run (`--previous`, with [`previous_run`]'s run); nothing is read
    /// after the first read (that run has ended).
    pub run: Option<u32>,
}

impl LogSelection {
    /// Whether `item` is in the selection (`--tail` aside).
    fn admits(&self, item: &LogItem) -> bool {
        let in_window = self
            .since
            .is_none_or(|since| item.at().is_some_and(|at| at >= since));
        let in_run = match (self.run, item) {
            (None, _) => true,
            (Some(run), LogItem::Line(line)) => line.run == Some(run),
            (Some(_), LogItem::Restart(_)) => false,
        };
        in_window && in_run
    }
}

/// Why a log has no previous run to read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoPreviousRun {
    /// The replica has run once, or not yet.
    #[error("it has not restarted")]
    NotRestarted,
    /// Its log does not record its runs.
    #[error("its log does not record its runs (it was written by an older trainctl)")]
    NotRecorded,
    /// Its log's index cannot be read.
    #[error("cannot read {path}: {reason}")]
    Unreadable {
        /// The index.
        path: String,
        /// Why.
        reason: String,
    },
}

/// The run before the last of the replica whose log is written to `path`: the one
/// `--previous` reads.
pub fn previous_run(path: &Path) -> Result<u32, NoPreviousRun> {
    let unreadable = |file: &Path, error: io::Error| NoPreviousRun::Unreadable {
        path: file.display().to_string(),
        reason: error.to_string(),
    };
    let files = kept_log_files(path).map_err(|error| unreadable(path, error))?;
    let mut any = false;
    for file in files.iter().rev() {
        let index = index_file(file);
        let mut opened = match File::open(&index) {
            Ok(opened) => opened,
            Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
            Err(error) => return Err(unreadable(&index, error)),
        };
        any = true;
        if let Some(run) = last_run(&mut opened).map_err(|error| unreadable(&index, error))? {
            return run.number.checked_sub(1).ok_or(NoPreviousRun::NotRestarted);
        }
    }
    if any || files.is_empty() {
        Err(NoPreviousRun::NotRestarted)
    } else {
        Err(NoPreviousRun::NotRecorded)
    }
}

/// A replica's log read as [`LogItem`]s: what it holds (as the selection picks), then, read
/// again, what was written since.
#[derive(Debug)]
pub struct ReplicaLog {
    reader: LogReader,
    selection: LogSelection,
    /// Whether the log was read once (the selection applies to that read).
    read_once: bool,
    lines: Lines,
}

impl ReplicaLog {
    /// The log written to `path`, not read yet, of which `selection` is wanted.
    #[must_use]
    pub fn new(path: PathBuf, selection: LogSelection) -> ReplicaLog {
        ReplicaLog {
            reader: LogReader::with_indexes(path),
            selection,
            read_once: false,
            lines: Lines::default(),
        }
    }

    /// The log's path (the file written).
    #[must_use]
    pub fn path(&self) -> &Path {
        self.reader.path()
    }

    /// Hands `sink` the items written since the last call (at the first, what the log holds,
    /// as the selection picks). Unless `at_end` (the log will not grow any more), a last line
    /// not ended yet is held back, and so are the last bytes of the file written until its
    /// index records them (so that they get their time).
    pub fn read(
        &mut self,
        at_end: bool,
        sink: &mut impl FnMut(LogItem) -> io::Result<()>,
    ) -> io::Result<()> {
        if self.read_once && self.selection.run.is_some() {
            return Ok(());
        }
        let selection = self.selection;
        let mut tail = match (self.read_once, selection.tail) {
            (false, Some(lines)) => Some(Tail::new(lines)),
            _ => None,
        };
        let mut chosen = |item: LogItem| -> io::Result<()> {
            if !selection.admits(&item) {
                return Ok(());
            }
            match &mut tail {
                Some(tail) => {
                    tail.push(item);
                    Ok(())
                }
                None => sink(item),
            }
        };
        let mut chunk = vec![0; CHUNK];
        loop {
            let read = match self.reader.read_indexed(&mut chunk, !at_end) {
                Ok(0) => break,
                Ok(read) => read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            if let Some(file) = self.reader.current() {
                let start = file.position() - read as u64;
                let source = Source::of(file);
                self.lines
                    .push(&source, start, &chunk[..read], &mut chosen)?;
            }
        }
        if let Some(file) = self.reader.current() {
            self.lines
                .reach(&Source::of(file), file.position(), &mut chosen)?;
        }
        if at_end {
            self.lines.finish(&mut chosen)?;
        }
        self.read_once = true;
        if let Some(tail) = tail {
            for item in tail.items {
                sink(item)?;
            }
        }
        Ok(())
    }
}

/// The last lines of what is read, and the restarts after the first of them.
struct Tail {
    /// How many lines are kept.
    lines: usize,
    items: VecDeque<LogItem>,
    /// How many of `items` are lines.
    held_lines: usize,
    /// Whether a line was let go: the window then begins at the first line kept.
    trimmed: bool,
}

impl Tail {
    fn new(lines: usize) -> Tail {
        Tail {
            lines,
            items: VecDeque::new(),
            held_lines: 0,
            trimmed: false,
        }
    }

    fn push(&mut self, item: LogItem) {
        if matches!(item, LogItem::Line(_)) {
            self.held_lines += 1;
        }
        self.items.push_back(item);
        while self.held_lines > self.lines {
            if let Some(LogItem::Line(_)) = self.items.pop_front() {
                self.held_lines -= 1;
                self.trimmed = true;
            }
        }
        while self.trimmed && matches!(self.items.front(), Some(LogItem::Restart(_))) {
            self.items.pop_front();
        }
    }
}

/// A log file as the line assembler sees it: which file, and its index's records.
struct Source<'a> {
    id: (u64, u64),
    records: &'a [Record],
    indexed: bool,
}

impl Source<'_> {
    /// The file `file`, as read so far.
    fn of(file: &Opened) -> Source<'_> {
        Source {
            id: file.id(),
            records: file.records(),
            indexed: file.is_indexed(),
        }
    }
}

/// Bytes of a log cut into lines, with their times and runs from the records of the file they
/// are in.
#[derive(Debug, Default)]
struct Lines {
    /// The file being read.
    file: Option<(u64, u64)>,
    /// The next record whose run start, continuation or exit is to be applied.
    next_record: usize,
    /// Where to look for the next run start (every record before it starts none later).
    next_start: usize,
    /// The next record to look at for a line's time, and where the bytes that record covers
    /// begin.
    next_time: usize,
    covered_from: u64,
    /// The run writing the bytes reached.
    run: Option<u32>,
    /// The exit code of the run that ended last, until the next run starts.
    last_exit: Option<i32>,
    /// The line being read: its bytes, its run, and the time of its last byte.
    partial: Vec<u8>,
    partial_run: Option<u32>,
    partial_at: Option<i64>,
}

impl Lines {
    /// Cuts `data`, read from `source` at `start`, into items handed to `sink`.
    fn push(
        &mut self,
        source: &Source<'_>,
        start: u64,
        data: &[u8],
        sink: &mut impl FnMut(LogItem) -> io::Result<()>,
    ) -> io::Result<()> {
        self.enter(source);
        let mut done = 0;
        while done < data.len() {
            let at = start + done as u64;
            self.apply_records(source, at, sink)?;
            // Up to the next run's start: its bytes are that run's.
            let until = self
                .next_run_start(source, at)
                .map_or(data.len(), |offset| (offset - start) as usize)
                .min(data.len());
            let piece = &data[done..until];
            if self.partial.is_empty() {
                self.partial_run = self.run;
            }
            if let Some(newline) = piece.iter().position(|&byte| byte == b'\n') {
                self.partial.extend_from_slice(&piece[..newline]);
                let end = at + newline as u64 + 1;
                self.partial_at = self.time_of(source, end);
                self.emit(true, sink)?;
                done += newline + 1;
            } else {
                self.partial.extend_from_slice(piece);
                self.partial_at = self.time_of(source, start + until as u64);
                done = until;
                if self.partial.len() >= MAX_LINE {
                    self.emit(false, sink)?;
                }
            }
        }
        self.apply_records(source, start + data.len() as u64, sink)
    }

    /// Applies the records of `source` up to `position` (every byte before it has been read):
    /// a run that started there, or ended.
    fn reach(
        &mut self,
        source: &Source<'_>,
        position: u64,
        sink: &mut impl FnMut(LogItem) -> io::Result<()>,
    ) -> io::Result<()> {
        self.enter(source);
        self.apply_records(source, position, sink)
    }

    /// Hands on the last line, the log having ended.
    fn finish(&mut self, sink: &mut impl FnMut(LogItem) -> io::Result<()>) -> io::Result<()> {
        if self.partial.is_empty() {
            return Ok(());
        }
        self.emit(false, sink)
    }

    /// Starts on the records of `source` if it is another file than the last bytes'.
    fn enter(&mut self, source: &Source<'_>) {
        if self.file == Some(source.id) {
            return;
        }
        self.file = Some(source.id);
        self.next_record = 0;
        self.next_start = 0;
        self.next_time = 0;
        self.covered_from = 0;
        if !source.indexed {
            self.run = None;
        }
    }

    /// Applies the run starts, continuations and exits of `source` at or before `position`.
    fn apply_records(
        &mut self,
        source: &Source<'_>,
        position: u64,
        sink: &mut impl FnMut(LogItem) -> io::Result<()>,
    ) -> io::Result<()> {
        while let Some(&record) = source.records.get(self.next_record) {
            if record.offset() > position {
                break;
            }
            self.next_record += 1;
            match record {
                Record::RunStart { run, at, .. } => {
                    if !self.partial.is_empty() {
                        // The run ended its last line.
                        self.emit(true, sink)?;
                    }
                    if run > 0 {
                        sink(LogItem::Restart(Restart {
                            run,
                            at,
                            previous_exit: self.last_exit,
                        }))?;
                    }
                    self.run = Some(run);
                    self.last_exit = None;
                }
                Record::RunContinued { run, .. } => self.run = Some(run),
                Record::Exit { code, .. } => self.last_exit = Some(code),
                Record::Header { .. } | Record::Read { .. } => {}
            }
        }
        Ok(())
    }

    /// The offset of the next run start of `source` after `position` (which only grows).
    fn next_run_start(&mut self, source: &Source<'_>, position: u64) -> Option<u64> {
        while let Some(&record) = source.records.get(self.next_start) {
            if let Record::RunStart { offset, .. } = record
                && offset > position
            {
                return Some(offset);
            }
            self.next_start += 1;
        }
        None
    }

    /// When the byte before `end` was read, if a record of `source` says.
    fn time_of(&mut self, source: &Source<'_>, end: u64) -> Option<i64> {
        while let Some(&record) = source.records.get(self.next_time) {
            match record {
                Record::Read { end: covered, at } if covered >= end => {
                    return (self.covered_from < end).then_some(at);
                }
                Record::Read { end: covered, .. } => self.covered_from = covered,
                Record::RunStart { offset, .. } | Record::Exit { offset, .. } => {
                    if offset >= end {
                        // The byte is before this record, and no read covered it.
                        return None;
                    }
                    self.covered_from = self.covered_from.max(offset);
                }
                Record::RunContinued { .. } | Record::Header { .. } => {}
            }
            self.next_time += 1;
        }
        None
    }

    /// Hands on the line being read, `ended` or not.
    fn emit(
        &mut self,
        ended: bool,
        sink: &mut impl FnMut(LogItem) -> io::Result<()>,
    ) -> io::Result<()> {
        let line = LogLine {
            text: std::mem::take(&mut self.partial),
            ended,
            at: self.partial_at.take(),
            run: self.partial_run,
        };
        self.partial_run = self.run;
        sink(LogItem::Line(line))
    }
}
