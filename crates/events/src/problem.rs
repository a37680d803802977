//! What went wrong while reading, as values the caller shows beside the curves.

use std::fmt;
use std::path::PathBuf;

/// Something that kept part of the event files from being read. The points read before it are
/// kept.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// The file or directory, relative to the root given to [`Runs::scan`](crate::Runs::scan)
    /// (empty for the root itself).
    pub path: PathBuf,
    /// What happened.
    pub kind: ProblemKind,
}

/// What kept a file or directory from being read.
#[derive(Debug, Clone, PartialEq)]
pub enum ProblemKind {
    /// A record is corrupt: the file is not read past it, for good.
    Corrupt {
        /// The byte offset at which the corrupt record starts.
        offset: u64,
        /// How many records of the file were read before it.
        records_read: u64,
        /// What is wrong with it.
        defect: Defect,
    },
    /// The file became shorter than what had been read from it (it was replaced or truncated):
    /// it is not read further, for good.
    Shrank {
        /// Its size now.
        size: u64,
        /// The bytes that had been read.
        read: u64,
    },
    /// The file or directory could not be read (permissions, I/O error); it is tried again at
    /// the next refresh.
    Unreadable {
        /// The operating system's error message.
        error: String,
    },
}

/// What is wrong with a corrupt record.
#[derive(Debug, Clone, PartialEq)]
pub enum Defect {
    /// The checksum of the record's length does not match it.
    LengthChecksum,
    /// The length is more than [`MAX_RECORD_LEN`](crate::MAX_RECORD_LEN).
    AbsurdLength(u64),
    /// The checksum of the record's data does not match it.
    DataChecksum,
    /// The data is not an `Event` protocol buffer (the decoder's message).
    NotAnEvent(String),
}

impl Problem {
    /// Whether reading goes on past this problem at the next refresh (only for
    /// [`ProblemKind::Unreadable`]).
    #[must_use]
    pub fn is_transient(&self) -> bool {
        matches!(self.kind, ProblemKind::Unreadable { .. })
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.as_os_str().is_empty() {
            ".".into()
        } else {
            self.path.display().to_string()
        };
        match &self.kind {
            ProblemKind::Corrupt {
                offset,
                records_read,
                defect,
            } => write!(
                f,
                "{path}: record at byte {offset} is corrupt ({defect}); \
                 read {records_read} records before it"
            ),
            ProblemKind::Shrank { size, read } => write!(
                f,
                "{path}: the file shrank to {size} bytes after {read} bytes had been read; \
                 not read further"
            ),
            ProblemKind::Unreadable { error } => write!(f, "{path}: cannot be read: {error}"),
        }
    }
}

impl fmt::Display for Defect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Defect::LengthChecksum => f.write_str("the checksum of its length is wrong"),
            Defect::AbsurdLength(length) => write!(f, "its length of {length} bytes is absurd"),
            Defect::DataChecksum => f.write_str("the checksum of its data is wrong"),
            Defect::NotAnEvent(error) => write!(f, "not an Event: {error}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_say_where_and_what() {
        let corrupt = Problem {
            path: "train/events.out.tfevents.1.host".into(),
            kind: ProblemKind::Corrupt {
                offset: 1234,
                records_read: 7,
                defect: Defect::DataChecksum,
            },
        };
        assert_eq!(
            corrupt.to_string(),
            "train/events.out.tfevents.1.host: record at byte 1234 is corrupt \
             (the checksum of its data is wrong); read 7 records before it"
        );
        assert!(!corrupt.is_transient());
        let unreadable = Problem {
            path: PathBuf::new(),
            kind: ProblemKind::Unreadable {
                error: "Permission denied".into(),
            },
        };
        assert_eq!(
            unreadable.to_string(),
            ".: cannot be read: Permission denied"
        );
        assert!(unreadable.is_transient());
    }
}
