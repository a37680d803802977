//! `TFRecord` framing: how an event file cuts into records, read incrementally.
//!
//! A record is a little-endian `u64` length, the masked CRC32C of those 8 bytes (`u32`), the
//! data, and the masked CRC32C of the data (`u32`). A [`Cursor`] remembers how far a file has been
//! read, so a file that is still being written is read again from where the last read stopped.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use crc::{CRC_32_ISCSI, Crc, Table};

use crate::problem::Defect;

/// The longest record accepted: a longer length is taken for corruption, not allocated.
pub const MAX_RECORD_LEN: u64 = 256 << 20;

/// The length and its checksum.
const HEADER_LEN: u64 = 12;
/// The data's checksum.
const FOOTER_LEN: u64 = 4;
/// CRC32C (Castagnoli), the checksum of `TFRecord`, sliced by 16 for speed.
static CRC32C: Crc<u32, Table<16>> = Crc::<u32, Table<16>>::new(&CRC_32_ISCSI);

/// The masked CRC32C of `bytes` that `TFRecord` uses: the checksum rotated right by 15 bits,
/// plus a constant.
pub fn masked_crc(bytes: &[u8]) -> u32 {
    CRC32C
        .checksum(bytes)
        .rotate_right(15)
        .wrapping_add(0xa282_ead8)
}

/// Why a read stopped before the end of the file, for good.
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    /// The record at the cursor's offset is corrupt.
    Corrupt(Defect),
    /// The file is shorter than the bytes already read (its size is given).
    Shrank(u64),
}

/// How far one file has been read: the byte offset of the first record not yet read, and how many
/// records precede it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cursor {
    /// The byte offset of the next record.
    pub offset: u64,
    /// The records read so far.
    pub records: u64,
}

impl Cursor {
    /// Reads the complete records appended to `path` since the last call, handing each one's data
    /// to `each`, and advances past them. A record cut short by the end of the file is left for a
    /// later call. Returns `Ok(Some(stop))` when a record is corrupt, `each` rejects one, or the
    /// file shrank; the cursor then stays at that record.
    pub fn read_appended(
        &mut self,
        path: &Path,
        mut each: impl FnMut(&[u8]) -> Result<(), Defect>,
    ) -> io::Result<Option<Stop>> {
        let mut file = File::open(path)?;
        let size = file.metadata()?.len();
        let Some(available) = size.checked_sub(self.offset) else {
            return Ok(Some(Stop::Shrank(size)));
        };
        file.seek(SeekFrom::Start(self.offset))?;
        let mut reader = BufReader::with_capacity(1 << 16, file.take(available));
        let mut data = Vec::new();
        loop {
            let remaining = size - self.offset;
            if remaining < HEADER_LEN {
                return Ok(None);
            }
            let mut length = [0; 8];
            reader.read_exact(&mut length)?;
            let mut length_crc = [0; 4];
            reader.read_exact(&mut length_crc)?;
            if masked_crc(&length) != u32::from_le_bytes(length_crc) {
                return Ok(Some(Stop::Corrupt(Defect::LengthChecksum)));
            }
            let length = u64::from_le_bytes(length);
            if length > MAX_RECORD_LEN {
                return Ok(Some(Stop::Corrupt(Defect::AbsurdLength(length))));
            }
            if remaining < HEADER_LEN + length + FOOTER_LEN {
                return Ok(None);
            }
            data.resize(length as usize, 0);
            reader.read_exact(&mut data)?;
            let mut data_crc = [0; FOOTER_LEN as usize];
            reader.read_exact(&mut data_crc)?;
            if masked_crc(&data) != u32::from_le_bytes(data_crc) {
                return Ok(Some(Stop::Corrupt(Defect::DataChecksum)));
            }
            if let Err(defect) = each(&data) {
                return Ok(Some(Stop::Corrupt(defect)));
            }
            self.offset += HEADER_LEN + length + FOOTER_LEN;
            self.records += 1;
        }
    }
}

/// Frames `data` as one `TFRecord`, as TensorFlow's writer does.
pub fn frame(data: &[u8]) -> Vec<u8> {
    let length = (data.len() as u64).to_le_bytes();
    let mut record = Vec::with_capacity(data.len() + 16);
    record.extend_from_slice(&length);
    record.extend_from_slice(&masked_crc(&length).to_le_bytes());
    record.extend_from_slice(data);
    record.extend_from_slice(&masked_crc(data).to_le_bytes());
    record
}

#[cfg(test)]
mod tests {
    use std::fs;

    use proptest::prelude::*;

    use super::*;

    /// Reads `path` from `cursor`, returning the records read and why the read stopped.
    fn read(cursor: &mut Cursor, path: &Path) -> (Vec<Vec<u8>>, Option<Stop>) {
        let mut records = Vec::new();
        let stop = cursor
            .read_appended(path, |data| {
                records.push(data.to_vec());
                Ok(())
            })
            .expect("readable");
        (records, stop)
    }

    fn file_with(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("records");
        fs::write(&path, bytes).expect("write");
        (dir, path)
    }

    #[test]
    fn masked_crc_matches_tensorflow() {
        // CRC32C("123456789") is 0xe3069283 (the check value of CRC-32/ISCSI); masked as
        // TensorFlow's crc32c::Mask does.
        let crc: u32 = 0xe306_9283;
        let masked = crc.rotate_right(15).wrapping_add(0xa282_ead8);
        assert_eq!(masked_crc(b"123456789"), masked);
    }

    #[test]
    fn reads_records_and_resumes_after_a_record_cut_short() {
        let first = frame(b"first");
        let second = frame(b"second record");
        let cut = 7;
        let mut bytes = first.clone();
        bytes.extend_from_slice(&second[..cut]);
        let (_dir, path) = file_with(&bytes);

        let mut cursor = Cursor::default();
        assert_eq!(read(&mut cursor, &path), (vec![b"first".to_vec()], None));
        assert_eq!(cursor.offset, first.len() as u64);
        assert_eq!(cursor.records, 1);

        // Header complete, data not yet.
        bytes.extend_from_slice(&second[cut..14]);
        fs::write(&path, &bytes).expect("write");
        assert_eq!(read(&mut cursor, &path), (vec![], None));

        bytes.extend_from_slice(&second[14..]);
        fs::write(&path, &bytes).expect("write");
        assert_eq!(
            read(&mut cursor, &path),
            (vec![b"second record".to_vec()], None)
        );
        assert_eq!(cursor.offset, bytes.len() as u64);
        assert_eq!(cursor.records, 2);
    }

    #[test]
    fn stops_at_a_corrupt_data_checksum() {
        let mut bytes = frame(b"good");
        let bad_at = bytes.len() as u64;
        let mut bad = frame(b"bad");
        let last = bad.len() - 1;
        bad[last] ^= 1;
        bytes.extend_from_slice(&bad);
        bytes.extend_from_slice(&frame(b"after"));
        let (_dir, path) = file_with(&bytes);

        let mut cursor = Cursor::default();
        let (records, stop) = read(&mut cursor, &path);
        assert_eq!(records, vec![b"good".to_vec()]);
        assert_eq!(stop, Some(Stop::Corrupt(Defect::DataChecksum)));
        assert_eq!(
            cursor,
            Cursor {
                offset: bad_at,
                records: 1
            }
        );
    }

    #[test]
    fn stops_at_a_corrupt_length() {
        let mut bytes = frame(b"data");
        bytes[0] ^= 1;
        let (_dir, path) = file_with(&bytes);
        assert_eq!(
            read(&mut Cursor::default(), &path),
            (vec![], Some(Stop::Corrupt(Defect::LengthChecksum)))
        );
    }

    #[test]
    fn stops_at_an_absurd_length_without_allocating_it() {
        let length = u64::MAX.to_le_bytes();
        let mut bytes = length.to_vec();
        bytes.extend_from_slice(&masked_crc(&length).to_le_bytes());
        bytes.extend_from_slice(&[0; 32]);
        let (_dir, path) = file_with(&bytes);
        assert_eq!(
            read(&mut Cursor::default(), &path),
            (vec![], Some(Stop::Corrupt(Defect::AbsurdLength(u64::MAX))))
        );
    }

    #[test]
    fn an_empty_file_has_no_records() {
        let (_dir, path) = file_with(&[]);
        assert_eq!(read(&mut Cursor::default(), &path), (vec![], None));
    }

    #[test]
    fn a_shrunk_file_is_reported() {
        let bytes = frame(b"data");
        let (_dir, path) = file_with(&bytes);
        let mut cursor = Cursor::default();
        read(&mut cursor, &path);
        fs::write(&path, b"x").expect("write");
        assert_eq!(read(&mut cursor, &path), (vec![], Some(Stop::Shrank(1))));
    }

    #[test]
    fn a_rejected_record_stops_the_read_before_it() {
        let mut bytes = frame(b"one");
        bytes.extend_from_slice(&frame(b"two"));
        let (_dir, path) = file_with(&bytes);
        let mut cursor = Cursor::default();
        let stop = cursor.read_appended(&path, |data| {
            if data == b"two" {
                Err(Defect::DataChecksum)
            } else {
                Ok(())
            }
        });
        assert_eq!(
            stop.expect("readable"),
            Some(Stop::Corrupt(Defect::DataChecksum))
        );
        assert_eq!(
            cursor,
            Cursor {
                offset: 19,
                records: 1
            }
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Arbitrary bytes, alone or after valid records, never panic the reader, and whatever it
        /// returns is a prefix of the valid records.
        #[test]
        fn arbitrary_bytes_never_panic(
            valid in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..4),
            garbage in proptest::collection::vec(any::<u8>(), 0..200),
        ) {
            let mut bytes = Vec::new();
            for data in &valid {
                bytes.extend_from_slice(&frame(data));
            }
            bytes.extend_from_slice(&garbage);
            let (_dir, path) = file_with(&bytes);
            let mut cursor = Cursor::default();
            let (records, _stop) = read(&mut cursor, &path);
            prop_assert!(records.len() >= valid.len());
            prop_assert_eq!(&records[..valid.len()], &valid[..]);
            prop_assert!(cursor.offset <= bytes.len() as u64);
        }
    }
}
