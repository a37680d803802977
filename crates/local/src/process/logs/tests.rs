use std::fs;
use std::io::{Read as _, Write as _};
use std::os::unix::fs::PermissionsExt as _;

use super::*;

/// Appends `text` to the log file at `path`, opened as a replica's is.
fn append(path: &Path, text: &str) {
    let mut log = open_log_file(path).expect("log file");
    log.file.write_all(text.as_bytes()).expect("write");
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// A writer on `dir/worker-0.log` within `max_size` bytes × `max_files` files.
fn writer(dir: &Path, max_size: u64, max_files: u32) -> LogWriter {
    let path = dir.join("worker-0.log");
    LogWriter::new(
        open_log_file(&path).expect("log file"),
        LogLimit {
            max_size,
            max_files,
        },
    )
}

/// The names of the files in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("read dir")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        // The room kept for a full disk, beside every log (its own test).
        .filter(|name| !name.ends_with(".reserve"))
        .collect();
    names.sort();
    names
}

#[test]
fn a_log_file_is_made_with_its_directories_then_appended_to() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = dir.path().join("logs/job/worker-0.log");
    let second = dir.path().join("logs/job/worker-1.log");
    append(&first, "one\n");
    append(&first, "two\n");
    append(&second, "three\n");
    assert_eq!(
        (read(&first), read(&second)),
        ("one\ntwo\n".to_owned(), "three\n".to_owned())
    );
    assert_eq!(open_log_file(&first).expect("log file").path(), first);
    let error = open_log_file(dir.path()).expect_err("a directory is no log file");
    assert_ne!(error.kind(), io::ErrorKind::NotFound, "{error}");
}

#[test]
fn log_files_rotated_files_and_markers_are_private_even_under_umask_000() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("logs/worker-0.log");
    // The umask is the process's: restored at once, and nothing else here creates files
    // whose mode a test checks.
    let before = nix::sys::stat::umask(nix::sys::stat::Mode::empty());
    let mut log = LogWriter::new(
        open_log_file(&path).expect("log file"),
        LogLimit {
            max_size: 4,
            max_files: 2,
        },
    );
    log.write(b"one\ntwo\nthree\n");
    nix::sys::stat::umask(before);
    assert_eq!(
        names(&dir.path().join("logs")),
        [
            "worker-0.dropped",
            "worker-0.log",
            "worker-0.log.1",
            "worker-0.log.1.index",
            "worker-0.log.index"
        ]
    );
    for name in names(&dir.path().join("logs")) {
        let mode = fs::metadata(dir.path().join("logs").join(&name))
            .expect("stat")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{name}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_pump_copies_everything_to_the_file_until_the_writers_close() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("logs/worker-0.log");
    let log = open_log_file(&path).expect("log file");
    let (reader, mut writer) = io::pipe().expect("pipe");
    let console = Console::stderr(false);
    let (exit, exited) = tokio::sync::oneshot::channel();
    let handle = pump(
        reader,
        LogWriter::new(log, LogLimit::DEFAULT),
        console,
        "worker-0 | ".to_owned(),
        exited,
    )
    .expect("pump");
    exit.send(0).expect("the pump waits for the exit code");
    let writing = std::thread::spawn(move || {
        let mut expected = Vec::new();
        for line in 0..10_000 {
            let text = format!("line {line}\n");
            writer.write_all(text.as_bytes()).expect("write");
            expected.extend_from_slice(text.as_bytes());
        }
        writer.write_all(b"no newline at the end").expect("write");
        expected.extend_from_slice(b"no newline at the end");
        expected
    });
    handle.await.expect("pump task");
    let expected = writing.join().expect("writer");
    assert_eq!(fs::read(&path).expect("read log"), expected);
}

#[tokio::test(flavor = "current_thread")]
async fn a_pump_keeps_the_log_within_its_limit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("worker-0.log");
    let log = open_log_file(&path).expect("log file");
    let (reader, mut writer) = io::pipe().expect("pipe");
    let limit = LogLimit {
        max_size: 1000,
        max_files: 2,
    };
    let (exit, exited) = tokio::sync::oneshot::channel::<i32>();
    let log = LogWriter::new(log, limit);
    let handle = pump(reader, log, Console::stderr(false), String::new(), exited).expect("pump");
    // No exit code comes (the reaper is gone): the pump ends all the same.
    drop(exit);
    // 100 lines of 100 bytes: the last 1,000 bytes are in each file at most.
    let line = |n: u32| format!("{n:099}\n");
    std::thread::spawn(move || {
        for n in 0..100 {
            writer.write_all(line(n).as_bytes()).expect("write");
        }
    });
    handle.await.expect("pump task");
    let last: String = (90..100).map(line).collect();
    let before: String = (80..90).map(line).collect();
    assert_eq!(
        (read(&path), read(&dir.path().join("worker-0.log.1"))),
        (last, before)
    );
    assert_eq!(
        dropped(&path),
        Dropped {
            rotated: 8_000,
            unwritten: 0
        }
    );
}

#[test]
fn a_pump_thread_copies_and_rotates_without_a_runtime() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("worker-0.log");
    let (reader, mut writer) = io::pipe().expect("pipe");
    let limit = LogLimit {
        max_size: 6,
        max_files: 3,
    };
    let log = LogWriter::new(open_log_file(&path).expect("log"), limit);
    let (exit, exited) = std::sync::mpsc::channel();
    let pump = pump_thread(reader, log, exited).expect("pump");
    exit.send(3).expect("the pump waits for the exit code");
    writer
        .write_all(b"aaaaa\nbbbbb\nccccc\nddddd\n")
        .expect("write");
    drop(writer);
    pump.join().expect("pump thread");
    assert_eq!(
        (
            read(&path),
            read(&dir.path().join("worker-0.log.1")),
            read(&dir.path().join("worker-0.log.2"))
        ),
        (
            "ddddd\n".to_owned(),
            "ccccc\n".to_owned(),
            "bbbbb\n".to_owned()
        )
    );
    assert_eq!(dropped(&path).rotated, 6);
    assert_eq!(
        fs::read_to_string(dropped_file(&path)).expect("marker"),
        "rotated 6\nunwritten 0\n"
    );
}

#[test]
fn rotation_cuts_between_lines_and_drops_the_oldest_beyond_the_count() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut log = writer(dir.path(), 10, 3);
    // After "1\n22\n" (5 of 10 bytes), the next write is cut after "333\n", the last line that
    // fits.
    log.write(b"1\n22\n");
    log.write(b"333\n4444\n55\n");
    assert_eq!(
        names(dir.path()),
        [
            "worker-0.log",
            "worker-0.log.1",
            "worker-0.log.1.index",
            "worker-0.log.index"
        ]
    );
    assert_eq!(read(&dir.path().join("worker-0.log.1")), "1\n22\n333\n");
    assert_eq!(read(&dir.path().join("worker-0.log")), "4444\n55\n");
    // No line fits in the room left: rotated whole.
    log.write(b"666666\n");
    log.write(b"7777\n");
    // Three files at most: "1\n22\n333\n" was dropped.
    assert_eq!(
        [".log.2", ".log.1", ".log"]
            .map(|suffix| read(&dir.path().join(format!("worker-0{suffix}")))),
        ["4444\n55\n", "666666\n", "7777\n"]
    );
    assert!(!dir.path().join("worker-0.log.3").exists());
    assert_eq!(
        dropped(&dir.path().join("worker-0.log")),
        Dropped {
            rotated: 9,
            unwritten: 0
        }
    );
}

#[test]
fn a_line_longer_than_the_file_is_cut_where_the_file_is_full() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut log = writer(dir.path(), 4, 3);
    log.write(b"abcdefghij\n");
    assert_eq!(
        [".log.2", ".log.1", ".log"]
            .map(|suffix| read(&dir.path().join(format!("worker-0{suffix}")))),
        ["abcd", "efgh", "ij\n"]
    );
}

#[test]
fn one_file_is_emptied_when_full_and_a_zero_size_never_rotates() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut log = writer(dir.path(), 4, 1);
    log.write(b"aaa\nbbb\nc\n");
    assert_eq!(
        names(dir.path()),
        ["worker-0.dropped", "worker-0.log", "worker-0.log.index"]
    );
    assert_eq!(read(&dir.path().join("worker-0.log")), "c\n");
    assert_eq!(dropped(&dir.path().join("worker-0.log")).rotated, 8);

    let unlimited = tempfile::tempdir().expect("temp dir");
    let mut log = writer(unlimited.path(), 0, 1);
    let big = "x".repeat(100_000);
    log.write(big.as_bytes());
    log.finish();
    assert_eq!(
        names(unlimited.path()),
        ["worker-0.log", "worker-0.log.index"]
    );
    assert_eq!(read(&unlimited.path().join("worker-0.log")), big);
}

#[test]
fn a_restarted_replicas_log_goes_on_from_its_size_and_what_it_lost() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut first = writer(dir.path(), 6, 2);
    first.write(b"aaaaa\nbbbbb\nccc\n");
    first.finish();
    drop(first);
    let mut second = writer(dir.path(), 6, 2);
    // The file holds "ccc\n": "dd\n" does not fit.
    second.write(b"dd\n");
    assert_eq!(read(&dir.path().join("worker-0.log.1")), "ccc\n");
    assert_eq!(read(&dir.path().join("worker-0.log")), "dd\n");
    assert_eq!(dropped(&dir.path().join("worker-0.log")).rotated, 12);
}

#[test]
fn what_a_full_disk_refuses_is_counted_as_unwritten() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("worker-0.log");
    // Every write to /dev/full fails with ENOSPC.
    let full = OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let mut log = LogWriter::new(
        LogFile {
            file: full,
            path: path.clone(),
        },
        LogLimit::DEFAULT,
    );
    log.write(b"lost\n");
    log.write(b"lost too\n");
    assert!(!dropped_file(&path).exists(), "recorded at the end");
    log.finish();
    assert_eq!(
        dropped(&path),
        Dropped {
            rotated: 0,
            unwritten: 14
        }
    );
}

#[test]
fn kept_files_are_listed_oldest_first_and_nothing_else_is() {
    let dir = tempfile::tempdir().expect("temp dir");
    for name in [
        "worker-1.log",
        "worker-1.log.1",
        "worker-1.log.2",
        "worker-1.log.10",
        "worker-1.log.x",
        "worker-1.log.0",
        "worker-1.dropped",
        "worker-1.exit",
        "worker-10.log.1",
    ] {
        fs::write(dir.path().join(name), name).expect("write");
    }
    let path = dir.path().join("worker-1.log");
    let kept: Vec<PathBuf> = [
        "worker-1.log.10",
        "worker-1.log.2",
        "worker-1.log.1",
        "worker-1.log",
    ]
    .into_iter()
    .map(|name| dir.path().join(name))
    .collect();
    assert_eq!(kept_log_files(&path).expect("list"), kept);
    assert_eq!(
        kept_log_files(&dir.path().join("missing/worker-0.log")).expect("list"),
        Vec::<PathBuf>::new()
    );
}

/// Everything `reader` has for now.
fn read_all(reader: &mut LogReader) -> String {
    let mut text = String::new();
    reader.read_to_string(&mut text).expect("read the log");
    text
}

#[test]
fn a_reader_reads_the_kept_files_in_order_then_follows_across_rotations() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("worker-0.log");
    let mut reader = LogReader::new(path.clone());
    assert_eq!(read_all(&mut reader), "", "no log yet");
    let mut log = writer(dir.path(), 4, 3);
    log.write(b"a\nb\nc\n");
    assert_eq!(read_all(&mut reader), "a\nb\nc\n");
    log.write(b"d\n");
    assert_eq!(read_all(&mut reader), "d\n");
    // Two rotations while the reader waits: it goes on with the files after its own.
    log.write(b"e\nf\ng\n");
    log.write(b"h\n");
    assert_eq!(read_all(&mut reader), "e\nf\ng\nh\n");
    assert_eq!(reader.path(), path);

    // A reader that starts late reads what is kept, oldest first.
    let mut late = LogReader::new(path.clone());
    assert_eq!(read_all(&mut late), "c\nd\ne\nf\ng\nh\n");
    // One whose file was dropped meanwhile goes on with the oldest kept.
    log.write(b"i\nj\nk\nl\nm\nn\n");
    assert_eq!(read_all(&mut late), "i\nj\nk\nl\nm\nn\n");
}

#[test]
fn usage_says_what_a_log_keeps_and_lost() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("worker-0.log");
    assert_eq!(
        log_usage(&path),
        LogUsage {
            kept: 0,
            files: 0,
            dropped: Dropped::default(),
            dropped_at: None
        }
    );
    let mut log = writer(dir.path(), 4, 2);
    log.write(b"aaa\nbbb\ncc\n");
    let usage = log_usage(&path);
    assert_eq!((usage.kept, usage.files, usage.dropped.rotated), (7, 2, 4));
    assert!(usage.dropped_at.is_some());
}

#[test]
fn the_default_log_limit_is_the_kubelets() {
    assert_eq!(
        LogLimit::default(),
        LogLimit {
            max_size: 10 * 1024 * 1024,
            max_files: 5
        }
    );
}

#[test]
fn prefixes_are_padded_and_plain_without_a_terminal() {
    let console = Console {
        inner: Arc::new(ConsoleInner {
            lock: Mutex::new(()),
            show_logs: true,
            show_messages: true,
            colour: false,
        }),
    };
    assert_eq!(console.prefix("ps-0", 8, 3), "ps-0     | ");
}

mod runs;

#[test]
fn a_block_is_kept_beside_each_log_for_the_marker_of_a_full_disk() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("worker-0.log");
    let log = LogWriter::new(open_log_file(&path).expect("log file"), LogLimit::DEFAULT);
    let reserve = fs::metadata(rotate::reserve_file(&path)).expect("the reserve");
    assert_eq!(
        (reserve.len(), reserve.permissions().mode() & 0o777),
        (4096, 0o600)
    );
    drop(log);
    // A restart's writer keeps it as it is.
    let _again = LogWriter::new(open_log_file(&path).expect("log file"), LogLimit::DEFAULT);
    assert_eq!(
        fs::metadata(rotate::reserve_file(&path))
            .expect("kept")
            .len(),
        4096
    );
}
