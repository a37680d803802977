//! The scalar curves of a training job (loss, accuracy, learning rate...), read from the
//! `TensorBoard` event files it writes, while it writes them.
//!
//! # The format
//!
//! An event file (`events.out.tfevents.<time>.<host>...`) is a sequence of `TFRecord` records:
//! a `u64` little-endian length, the masked CRC32C of those 8 bytes, the data, and the masked
//! CRC32C of the data (mask: the checksum rotated right by 15 bits, plus `0xa282ead8`). Each
//! record's data is a `tensorflow.Event` protocol buffer: a wall time, a step, and a `Summary`
//! of named values ([`proto`] declares the fields read, with `prost`). A scalar is either a
//! value's `simple_value` (TensorFlow 1) or a one-element numeric tensor of the `scalars` plugin
//! (TensorFlow 2's `tf.summary.scalar`, Keras' `TensorBoard` callback); other values (images,
//! histograms, text...) are skipped. The text a job logs is never parsed.
//!
//! # Reading
//!
//! [`Runs::scan`] finds the event files under a log directory: each directory holding some is a
//! run, named by its path relative to the root (Keras writes `train` and `validation`).
//! [`Runs::refresh`] finds new files and reads what was appended to each since the last read: a
//! file remembers the offset it was read to, and a record cut short by the end of the file is
//! left for the next refresh, so a file being written is read bit by bit, without error.
//! A corrupt record (wrong checksum, a length over [`MAX_RECORD_LEN`], data that is no `Event`)
//! stops the reading of its file for good: the points before it are kept, and the file's
//! [`Problem`] says where and what. Nothing read from a file panics.
//!
//! # Using what was read
//!
//! - [`Runs::series`]: every (run, tag, [`Point`]s) series, for charts against step or wall time;
//!   [`Runs::points`] for one.
//! - [`downsample`]: at most a given number of a series' points, for a chart
//!   (largest-triangle-three-buckets).
//! - [`Runs::main_tag`] and [`Runs::latest`]: the main scalar (`loss`, `epoch_loss`, any
//!   `...loss`, or the first tag) and its point at the highest step, as a [`Progress`].
//! - [`Runs::problems`]: what could not be read, to show beside the curves.
//! - [`Places`]: several roots in order of preference (a job's own directory, then its claims'),
//!   kept between refreshes; the first with a scalar gives the curves and the progress.
//!
//! # Writing
//!
//! [`EventWriter`] writes scalars into a new event file, as TensorFlow 1 does: for programs
//! without TensorFlow, and for tests and benchmarks of the reading.
//!
//! ```no_run
//! use trainctl_events::{Runs, downsample};
//!
//! let mut runs = Runs::scan("/tmp/logs");
//! loop {
//!     for series in runs.series() {
//!         let points = downsample(series.points, 2_000);
//!         println!("{} {}: {} points", series.run, series.tag, points.len());
//!     }
//!     if let Some(progress) = runs.latest() {
//!         println!("step {}: {} = {}", progress.step, progress.tag, progress.value);
//!     }
//!     for problem in runs.problems() {
//!         eprintln!("{problem}");
//!     }
//!     std::thread::sleep(std::time::Duration::from_secs(5));
//!     runs.refresh();
//! }
//! ```

mod downsample;
mod places;
mod problem;
mod progress;
pub mod proto;
mod record;
mod runs;
mod scalar;
mod writer;

pub use downsample::downsample;
pub use places::Places;
pub use problem::{Defect, Problem, ProblemKind};
pub use progress::Progress;
pub use record::MAX_RECORD_LEN;
pub use runs::{Runs, Series};
pub use scalar::Point;
pub use writer::EventWriter;
