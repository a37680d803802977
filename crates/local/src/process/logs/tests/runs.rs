//! The index of a log (when each chunk was read, where each run began and ended), rotated with
//! its files, and the log read back as lines with their times and runs: `--tail`, `--since`,
//! `--previous` and the restart separators.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::*;
use crate::process::logs::index::{FORMAT_VERSION, RECORD_SIZE, Record};

/// `text` (RFC 3339) in Unix nanoseconds.
fn nanos(text: &str) -> i64 {
    let time: jiff::Timestamp = text.parse().expect("an RFC 3339 time");
    i64::try_from(time.as_nanosecond()).expect("in range")
}

/// `text` (RFC 3339) as a system time.
fn time(text: &str) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(u64::try_from(nanos(text)).expect("after 1970"))
}

/// A run of `dir/worker-0.log` started at `started`, within `max_size` × `max_files`.
fn run_of(dir: &Path, started: &str, max_size: u64, max_files: u32) -> LogWriter {
    let limit = LogLimit {
        max_size,
        max_files,
    };
    let log = open_log_file(&dir.join("worker-0.log")).expect("log file");
    LogWriter::starting(log, limit, time(started))
}

/// The records of the index file `name` in `dir`, times of exits left out (they are the
/// clock's).
fn records(dir: &Path, name: &str) -> Vec<Record> {
    let bytes = fs::read(dir.join(name)).expect("the index");
    assert_eq!(bytes.len() % RECORD_SIZE, 0, "whole records");
    bytes
        .chunks_exact(RECORD_SIZE)
        .map(|chunk| {
            let record = Record::decode(chunk.try_into().expect("a record")).expect("a kind");
            match record {
                Record::Header { version, .. } => Record::Header { version, at: 0 },
                Record::Exit { code, offset, .. } => Record::Exit {
                    code,
                    offset,
                    at: 0,
                },
                other => other,
            }
        })
        .collect()
}

/// Everything the log `dir/worker-0.log` holds of `selection`, read to its end.
fn items(dir: &Path, selection: LogSelection) -> Vec<LogItem> {
    let mut log = ReplicaLog::new(dir.join("worker-0.log"), selection);
    let mut items = Vec::new();
    log.read(true, &mut |item| {
        items.push(item);
        Ok(())
    })
    .expect("read the log");
    items
}

/// The items as `logs` prints them for worker-0, with times when `timestamps`.
fn printed(items: &[LogItem], timestamps: bool) -> String {
    let mut out = Vec::new();
    for item in items {
        item.render("worker-0", None, timestamps, &mut out);
    }
    String::from_utf8(out).expect("UTF-8")
}

fn line(text: &str, at: Option<&str>, run: Option<u32>) -> LogItem {
    LogItem::Line(LogLine {
        text: text.as_bytes().to_vec(),
        ended: true,
        at: at.map(nanos),
        run,
    })
}

fn restart(run: u32, at: &str, previous_exit: Option<i32>) -> LogItem {
    LogItem::Restart(Restart {
        run,
        at: nanos(at),
        previous_exit,
    })
}

/// Two runs of worker-0: `a` and `b` (then exit 1), a restart at 10:00:05, `c`.
fn two_runs(dir: &Path, max_size: u64, max_files: u32) {
    let mut first = run_of(dir, "2026-11-26T10:00:00Z", max_size, max_files);
    first.write_read_at(b"a\n", time("2026-11-26T10:00:01Z"));
    first.write_read_at(b"b\n", time("2026-11-26T10:00:02Z"));
    first.exited(1);
    first.finish();
    let mut second = run_of(dir, "2026-11-26T10:00:05Z", max_size, max_files);
    second.write_read_at(b"c\n", time("2026-11-26T10:00:06Z"));
    second.exited(0);
    second.finish();
}

#[test]
fn the_index_records_each_run_each_read_and_each_exit() {
    let dir = tempfile::tempdir().expect("temp dir");
    two_runs(dir.path(), 0, 1);
    assert_eq!(
        records(dir.path(), "worker-0.log.index"),
        [
            Record::Header {
                version: FORMAT_VERSION,
                at: 0
            },
            Record::RunStart {
                run: 0,
                offset: 0,
                at: nanos("2026-11-26T10:00:00Z")
            },
            Record::Read {
                end: 2,
                at: nanos("2026-11-26T10:00:01Z")
            },
            Record::Read {
                end: 4,
                at: nanos("2026-11-26T10:00:02Z")
            },
            Record::Exit {
                code: 1,
                offset: 4,
                at: 0
            },
            Record::RunStart {
                run: 1,
                offset: 4,
                at: nanos("2026-11-26T10:00:05Z")
            },
            Record::Read {
                end: 6,
                at: nanos("2026-11-26T10:00:06Z")
            },
            Record::Exit {
                code: 0,
                offset: 6,
                at: 0
            },
        ]
    );
}

#[test]
fn each_index_rotates_with_its_file_and_a_new_file_says_which_run_writes_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    // 4 bytes a file, 2 files: "a\nb\n" moves to .1 when "c\n" comes, and so does its index.
    two_runs(dir.path(), 4, 2);
    assert_eq!(
        names(dir.path()),
        [
            "worker-0.log",
            "worker-0.log.1",
            "worker-0.log.1.index",
            "worker-0.log.index"
        ]
    );
    let header = Record::Header {
        version: FORMAT_VERSION,
        at: 0,
    };
    assert_eq!(
        records(dir.path(), "worker-0.log.1.index"),
        [
            header,
            Record::RunStart {
                run: 0,
                offset: 0,
                at: nanos("2026-11-26T10:00:00Z")
            },
            Record::Read {
                end: 2,
                at: nanos("2026-11-26T10:00:01Z")
            },
            Record::Read {
                end: 4,
                at: nanos("2026-11-26T10:00:02Z")
            },
            Record::Exit {
                code: 1,
                offset: 4,
                at: 0
            },
            Record::RunStart {
                run: 1,
                offset: 4,
                at: nanos("2026-11-26T10:00:05Z")
            },
        ]
    );
    assert_eq!(
        records(dir.path(), "worker-0.log.index"),
        [
            header,
            Record::RunContinued {
                run: 1,
                at: nanos("2026-11-26T10:00:05Z")
            },
            Record::Read {
                end: 2,
                at: nanos("2026-11-26T10:00:06Z")
            },
            Record::Exit {
                code: 0,
                offset: 2,
                at: 0
            },
        ]
    );
    // One more rotation drops the oldest file with its index.
    let mut third = run_of(dir.path(), "2026-11-26T10:00:09Z", 4, 2);
    third.write_read_at(b"d\ne\n", time("2026-11-26T10:00:10Z"));
    assert_eq!(
        names(dir.path()),
        [
            "worker-0.dropped",
            "worker-0.log",
            "worker-0.log.1",
            "worker-0.log.1.index",
            "worker-0.log.index"
        ]
    );
    assert_eq!(read(&dir.path().join("worker-0.log.1")), "c\nd\n");
    assert_eq!(
        records(dir.path(), "worker-0.log.1.index")[1],
        Record::RunContinued {
            run: 1,
            at: nanos("2026-11-26T10:00:05Z")
        }
    );
    assert_eq!(
        records(dir.path(), "worker-0.log.index")[1],
        Record::RunContinued {
            run: 2,
            at: nanos("2026-11-26T10:00:09Z")
        }
    );
}

#[test]
fn lines_carry_their_times_and_runs_and_a_restart_separates_the_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    two_runs(dir.path(), 0, 1);
    let all = items(dir.path(), LogSelection::default());
    assert_eq!(
        all,
        [
            line("a", Some("2026-11-26T10:00:01Z"), Some(0)),
            line("b", Some("2026-11-26T10:00:02Z"), Some(0)),
            restart(1, "2026-11-26T10:00:05Z", Some(1)),
            line("c", Some("2026-11-26T10:00:06Z"), Some(1)),
        ]
    );
    assert_eq!(
        printed(&all, false),
        "a\nb\n--- worker-0: restart 1 at 2026-11-26T10:00:05.000Z (the previous run exited \
         with code 1) ---\nc\n"
    );
    assert_eq!(
        printed(&all, true),
        "2026-11-26T10:00:01.000000000Z a\n\
         2026-11-26T10:00:02.000000000Z b\n\
         2026-11-26T10:00:05.000000000Z --- worker-0: restart 1 at 2026-11-26T10:00:05.000Z \
         (the previous run exited with code 1) ---\n\
         2026-11-26T10:00:06.000000000Z c\n"
    );
    let mut prefixed = Vec::new();
    all[0].render("worker-0", Some("worker-0 | "), true, &mut prefixed);
    assert_eq!(prefixed, b"worker-0 | 2026-11-26T10:00:01.000000000Z a\n");
}

#[test]
fn tail_since_and_previous_select_across_rotations() {
    let dir = tempfile::tempdir().expect("temp dir");
    // Every line in a file of its own, two kept: "a" is dropped, the restart is at the end of
    // the oldest kept file.
    two_runs(dir.path(), 2, 2);
    let tail = |lines| {
        items(
            dir.path(),
            LogSelection {
                tail: Some(lines),
                ..LogSelection::default()
            },
        )
    };
    let b = line("b", Some("2026-11-26T10:00:02Z"), Some(0));
    let restarted = restart(1, "2026-11-26T10:00:05Z", Some(1));
    let c = line("c", Some("2026-11-26T10:00:06Z"), Some(1));
    assert_eq!(tail(1), std::slice::from_ref(&c));
    assert_eq!(tail(2), [b.clone(), restarted.clone(), c.clone()]);
    assert_eq!(tail(0), []);
    let since = |text| {
        items(
            dir.path(),
            LogSelection {
                since: Some(nanos(text)),
                ..LogSelection::default()
            },
        )
    };
    assert_eq!(
        since("2026-11-26T10:00:02Z"),
        [b.clone(), restarted, c.clone()]
    );
    assert_eq!(since("2026-11-26T10:00:05.5Z"), std::slice::from_ref(&c));
    assert_eq!(since("2026-11-26T10:00:07Z"), []);
    assert_eq!(previous_run(&dir.path().join("worker-0.log")), Ok(0));
    let previous = items(
        dir.path(),
        LogSelection {
            run: Some(0),
            ..LogSelection::default()
        },
    );
    // "a" was rotated away: what is kept of the run before the last.
    assert_eq!(previous, [b]);
}

#[test]
fn a_log_without_a_restart_or_without_runs_has_no_previous_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("worker-0.log");
    assert_eq!(previous_run(&path), Err(NoPreviousRun::NotRestarted));
    let mut only = run_of(dir.path(), "2026-11-26T10:00:00Z", 0, 1);
    only.write(b"a\n");
    assert_eq!(previous_run(&path), Err(NoPreviousRun::NotRestarted));
    let old = tempfile::tempdir().expect("temp dir");
    append(&old.path().join("worker-0.log"), "written before indexes\n");
    assert_eq!(
        previous_run(&old.path().join("worker-0.log")),
        Err(NoPreviousRun::NotRecorded)
    );
}

#[test]
fn lines_of_unknown_time_have_none_and_are_not_in_a_window() {
    let dir = tempfile::tempdir().expect("temp dir");
    // A log written before indexes existed, then a run of this version.
    append(&dir.path().join("worker-0.log"), "old\n");
    let mut run = run_of(dir.path(), "2026-11-26T10:00:00Z", 0, 1);
    run.write_read_at(b"new\n", time("2026-11-26T10:00:01Z"));
    let all = items(dir.path(), LogSelection::default());
    assert_eq!(
        all,
        [
            line("old", None, None),
            line("new", Some("2026-11-26T10:00:01Z"), Some(0))
        ]
    );
    assert_eq!(
        printed(&all, true),
        "old\n2026-11-26T10:00:01.000000000Z new\n"
    );
    let since = LogSelection {
        since: Some(0),
        ..LogSelection::default()
    };
    assert_eq!(
        items(dir.path(), since),
        [line("new", Some("2026-11-26T10:00:01Z"), Some(0))]
    );
}

#[test]
fn a_line_a_run_left_unended_ends_at_the_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut first = run_of(dir.path(), "2026-11-26T10:00:00Z", 0, 1);
    first.write_read_at(b"progress 50%", time("2026-11-26T10:00:01Z"));
    first.exited(137);
    let mut second = run_of(dir.path(), "2026-11-26T10:00:05Z", 0, 1);
    second.write_read_at(b"again", time("2026-11-26T10:00:06Z"));
    let all = items(dir.path(), LogSelection::default());
    assert_eq!(
        printed(&all, false),
        "progress 50%\n--- worker-0: restart 1 at 2026-11-26T10:00:05.000Z (the previous run \
         exited with code 137) ---\nagain"
    );
    let LogItem::Line(last) = &all[2] else {
        panic!("a line: {all:?}")
    };
    assert!(!last.ended, "the log ends mid-line");
}

#[test]
fn a_follower_waits_for_the_index_then_reads_on_across_rotations() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("worker-0.log");
    let mut follower = ReplicaLog::new(path.clone(), LogSelection::default());
    let mut seen = Vec::new();
    let mut follow = |follower: &mut ReplicaLog| {
        follower
            .read(false, &mut |item| {
                seen.push(item);
                Ok(())
            })
            .expect("read");
        std::mem::take(&mut seen)
    };
    assert_eq!(follow(&mut follower), [], "no log yet");
    let mut run = run_of(dir.path(), "2026-11-26T10:00:00Z", 4, 3);
    run.write_read_at(b"a\n", time("2026-11-26T10:00:01Z"));
    assert_eq!(
        follow(&mut follower),
        [line("a", Some("2026-11-26T10:00:01Z"), Some(0))]
    );
    // A rotation while the follower waits: it goes on with the file after its own.
    run.write_read_at(b"c\nd\ne\n", time("2026-11-26T10:00:03Z"));
    assert_eq!(
        follow(&mut follower),
        [
            line("c", Some("2026-11-26T10:00:03Z"), Some(0)),
            line("d", Some("2026-11-26T10:00:03Z"), Some(0)),
            line("e", Some("2026-11-26T10:00:03Z"), Some(0)),
        ]
    );
    // Bytes the index does not account for yet wait for their record...
    append(&path, "late\n");
    assert_eq!(follow(&mut follower), []);
    // ...and are read without a time once it does not come.
    assert_eq!(follow(&mut follower), [line("late", None, Some(0))]);
}

#[test]
fn an_index_left_by_a_cut_short_rotation_is_started_again_with_the_runs_counted_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    two_runs(dir.path(), 0, 1);
    // As if the log had been moved away and its index not: the index describes 6 bytes.
    fs::rename(
        dir.path().join("worker-0.log"),
        dir.path().join("worker-0.log.1"),
    )
    .expect("move");
    let mut third = run_of(dir.path(), "2026-11-26T10:00:09Z", 0, 1);
    third.write_read_at(b"d\n", time("2026-11-26T10:00:10Z"));
    assert_eq!(
        records(dir.path(), "worker-0.log.index")[1..],
        [
            Record::RunStart {
                run: 2,
                offset: 0,
                at: nanos("2026-11-26T10:00:09Z")
            },
            Record::Read {
                end: 2,
                at: nanos("2026-11-26T10:00:10Z")
            },
        ]
    );
}
