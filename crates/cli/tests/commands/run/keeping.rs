//! 15. What a run keeps on disk.
//!
//! Each replica's log within its limit (rotated, the oldest dropped, `logs` and `describe` saying
//! so), and the job's outcome when a replica filled the disk (the space kept for it, or a wait
//! for space).
//!
//! A full disk is a small tmpfs mounted on the state directory in a private mount namespace
//! (`unshare --mount`), so that nothing leaks: where the test may not make one (no
//! `CAP_SYS_ADMIN`), it says so and checks nothing.

use std::process::{Command, Stdio};

use super::*;

/// The space kept for outcomes, beside the database (`trainctl_local::store`).
const RESERVE: &str = "trainctl.db.reserve";

/// A numbered line of 1 KiB, as the chatty replica writes it.
fn kib_line(n: u32) -> String {
    format!("{n:06} {}\n", "x".repeat(1016))
}

#[test]
fn a_chatty_replicas_log_is_rotated_within_its_limit_and_logs_shows_its_tail() {
    let scratch = Scratch::new("rotated");
    // 51,200 numbered lines of 1 KiB: 50 MiB.
    let script = "pad=`head -c 1016 /dev/zero | tr '\\0' x`\nseq -f \"%06g $pad\" 0 51199";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob("chatty", &[], &[replicas("Worker", 1, "Never", script)]),
    );
    let run = scratch.run(
        &manifest,
        &["--log-max-size", "1Mi", "--log-max-files", "3"],
    );
    assert_eq!(run.code, Some(0), "exit {:?}", run.code);
    let uid = stored_job(&scratch, "chatty").expect("the job")["metadata"]["uid"]
        .as_str()
        .expect("a uid")
        .to_owned();
    let logs_dir = scratch.state_dir().join("logs").join(uid);
    let mut sizes: Vec<(String, u64)> = std::fs::read_dir(&logs_dir)
        .expect("the job's logs")
        .map(|entry| {
            let entry = entry.expect("entry");
            let size = entry.metadata().expect("stat").len();
            (entry.file_name().to_string_lossy().into_owned(), size)
        })
        // Each log file's index (when each chunk was read) is beside it, the room kept for a
        // full disk, and, where the machine gives replicas cgroups, where the replica's is.
        .filter(|(name, _)| {
            let extension = std::path::Path::new(name).extension();
            !["index", "reserve", "cgroup"]
                .iter()
                .any(|other| extension == Some(other.as_ref()))
        })
        .collect();
    sizes.sort();
    // Three files of 1 MiB, each cut between lines; 47 MiB dropped.
    let mib = 1024 * 1024;
    assert_eq!(
        sizes,
        [
            ("worker-0.dropped".to_owned(), 29),
            ("worker-0.log".to_owned(), mib),
            ("worker-0.log.1".to_owned(), mib),
            ("worker-0.log.2".to_owned(), mib),
        ]
    );
    // The whole kept log, oldest file first: the last 3,072 lines, in order.
    let kept: String = (51_200 - 3 * 1024..51_200).map(kib_line).collect();
    let logs = scratch.trainctl(&["logs", "chatty", "--replica", "worker-0"]);
    assert_eq!(logs.code, Some(0), "{}", logs.stderr);
    assert!(
        logs.stdout == kept,
        "logs printed {} bytes",
        logs.stdout.len()
    );

    let describe = scratch.trainctl(&["describe", "tfjob", "chatty"]);
    assert_eq!(describe.code, Some(0), "{describe}");
    let rotated: Vec<String> = describe
        .stdout
        .lines()
        .map(|line| {
            line.split_whitespace()
                .skip(1)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|event| event.starts_with("Normal LogRotated "))
        .collect();
    assert_eq!(
        rotated,
        [
            "Normal LogRotated worker-0's log was rotated: its oldest 47.0 MiB (49283072 bytes) \
             were dropped; 3.0 MiB (3145728 bytes) in 3 files are kept"
        ],
        "{describe}"
    );
}

/// Runs `script` with `sh` in a private mount namespace, in the scratch directory, after a
/// tmpfs of 8 MiB is mounted on the state directory; `$TRAINCTL` and `$STATE` name the binary
/// and the state directory. `None` (having said why) where this test may not mount one.
fn on_a_small_disk(scratch: &Scratch, script: &str) -> Option<std::process::Output> {
    let state = scratch.state_dir();
    std::fs::create_dir_all(&state).expect("the state dir");
    let allowed = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg("mount -t tmpfs -o size=1m tmpfs \"$0\"")
        .arg(&state)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !allowed {
        eprintln!("skipped: a tmpfs in a private mount namespace needs CAP_SYS_ADMIN");
        return None;
    }
    let mut command = Command::new("unshare");
    command
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(format!(
            "set -u\nmount -t tmpfs -o size=8m,mode=700 tmpfs \"$STATE\" || exit 90\n{script}"
        ))
        .current_dir(scratch.path(""))
        .env("TRAINCTL", trainctl_cli_harness::binary())
        .env("STATE", &state)
        .env("TRAINCTL_GPUS", "0")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    for name in [
        "TRAINCTL_HOME",
        "TRAINCTL_CPUS",
        "TRAINCTL_MEMORY",
        "TRAINCTL_RESTART_BACKOFF",
        "TRAINCTL_RESTART_BACKOFF_MAX",
        "CUSTOM_CLUSTER_DOMAIN",
        "RUST_LOG",
    ] {
        command.env_remove(name);
    }
    let output = command.output().expect("unshare runs");
    assert_eq!(
        output.status.code(),
        Some(0),
        "the script failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(output)
}

/// The `(state, exit)` of each row of `describe`'s Replicas table.
fn described_replicas(describe: &str) -> BTreeMap<String, (String, String)> {
    describe
        .lines()
        .skip_while(|line| *line != "Replicas:")
        .skip(2)
        .take_while(|line| line.starts_with("  "))
        .map(|line| {
            let cells: Vec<&str> = line.split_whitespace().collect();
            (
                cells[0].to_owned(),
                (cells[1].to_owned(), cells[2].to_owned()),
            )
        })
        .collect()
}

/// Steps of the scripts: `trainctl` on the small disk, what it printed kept in the scratch
/// directory (on the real disk), its exit code in `NAME.code`.
const AFTERWARDS: &str = "
\"$TRAINCTL\" --state-dir \"$STATE\" get tfjob full -o json > get.json 2> get.err
echo $? > get.code
\"$TRAINCTL\" --state-dir \"$STATE\" get > list.out 2>&1
\"$TRAINCTL\" --state-dir \"$STATE\" describe tfjob full > describe.out 2>&1
echo $? > describe.code
if [ -e \"$STATE/trainctl.db.reserve\" ]; then wc -c < \"$STATE/trainctl.db.reserve\" > reserve.size; fi
";

#[test]
fn a_replica_that_fills_the_disk_costs_its_job_no_outcome() {
    let scratch = Scratch::new("full-disk");
    // worker-1 fills the disk, then worker-0 fails: the job fails, with both exits recorded.
    // worker-0 fails only once trainctl has reaped worker-1 (`kill -0` holds for a zombie), so
    // that worker-1's success is seen before the failure ends the job.
    let script = "if [ \"$INDEX\" = 1 ]; then
  echo filling
  head -c 100000000 /dev/zero > \"$STATE/filler\"
  echo $$ > filled
  exit 0
fi
while [ ! -s filled ]; do sleep 0.02; done
while kill -0 \"$(cat filled)\" 2> /dev/null; do sleep 0.02; done
exit 1";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "full",
            &[],
            &[replicas("Worker", 2, "Never", script).with(INDEX_ENV)],
        ),
    );
    let steps = format!(
        "timeout 60 \"$TRAINCTL\" --state-dir \"$STATE\" run -f {manifest} -q > run.out 2> run.err
echo $? > run.code
wc -c < \"$STATE/filler\" > filler.size
df -k \"$STATE\" | tail -1 | awk '{{print $4}}' > free.kib
{AFTERWARDS}"
    );
    if on_a_small_disk(&scratch, &steps).is_none() {
        return;
    }
    let read = |name: &str| scratch.read(name).unwrap_or_default();
    let run_err = read("run.err");
    assert_eq!(read("run.code"), "1\n", "{run_err}");
    // The disk was full when the job ended, and is again: the replica took what the final
    // write left.
    let filler: u64 = read("filler.size")
        .trim()
        .parse()
        .expect("the filler's size");
    assert!(filler > 5 * 1024 * 1024, "{filler}");
    assert_eq!(read("free.kib"), "0\n", "{run_err}");
    assert_eq!(read("get.code"), "0\n", "{}", read("get.err"));
    let job: Value = serde_json::from_str(&read("get.json")).expect("get -o json");
    assert_eq!(
        conditions(&job),
        ran_then(
            "TFJob",
            "TFJob full is created.",
            "TFJob default/full is running.",
            (
                "Failed",
                "TFJob default/full has failed because 1 Worker replica(s) failed."
            )
        ),
    );
    assert_eq!(replica_counts(&job), expect_counts(&[("Worker", 0, 1, 1)]));
    let listed = table(&read("list.out"));
    assert_eq!(listed[0]["STATE"], "Failed", "not Lost");
    assert_eq!(read("describe.code"), "0\n", "{}", read("describe.out"));
    assert_eq!(
        described_replicas(&read("describe.out")),
        BTreeMap::from([
            ("worker-0".to_owned(), ("Failed".to_owned(), "1".to_owned())),
            (
                "worker-1".to_owned(),
                ("Succeeded".to_owned(), "0".to_owned())
            ),
        ])
    );
    // The outcome took the space kept for it, and the user was told.
    let reserve: u64 = read("reserve.size").trim().parse().unwrap_or(0);
    assert!(
        reserve < 1024 * 1024,
        "the reserve was not used: {reserve} bytes"
    );
    assert!(
        run_err.contains(&format!(
            "trainctl: disk full: the job's outcome was written in the space kept for it; free \
             space under {}\n",
            scratch.state_dir().display()
        )),
        "{run_err}"
    );
}

#[test]
fn an_outcome_the_disk_has_no_room_for_waits_in_memory_until_space_frees_up() {
    let scratch = Scratch::new("full-wait");
    // Without the space kept for outcomes, the final write finds no room at all.
    let script = format!(
        "rm -f \"$STATE/{RESERVE}\"
head -c 100000000 /dev/zero > \"$STATE/filler\"
exit 0"
    );
    let manifest = scratch.write(
        "job.yaml",
        &tfjob("full", &[], &[replicas("Worker", 1, "Never", &script)]),
    );
    let steps = format!(
        "timeout 60 \"$TRAINCTL\" --state-dir \"$STATE\" run -f {manifest} -q > run.out 2> run.err &
run=$!
tries=0
until grep -q \"outcome is kept in memory\" run.err; do
  tries=$((tries + 1))
  if [ $tries -gt 600 ]; then kill $run; exit 91; fi
  sleep 0.05
done
# Still waiting: nothing is recorded as finished yet.
\"$TRAINCTL\" --state-dir \"$STATE\" get > waiting.out 2>&1
rm \"$STATE/filler\"
wait $run
echo $? > run.code
{AFTERWARDS}"
    );
    if on_a_small_disk(&scratch, &steps).is_none() {
        return;
    }
    let read = |name: &str| scratch.read(name).unwrap_or_default();
    let run_err = read("run.err");
    assert_eq!(read("run.code"), "0\n", "{run_err}");
    let state = scratch.state_dir();
    assert!(
        run_err.contains(&format!(
            "trainctl: disk full: the job's outcome is kept in memory and written when space \
             frees up; free space under {}\n",
            state.display()
        )),
        "{run_err}"
    );
    assert!(
        run_err.contains("trainctl: disk space freed: the job's outcome is written\n"),
        "{run_err}"
    );
    let waiting = &table(&read("waiting.out"))[0]["STATE"];
    assert!(
        !["Succeeded", "Lost"].contains(&waiting.as_str()),
        "{waiting}"
    );
    let job: Value = serde_json::from_str(&read("get.json")).expect("get -o json");
    assert_eq!(
        conditions(&job),
        ran_then(
            "TFJob",
            "TFJob full is created.",
            "TFJob default/full is running.",
            ("Succeeded", "TFJob default/full successfully completed.")
        ),
    );
    assert_eq!(
        described_replicas(&read("describe.out")),
        BTreeMap::from([(
            "worker-0".to_owned(),
            ("Succeeded".to_owned(), "0".to_owned())
        )])
    );
    // The space kept for outcomes is kept again.
    assert_eq!(read("reserve.size"), "1048576\n");
}

#[test]
fn output_a_full_disk_refused_is_said_in_the_jobs_events() {
    let scratch = Scratch::new("full-disk-log");
    // 12 MB of output on a disk of 8: the log takes what there is, the rest is lost.
    let script = "head -c 12000000 /dev/zero | tr \"\\\\0\" x | fold -w 100";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob("full", &[], &[replicas("Worker", 1, "Never", script)]),
    );
    let steps = format!(
        "timeout 60 \"$TRAINCTL\" --state-dir \"$STATE\" run -f {manifest} -q > run.out 2> run.err
echo $? > run.code
{AFTERWARDS}"
    );
    if on_a_small_disk(&scratch, &steps).is_none() {
        return;
    }
    let read = |name: &str| scratch.read(name).unwrap_or_default();
    assert_eq!(read("run.code"), "0\n", "{}", read("run.err"));
    let described = read("describe.out");
    let said = described
        .lines()
        .find(|line| line.contains("LogIncomplete"))
        .unwrap_or_else(|| panic!("no LogIncomplete event:\n{described}"));
    assert!(
        said.contains("worker-0's log misses ")
            && said.ends_with("of its output: the disk was full"),
        "{said}"
    );
}
