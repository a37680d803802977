//! Event files written by the tests' own encoder (`prost` and [`frame`]), read as runs.

use std::fs::{self, OpenOptions};
use std::io::Write;

use proptest::prelude::*;

use super::*;
use crate::proto::{DataType, Kind, PluginData, Summary, SummaryMetadata, TensorProto, Value};
use crate::record::frame;
use crate::{MAX_RECORD_LEN, Progress};

/// The first record of every file TensorFlow writes.
fn file_version() -> Vec<u8> {
    frame(
        &Event {
            wall_time: 1e9,
            step: 0,
            what: Some(What::FileVersion("brain.Event:2".into())),
        }
        .encode_to_vec(),
    )
}

/// A framed event at `step` holding `values`; its wall time is 1e9 + step.
fn event(step: i64, values: Vec<Value>) -> Vec<u8> {
    frame(
        &Event {
            wall_time: wall_time(step),
            step,
            what: Some(What::Summary(Summary { value: values })),
        }
        .encode_to_vec(),
    )
}

fn wall_time(step: i64) -> f64 {
    1e9 + f64::from(small(step))
}

/// A TensorFlow 1 scalar.
fn simple(tag: &str, value: f32) -> Value {
    Value {
        tag: tag.into(),
        metadata: None,
        kind: Some(Kind::SimpleValue(value)),
    }
}

/// A TensorFlow 2 scalar: a rank-0 tensor with the `scalars` plugin's metadata.
fn tensor(tag: &str, tensor: TensorProto) -> Value {
    Value {
        tag: tag.into(),
        metadata: Some(plugin("scalars")),
        kind: Some(Kind::Tensor(tensor)),
    }
}

fn plugin(name: &str) -> SummaryMetadata {
    SummaryMetadata {
        plugin_data: Some(PluginData {
            plugin_name: name.into(),
        }),
    }
}

fn float_content(value: f32) -> TensorProto {
    TensorProto {
        dtype: DataType::Float as i32,
        tensor_content: value.to_le_bytes().to_vec(),
        ..TensorProto::default()
    }
}

/// An event file of `loss` = 1 / (step + 1) for `steps`, as TensorFlow 2 writes it.
fn loss_file(steps: std::ops::Range<i64>) -> Vec<u8> {
    let mut bytes = file_version();
    for step in steps {
        bytes.extend(event(step, vec![tensor("loss", float_content(loss(step)))]));
    }
    bytes
}

/// A test's step, small enough for any float.
fn small(step: i64) -> u16 {
    u16::try_from(step).expect("a small step")
}

fn loss(step: i64) -> f32 {
    1.0 / (f32::from(small(step)) + 1.0)
}

fn write(root: &Path, relative: &str, bytes: &[u8]) {
    let path = root.join(relative);
    fs::create_dir_all(path.parent().expect("a parent")).expect("create dirs");
    fs::write(path, bytes).expect("write");
}

fn append(root: &Path, relative: &str, bytes: &[u8]) {
    let mut file = OpenOptions::new()
        .append(true)
        .open(root.join(relative))
        .expect("open");
    file.write_all(bytes).expect("append");
}

/// (step, value) of a series.
fn steps_and_values(runs: &Runs, run: &str, tag: &str) -> Vec<(i64, f64)> {
    runs.points(run, tag)
        .unwrap_or_default()
        .iter()
        .map(|point| (point.step, point.value))
        .collect()
}

fn expected_losses(steps: std::ops::Range<i64>) -> Vec<(i64, f64)> {
    steps.map(|step| (step, f64::from(loss(step)))).collect()
}

fn problems(runs: &Runs) -> Vec<Problem> {
    runs.problems().cloned().collect()
}

const FILE: &str = "events.out.tfevents.1700000000.host.1.v2";

#[test]
fn reads_every_scalar_form_and_skips_other_values() {
    let root = tempfile::tempdir().expect("temp dir");
    let mut bytes = file_version();
    bytes.extend(event(
        1,
        vec![
            simple("tf1/accuracy", 0.5),
            tensor(
                "float_val",
                TensorProto {
                    dtype: DataType::Float as i32,
                    float_val: vec![0.25],
                    ..TensorProto::default()
                },
            ),
            tensor("float_content", float_content(0.125)),
            tensor(
                "double_content",
                TensorProto {
                    dtype: DataType::Double as i32,
                    tensor_content: 0.1_f64.to_le_bytes().to_vec(),
                    ..TensorProto::default()
                },
            ),
            tensor(
                "half",
                TensorProto {
                    dtype: DataType::Half as i32,
                    half_val: vec![0x3e00],
                    ..TensorProto::default()
                },
            ),
            Value {
                tag: "histogram".into(),
                metadata: Some(plugin("histograms")),
                kind: Some(Kind::Tensor(float_content(3.0))),
            },
            Value {
                tag: "image".into(),
                metadata: None,
                kind: None,
            },
        ],
    ));
    write(root.path(), FILE, &bytes);

    let runs = Runs::scan(root.path());
    let series: Vec<_> = runs
        .series()
        .map(|series| {
            let points = series.points.iter().map(|point| (point.step, point.value));
            (series.run, series.tag, points.collect::<Vec<_>>())
        })
        .collect();
    assert_eq!(
        series,
        vec![
            ("", "double_content", vec![(1, 0.1)]),
            ("", "float_content", vec![(1, 0.125)]),
            ("", "float_val", vec![(1, 0.25)]),
            ("", "half", vec![(1, 1.5)]),
            ("", "tf1/accuracy", vec![(1, 0.5)]),
        ]
    );
    assert_eq!(
        runs.points("", "half").expect("half")[0]
            .wall_time
            .to_bits(),
        wall_time(1).to_bits()
    );
    assert_eq!(problems(&runs), vec![]);
}

#[test]
fn a_tag_keeps_the_plugin_its_first_value_named() {
    let root = tempfile::tempdir().expect("temp dir");
    let mut bytes = file_version();
    for step in 0..3 {
        let first = step == 0;
        let value = |tag: &str, name: &str| Value {
            tag: tag.into(),
            metadata: first.then(|| plugin(name)),
            kind: Some(Kind::Tensor(float_content(1.0))),
        };
        bytes.extend(event(
            step,
            vec![value("loss", "scalars"), value("text", "text")],
        ));
    }
    write(root.path(), FILE, &bytes);
    let runs = Runs::scan(root.path());
    let tags: Vec<&str> = runs.series().map(|series| series.tag).collect();
    assert_eq!(tags, ["loss"]);
    assert_eq!(runs.points("", "loss").expect("loss").len(), 3);
}

#[test]
fn runs_are_the_directories_holding_event_files() {
    let root = tempfile::tempdir().expect("temp dir");
    for relative in ["train", "validation", "", "worker-0/eval"] {
        let path = if relative.is_empty() {
            FILE.to_owned()
        } else {
            format!("{relative}/{FILE}")
        };
        write(root.path(), &path, &loss_file(0..2));
    }
    write(root.path(), "checkpoints/model.ckpt", b"not events");
    write(root.path(), "train/plugins/profile/trace.json", b"{}");
    fs::create_dir(root.path().join("empty")).expect("mkdir");

    let runs = Runs::scan(root.path());
    let names: Vec<&str> = runs.series().map(|series| series.run).collect();
    assert_eq!(names, ["", "train", "validation", "worker-0/eval"]);
    assert_eq!(runs.root(), root.path());
    assert_eq!(problems(&runs), vec![]);
}

#[test]
fn a_runs_files_are_read_in_name_order() {
    let root = tempfile::tempdir().expect("temp dir");
    // The job restarted: a second file, later by name, continues the first.
    write(
        root.path(),
        "train/events.out.tfevents.2000.host",
        &loss_file(5..8),
    );
    write(
        root.path(),
        "train/events.out.tfevents.1000.host",
        &loss_file(0..5),
    );
    let runs = Runs::scan(root.path());
    assert_eq!(
        steps_and_values(&runs, "train", "loss"),
        expected_losses(0..8)
    );
}

#[test]
fn a_missing_root_has_no_runs_until_it_is_created() {
    let parent = tempfile::tempdir().expect("temp dir");
    let root = parent.path().join("logs");
    let mut runs = Runs::scan(&root);
    assert_eq!(runs.series().count(), 0);
    assert_eq!(problems(&runs), vec![]);
    assert_eq!(runs.latest(), None);

    write(&root, FILE, &loss_file(0..1));
    runs.refresh();
    assert_eq!(steps_and_values(&runs, "", "loss"), expected_losses(0..1));
}

#[test]
fn refresh_reads_appended_records_new_files_and_new_runs() {
    let root = tempfile::tempdir().expect("temp dir");
    write(root.path(), &format!("train/{FILE}"), &loss_file(0..3));
    let mut runs = Runs::scan(root.path());
    assert_eq!(
        steps_and_values(&runs, "train", "loss"),
        expected_losses(0..3)
    );

    runs.refresh();
    assert_eq!(
        steps_and_values(&runs, "train", "loss"),
        expected_losses(0..3)
    );

    for step in 3..6 {
        append(
            root.path(),
            &format!("train/{FILE}"),
            &event(step, vec![tensor("loss", float_content(loss(step)))]),
        );
    }
    write(
        root.path(),
        "train/events.out.tfevents.1800000000.host",
        &loss_file(6..7),
    );
    write(root.path(), &format!("validation/{FILE}"), &loss_file(0..1));
    runs.refresh();
    assert_eq!(
        steps_and_values(&runs, "train", "loss"),
        expected_losses(0..7)
    );
    assert_eq!(
        steps_and_values(&runs, "validation", "loss"),
        expected_losses(0..1)
    );
    assert_eq!(problems(&runs), vec![]);
}

#[test]
fn a_record_cut_short_is_read_once_the_rest_is_written() {
    let root = tempfile::tempdir().expect("temp dir");
    let whole = loss_file(0..4);
    let last = event(3, vec![tensor("loss", float_content(loss(3)))]);
    let complete = whole.len() - last.len();
    // Every cut inside the last record: header, data, or footer missing in part.
    for cut in complete + 1..whole.len() {
        write(root.path(), FILE, &whole[..cut]);
        let mut runs = Runs::scan(root.path());
        assert_eq!(
            steps_and_values(&runs, "", "loss"),
            expected_losses(0..3),
            "cut {cut}"
        );
        assert_eq!(problems(&runs), vec![], "cut {cut}");

        append(root.path(), FILE, &whole[cut..]);
        runs.refresh();
        assert_eq!(
            steps_and_values(&runs, "", "loss"),
            expected_losses(0..4),
            "cut {cut}"
        );
        assert_eq!(problems(&runs), vec![], "cut {cut}");
    }
}

#[test]
fn a_corrupt_record_stops_its_file_and_is_reported() {
    let root = tempfile::tempdir().expect("temp dir");
    let good = loss_file(0..3);
    let mut bad = event(3, vec![tensor("loss", float_content(loss(3)))]);
    bad[14] ^= 0x40;
    let mut bytes = good.clone();
    bytes.extend(&bad);
    bytes.extend(event(4, vec![tensor("loss", float_content(loss(4)))]));
    write(root.path(), &format!("train/{FILE}"), &bytes);
    write(root.path(), &format!("validation/{FILE}"), &loss_file(0..2));

    let mut runs = Runs::scan(root.path());
    let expected_problem = Problem {
        path: Path::new("train").join(FILE),
        kind: ProblemKind::Corrupt {
            offset: good.len() as u64,
            records_read: 4,
            defect: Defect::DataChecksum,
        },
    };
    assert_eq!(
        steps_and_values(&runs, "train", "loss"),
        expected_losses(0..3)
    );
    assert_eq!(
        steps_and_values(&runs, "validation", "loss"),
        expected_losses(0..2)
    );
    assert_eq!(problems(&runs), vec![expected_problem.clone()]);
    assert!(expected_problem.to_string().starts_with(&format!(
        "train/{FILE}: record at byte {} is corrupt",
        good.len()
    )));

    // The file is not read past the corruption, and the problem stays, once.
    append(
        root.path(),
        &format!("train/{FILE}"),
        &event(5, vec![tensor("loss", float_content(loss(5)))]),
    );
    runs.refresh();
    assert_eq!(
        steps_and_values(&runs, "train", "loss"),
        expected_losses(0..3)
    );
    assert_eq!(problems(&runs), vec![expected_problem]);
}

#[test]
fn garbage_empty_files_and_absurd_lengths_never_panic() {
    let root = tempfile::tempdir().expect("temp dir");
    write(root.path(), "empty/events.out.tfevents.1", b"");
    write(
        root.path(),
        "garbage/events.out.tfevents.1",
        b"this is not a TFRecord file at all",
    );
    let absurd = (MAX_RECORD_LEN + 1).to_le_bytes();
    let mut bytes = loss_file(0..2);
    bytes.extend(absurd);
    bytes.extend(crate::record::masked_crc(&absurd).to_le_bytes());
    write(root.path(), "absurd/events.out.tfevents.1", &bytes);
    let mut not_an_event = loss_file(0..1);
    not_an_event.extend(frame(&[0xff; 10]));
    write(
        root.path(),
        "not-an-event/events.out.tfevents.1",
        &not_an_event,
    );

    let runs = Runs::scan(root.path());
    assert_eq!(
        steps_and_values(&runs, "absurd", "loss"),
        expected_losses(0..2)
    );
    assert_eq!(
        steps_and_values(&runs, "not-an-event", "loss"),
        expected_losses(0..1)
    );
    let kinds: Vec<(String, ProblemKind)> = runs
        .problems()
        .map(|problem| (problem.path.display().to_string(), problem.kind.clone()))
        .collect();
    let [absurd, garbage, not_an_event] = &kinds[..] else {
        panic!("three problems: {kinds:?}");
    };
    assert_eq!(
        absurd,
        &(
            "absurd/events.out.tfevents.1".to_owned(),
            ProblemKind::Corrupt {
                offset: loss_file(0..2).len() as u64,
                records_read: 3,
                defect: Defect::AbsurdLength(MAX_RECORD_LEN + 1),
            }
        )
    );
    assert_eq!(
        garbage,
        &(
            "garbage/events.out.tfevents.1".to_owned(),
            ProblemKind::Corrupt {
                offset: 0,
                records_read: 0,
                defect: Defect::LengthChecksum,
            }
        )
    );
    assert!(
        matches!(
            &not_an_event.1,
            ProblemKind::Corrupt {
                records_read: 2,
                defect: Defect::NotAnEvent(_),
                ..
            }
        ),
        "{not_an_event:?}"
    );
}

#[test]
fn the_main_scalar_is_loss_then_epoch_loss_then_any_loss_then_the_first_tag() {
    let cases: [(&[&str], &str); 5] = [
        (&["accuracy", "epoch_loss", "loss"], "loss"),
        (
            &["batch_loss", "epoch_accuracy", "epoch_loss"],
            "epoch_loss",
        ),
        (
            &["accuracy", "train/total_loss", "val/loss"],
            "train/total_loss",
        ),
        (&["learning_rate", "accuracy"], "accuracy"),
        (&[], ""),
    ];
    for (tags, expected) in cases {
        let root = tempfile::tempdir().expect("temp dir");
        let values = tags.iter().map(|tag| simple(tag, 1.0)).collect();
        let mut bytes = file_version();
        bytes.extend(event(1, values));
        write(root.path(), FILE, &bytes);
        let runs = Runs::scan(root.path());
        assert_eq!(runs.main_tag().unwrap_or_default(), expected, "{tags:?}");
    }
}

#[test]
fn latest_prefers_a_training_run_then_the_root_then_the_highest_step() {
    let root = tempfile::tempdir().expect("temp dir");
    write(root.path(), &format!("validation/{FILE}"), &loss_file(0..9));
    write(root.path(), &format!("other/{FILE}"), &loss_file(0..8));
    let mut runs = Runs::scan(root.path());
    let progress = |run: &str, step: i64| Progress {
        run: run.into(),
        tag: "loss".into(),
        step,
        value: f64::from(loss(step)),
        wall_time: wall_time(step),
    };
    assert_eq!(runs.latest(), Some(progress("validation", 8)));

    write(root.path(), FILE, &loss_file(0..3));
    runs.refresh();
    assert_eq!(runs.latest(), Some(progress("", 2)));

    // Out of order (a restart from a checkpoint): the highest step wins, the last read of equal
    // steps.
    let mut bytes = loss_file(0..6);
    bytes.extend(event(4, vec![tensor("loss", float_content(9.0))]));
    bytes.extend(event(5, vec![tensor("loss", float_content(7.0))]));
    write(root.path(), &format!("train/{FILE}"), &bytes);
    runs.refresh();
    assert_eq!(
        runs.latest(),
        Some(Progress {
            value: 7.0,
            ..progress("train", 5)
        })
    );

    // A training run under a directory is a training run too; the first by name wins.
    write(
        root.path(),
        &format!("worker-1/train/{FILE}"),
        &loss_file(0..20),
    );
    write(
        root.path(),
        &format!("chief-0/train/{FILE}"),
        &loss_file(0..4),
    );
    fs::remove_dir_all(root.path().join("train")).expect("remove train");
    let runs = Runs::scan(root.path());
    assert_eq!(runs.latest(), Some(progress("chief-0/train", 3)));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any bytes, framed as records (so that they reach the protocol buffer decoder) or not,
    /// after valid events, never panic a scan and keep the valid events' points.
    #[test]
    fn arbitrary_records_never_panic(
        records in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..6),
        tail in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let root = tempfile::tempdir().expect("temp dir");
        let mut bytes = loss_file(0..2);
        for record in &records {
            bytes.extend(frame(record));
        }
        bytes.extend(&tail);
        write(root.path(), FILE, &bytes);
        let mut runs = Runs::scan(root.path());
        runs.refresh();
        let points = steps_and_values(&runs, "", "loss");
        prop_assert!(points.len() >= 2);
        prop_assert_eq!(&points[..2], &expected_losses(0..2)[..]);
        let _ = runs.latest();
        let _ = runs.problems().map(ToString::to_string).count();
    }
}
