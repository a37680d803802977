//! Event files written by real TensorFlow, read by `trainctl-events`: `tf.summary.scalar` in two
//! runs (with a histogram and an image beside the scalars), a TensorFlow 1 style `simple_value`,
//! and what Keras' `TensorBoard` callback writes during a small fit; then the same files cut at
//! arbitrary bytes, and corrupted.
//!
//! The test is ignored by a plain `cargo test`: it needs TensorFlow, which `./scripts/test`
//! installs (`scripts/python-env`), setting `TRAINCTL_EXAMPLES_PATH` to the virtualenv's `bin`
//! directory. Run by hand:
//!
//! ```sh
//! TRAINCTL_EXAMPLES_PATH=$(scripts/python-env) \
//!     cargo test -p trainctl-events --test tensorflow -- --ignored
//! ```
//!
//! `tests/tensorflow/write_events.py` writes the files into a temporary directory (about 10 s,
//! most of it importing TensorFlow) and prints the Keras fit's losses.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use trainctl_events::{Defect, Point, ProblemKind, Runs};

/// The variable that names the virtualenv's `bin` directory (set by `scripts/test`).
const EXAMPLES_PATH: &str = "TRAINCTL_EXAMPLES_PATH";
/// The steps `write_events.py` writes with `tf.summary.scalar`.
const STEPS: i64 = 20;

#[test]
#[ignore = "needs TensorFlow: run through ./scripts/test"]
fn reads_what_tensorflow_writes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let history = write_events(dir.path());

    summaries_are_read_exactly(dir.path());
    keras_curves_are_read(&dir.path().join("keras"), &history);
    let train = single_file(&dir.path().join("summaries/train"));
    a_cut_file_shows_its_readable_prefix(&train);
    a_corrupt_file_keeps_the_points_before_the_corruption(&train);
}

/// The Keras fit's per-epoch losses, as `write_events.py` printed them.
struct History {
    loss: Vec<f64>,
    val_loss: Vec<f64>,
}

/// Runs `write_events.py` into `dir`.
fn write_events(dir: &Path) -> History {
    let venv_bin = PathBuf::from(std::env::var_os(EXAMPLES_PATH).unwrap_or_else(|| {
        panic!(
            "{EXAMPLES_PATH} is not set: it names the bin directory of a virtualenv with \
             TensorFlow. Run this test through ./scripts/test, or as \
             `{EXAMPLES_PATH}=$(scripts/python-env) cargo test -p trainctl-events --test \
             tensorflow -- --ignored`"
        )
    }));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tensorflow/write_events.py");
    let output = Command::new(venv_bin.join("python"))
        .arg(&script)
        .arg(dir)
        .arg(STEPS.to_string())
        .output()
        .expect("run python");
    assert!(
        output.status.success(),
        "write_events.py failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).expect("UTF-8 output");
    let metric = |name: &str| -> Vec<f64> {
        let line = stdout
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no `{name}` line in:\n{stdout}"));
        line.split(' ')
            .map(|value| value.parse().expect("a float"))
            .collect()
    };
    History {
        loss: metric("loss"),
        val_loss: metric("val_loss"),
    }
}

/// `tf.summary.scalar`'s and `simple_value`'s runs, tags, steps and values, exactly.
fn summaries_are_read_exactly(dir: &Path) {
    let runs = Runs::scan(dir.join("summaries"));
    assert_eq!(runs.problems().count(), 0, "{:?}", problems(&runs));
    let series: Vec<(&str, &str)> = runs
        .series()
        .map(|series| (series.run, series.tag))
        .collect();
    assert_eq!(
        series,
        [
            ("train", "accuracy"),
            ("train", "loss"),
            ("v1", "v1_loss"),
            ("validation", "accuracy"),
            ("validation", "loss"),
        ]
    );
    for (run, tag) in series {
        let points = runs.points(run, tag).expect("the series");
        let read: Vec<i64> = points.iter().map(|point| point.step).collect();
        assert_eq!(read, (0..STEPS).collect::<Vec<_>>(), "{run} {tag}");
        for point in points {
            let step = as_f64(point.step);
            let expected = match (run, tag) {
                (_, "accuracy") => step / as_f64(STEPS),
                ("train", "loss") => 1.0 / (step + 1.0),
                ("validation", "loss") => 2.0 / (step + 1.0),
                _ => 3.0 / (step + 1.0),
            };
            assert_close(point.value, expected, &format!("{run} {tag}"));
            assert!(point.wall_time > 1.6e9, "{run} {tag}: wall time {point:?}");
        }
    }
    let progress = runs.latest().expect("a main scalar");
    assert_eq!(
        (progress.run.as_str(), progress.tag.as_str(), progress.step),
        ("train", "loss", STEPS - 1)
    );
    assert_close(progress.value, 1.0 / as_f64(STEPS), "latest loss");
}

/// What Keras' `TensorBoard` callback writes: `epoch_loss` per epoch in `train` and
/// `validation`, the main scalar.
fn keras_curves_are_read(dir: &Path, history: &History) {
    let runs = Runs::scan(dir);
    assert_eq!(runs.problems().count(), 0, "{:?}", problems(&runs));
    assert_eq!(runs.main_tag(), Some("epoch_loss"));
    for (run, losses) in [("train", &history.loss), ("validation", &history.val_loss)] {
        let points = runs.points(run, "epoch_loss").expect("epoch_loss");
        let epochs: Vec<i64> = points.iter().map(|point| point.step).collect();
        assert_eq!(epochs, [0, 1, 2], "{run}");
        for (point, loss) in points.iter().zip(losses) {
            assert_close(point.value, *loss, run);
        }
    }
    let progress = runs.latest().expect("a main scalar");
    assert_eq!((progress.run.as_str(), progress.step), ("train", 2));
    assert_close(progress.value, history.loss[2], "latest epoch_loss");
}

/// A copy of `file` cut every 97 bytes: the points read are a prefix of the whole file's, growing
/// with the cut, without a problem; once the rest is written, all of them.
fn a_cut_file_shows_its_readable_prefix(file: &Path) {
    let bytes = fs::read(file).expect("read the event file");
    let whole = read_copy(&bytes);
    assert_eq!(whole.len(), 20);
    let mut previous = 0;
    for cut in (0..bytes.len()).step_by(97).chain([bytes.len() - 1]) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(file.file_name().expect("a file name"));
        fs::write(&path, &bytes[..cut]).expect("write the cut copy");
        let mut runs = Runs::scan(dir.path());
        assert_eq!(
            runs.problems().count(),
            0,
            "cut at {cut}: {:?}",
            problems(&runs)
        );
        let read = runs.points("", "loss").unwrap_or_default().to_vec();
        assert_eq!(read[..], whole[..read.len()], "cut at {cut}");
        assert!(read.len() >= previous, "cut at {cut}");
        previous = read.len();

        fs::write(&path, &bytes).expect("write the rest");
        runs.refresh();
        assert_eq!(
            runs.points("", "loss").expect("loss"),
            &whole[..],
            "cut at {cut}"
        );
        assert_eq!(
            runs.problems().count(),
            0,
            "cut at {cut}: {:?}",
            problems(&runs)
        );
    }
    assert!(
        previous >= whole.len() - 1,
        "the last cut loses one record at most"
    );
}

/// A copy of `file` with one byte flipped in its middle: the points before the damaged record,
/// and a problem that says where it is.
fn a_corrupt_file_keeps_the_points_before_the_corruption(file: &Path) {
    let mut bytes = fs::read(file).expect("read the event file");
    let whole = read_copy(&bytes);
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x20;
    let dir = tempfile::tempdir().expect("temp dir");
    fs::write(
        dir.path().join(file.file_name().expect("a file name")),
        &bytes,
    )
    .expect("write");
    let runs = Runs::scan(dir.path());
    let read = runs.points("", "loss").expect("loss");
    assert!(
        !read.is_empty() && read.len() < whole.len(),
        "{} points",
        read.len()
    );
    assert_eq!(read, &whole[..read.len()]);
    let all: Vec<_> = runs.problems().collect();
    let [problem] = all[..] else {
        panic!("one problem: {:?}", problems(&runs));
    };
    let ProblemKind::Corrupt { offset, defect, .. } = &problem.kind else {
        panic!("a corrupt record: {problem}");
    };
    assert!(*offset <= u64::try_from(middle).expect("u64"), "{problem}");
    assert!(
        matches!(defect, Defect::DataChecksum | Defect::LengthChecksum),
        "{problem}"
    );
}

/// The `loss` points of an event file holding `bytes`, read from a copy.
fn read_copy(bytes: &[u8]) -> Vec<Point> {
    let dir = tempfile::tempdir().expect("temp dir");
    fs::write(dir.path().join("events.out.tfevents.1.copy"), bytes).expect("write the copy");
    Runs::scan(dir.path())
        .points("", "loss")
        .expect("loss")
        .to_vec()
}

/// The one event file in `dir`.
fn single_file(dir: &Path) -> PathBuf {
    let files: Vec<PathBuf> = fs::read_dir(dir)
        .expect("list the run")
        .map(|entry| entry.expect("an entry").path())
        .collect();
    let [file] = &files[..] else {
        panic!("one event file in {}: {files:?}", dir.display());
    };
    file.clone()
}

fn problems(runs: &Runs) -> Vec<String> {
    runs.problems().map(ToString::to_string).collect()
}

/// Values are written as `f32`: equal within its precision.
fn assert_close(read: f64, expected: f64, what: &str) {
    assert!(
        (read - expected).abs() <= 1e-6 * expected.abs().max(1.0),
        "{what}: read {read}, expected {expected}"
    );
}

/// A test's step as a float.
fn as_f64(step: i64) -> f64 {
    f64::from(i32::try_from(step).expect("a small step"))
}
