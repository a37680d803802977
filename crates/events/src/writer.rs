//! Writing event files: [`EventWriter`] writes scalars as TensorFlow 1's summary writer does (a
//! `brain.Event:2` first record, then one `Event` per value with a `simple_value`), so that a
//! program without TensorFlow can draw curves in the dashboard, and so that what reads event
//! files can be tested and measured on files of any size.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use prost::Message;

use crate::proto::{Event, Kind, Summary, Value, What};
use crate::record::frame;

/// An event file being written.
#[derive(Debug)]
pub struct EventWriter {
    file: BufWriter<File>,
    path: PathBuf,
}

impl EventWriter {
    /// Creates `dir` (and its parents) and a new event file in it,
    /// `events.out.tfevents.<seconds>.<host>.<pid>.<n>` as TensorFlow names them, holding the
    /// file's first record.
    pub fn create(dir: &Path) -> io::Result<EventWriter> {
        /// Tells apart the files one process creates in the same second.
        static CREATED: AtomicU64 = AtomicU64::new(0);
        fs::create_dir_all(dir)?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let name = format!(
            "events.out.tfevents.{}.trainctl.{}.{}",
            now.as_secs(),
            std::process::id(),
            CREATED.fetch_add(1, Ordering::Relaxed)
        );
        let path = dir.join(name);
        let mut writer = EventWriter {
            file: BufWriter::new(File::create_new(&path)?),
            path,
        };
        writer.write(&Event {
            wall_time: now.as_secs_f64(),
            step: 0,
            what: Some(What::FileVersion("brain.Event:2".to_owned())),
        })?;
        Ok(writer)
    }

    /// The file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends the value `value` of `tag` at `step`, written at `wall_time` (seconds since the
    /// Unix epoch). It reaches the file when the writer's buffer fills, at [`Self::flush`], or
    /// when the writer is dropped.
    pub fn scalar(&mut self, tag: &str, step: i64, wall_time: f64, value: f32) -> io::Result<()> {
        self.write(&Event {
            wall_time,
            step,
            what: Some(What::Summary(Summary {
                value: vec![Value {
                    tag: tag.to_owned(),
                    metadata: None,
                    kind: Some(Kind::SimpleValue(value)),
                }],
            })),
        })
    }

    /// Writes what is buffered to the file.
    pub fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }

    fn write(&mut self, event: &Event) -> io::Result<()> {
        self.file.write_all(&frame(&event.encode_to_vec()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Runs;

    #[test]
    fn what_is_written_is_read_back_with_its_steps_times_and_values() {
        let root = tempfile::tempdir().expect("temp dir");
        let mut writer = EventWriter::create(&root.path().join("train")).expect("create");
        for step in 0..5_u8 {
            let value = 1.0 / (f32::from(step) + 1.0);
            writer
                .scalar("loss", step.into(), 1e9 + f64::from(step), value)
                .expect("write");
        }
        writer.flush().expect("flush");
        let runs = Runs::scan(root.path());
        let points = runs.points("train", "loss").expect("the series");
        let read: Vec<(i64, f64, f64)> = points
            .iter()
            .map(|point| (point.step, point.wall_time, point.value))
            .collect();
        let expected: Vec<(i64, f64, f64)> = (0..5_u8)
            .map(|step| {
                let value = f64::from(1.0 / (f32::from(step) + 1.0));
                (step.into(), 1e9 + f64::from(step), value)
            })
            .collect();
        assert_eq!(read, expected);
        assert_eq!(runs.problems().count(), 0);
    }

    #[test]
    fn two_writers_in_one_directory_make_two_files() {
        let root = tempfile::tempdir().expect("temp dir");
        let first = EventWriter::create(root.path()).expect("create");
        let second = EventWriter::create(root.path()).expect("create");
        assert_ne!(first.path(), second.path());
        assert!(
            first
                .path()
                .file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("events.out.tfevents."))
        );
    }
}
