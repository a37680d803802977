//! `trainctl logs` as a kubectl user expects it, end to end on this machine: `--previous` (the
//! run before the last restart), a separator line between a replica's runs, `--tail`,
//! `--timestamps` (RFC 3339 with nanoseconds, the time each line was read), `--since`, a pod's
//! name for its job and replica (`logs JOB-worker-0`), and a reader that goes away (`| head`)
//! ends `logs` quietly, followed or not; and the server's log API, which takes the pod log
//! API's parameters (`tailLines`, `sinceSeconds`, `timestamps`, `previous`) and prints the same.

use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;
use trainctl_cli_harness as harness;

use trainctl_cli_harness::server::{Server, state};
use trainctl_cli_harness::{Scratch, signal, wait_for};

/// How long a test waits for something that takes milliseconds when all is well.
const SOON: Duration = Duration::from_secs(20);

/// A TFJob `flaky` whose one worker runs `sh -c SCRIPT` under `restartPolicy: OnFailure`.
fn flaky(script: &str) -> String {
    flaky_in(None, script)
}

/// [`flaky`], its worker running in `dir` when given.
fn flaky_in(dir: Option<&std::path::Path>, script: &str) -> String {
    let working_dir = dir.map_or_else(String::new, |dir| {
        format!("              workingDir: {}\n", dir.display())
    });
    let mut yaml = "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: flaky
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          terminationGracePeriodSeconds: 1
          containers:
            - name: tensorflow
              image: tensorflow/tensorflow:2.16.1
"
    .to_owned();
    yaml.push_str(&working_dir);
    yaml.push_str("              command: [sh, -c]\n              args:\n                - |\n");
    for line in script.lines() {
        writeln!(yaml, "                  {line}").expect("writing to a String cannot fail");
    }
    yaml
}

/// The worker prints two lines and exits 1 the first time, then three lines and exits 0.
const TWO_RUNS: &str = "if [ -f ran-once ]; then
  echo second 1; echo second 2; echo second 3; exit 0
fi
touch ran-once; echo first 1; echo first 2; exit 1";

/// `flaky` run to its end in `scratch`, and the time window it ran in (Unix nanoseconds).
fn run_flaky(scratch: &Scratch) -> (i128, i128) {
    let manifest = scratch.write("job.yaml", &flaky(TWO_RUNS));
    let before = jiff::Timestamp::now().as_nanosecond();
    let run = scratch.run(&manifest, &["-q"]);
    let after = jiff::Timestamp::now().as_nanosecond();
    assert_eq!(run.code, Some(0), "{run}");
    (before, after)
}

/// `trainctl logs ARGS`, which must succeed with nothing on stderr; its stdout.
fn logs(scratch: &Scratch, args: &[&str]) -> String {
    let mut all = vec!["logs"];
    all.extend_from_slice(args);
    let logs = scratch.trainctl(&all);
    assert_eq!(logs.code, Some(0), "{logs}");
    assert_eq!(logs.stderr, "", "{logs}");
    logs.stdout
}

/// The separator line of worker-0's restart 1 in `text` (after a prefix or a time, if any),
/// checked against the words it must have; its time, as printed.
fn separator_time(text: &str) -> String {
    let line = text
        .lines()
        .find_map(|line| line.split_once("--- worker-0: restart 1 at "))
        .map_or_else(|| panic!("no separator in:\n{text}"), |(_, rest)| rest);
    let time = line
        .strip_suffix(" (the previous run exited with code 1) ---")
        .unwrap_or_else(|| panic!("not the separator's words: {line}"));
    assert!(time.parse::<jiff::Timestamp>().is_ok(), "{time}");
    time.to_owned()
}

#[test]
fn previous_tail_and_the_whole_log_of_a_replica_that_restarted() {
    let scratch = Scratch::new("logs-runs");
    run_flaky(&scratch);
    assert_eq!(
        logs(&scratch, &["flaky", "--replica", "worker-0", "--previous"]),
        "first 1\nfirst 2\n"
    );
    assert_eq!(
        logs(&scratch, &["flaky", "-p"]),
        "worker-0 | first 1\nworker-0 | first 2\n"
    );
    let whole = logs(&scratch, &["flaky", "--replica", "worker-0"]);
    let at = separator_time(&whole);
    assert_eq!(
        whole,
        format!(
            "first 1\nfirst 2\n--- worker-0: restart 1 at {at} (the previous run exited with \
             code 1) ---\nsecond 1\nsecond 2\nsecond 3\n"
        )
    );
    assert_eq!(
        logs(&scratch, &["flaky", "--replica", "worker-0", "--tail", "2"]),
        "second 2\nsecond 3\n"
    );
    assert_eq!(
        logs(&scratch, &["flaky", "--tail", "4"]),
        format!(
            "worker-0 | first 2\nworker-0 | --- worker-0: restart 1 at {at} (the previous run \
             exited with code 1) ---\nworker-0 | second 1\nworker-0 | second 2\nworker-0 | \
             second 3\n"
        )
    );
    assert_eq!(
        logs(
            &scratch,
            &["flaky", "--tail", "-1", "--replica", "worker-0"]
        ),
        whole
    );
    // The pod's name, as kubectl takes it, is the job and the replica.
    assert_eq!(logs(&scratch, &["flaky-worker-0"]), whole);
    assert_eq!(
        logs(&scratch, &["tfjob", "flaky-worker-0", "-n", "default"]),
        whole
    );
    assert_eq!(
        logs(&scratch, &["flaky-worker-0", "--previous"]),
        "first 1\nfirst 2\n"
    );
    let other = scratch.trainctl(&["logs", "flaky-worker-0", "--replica", "chief-0"]);
    assert_eq!(other.code, Some(1), "{other}");
    assert_eq!(
        other.stderr,
        "error: flaky-worker-0 is the pod of replica worker-0, not of --replica chief-0: give one \
         or the other\n"
    );
    let missing = scratch.trainctl(&["logs", "flaky-worker-1"]);
    assert_eq!(missing.code, Some(1), "{missing}");
    assert_eq!(
        missing.stderr,
        "error: job \"flaky-worker-1\" not found in namespace \"default\" (see `trainctl get`)\n"
    );
}

#[test]
fn timestamps_are_the_times_lines_were_written_and_since_selects_by_them() {
    let scratch = Scratch::new("logs-times");
    let (before, after) = run_flaky(&scratch);
    let stamped = logs(
        &scratch,
        &["flaky", "--replica", "worker-0", "--timestamps"],
    );
    let mut texts = Vec::new();
    let mut times = Vec::new();
    for line in stamped.lines() {
        let (time, text) = line.split_once(' ').expect("a time, then the line");
        // RFC 3339, UTC, nanoseconds: `2026-11-26T10:00:00.123456789Z`.
        let fraction = time
            .strip_suffix('Z')
            .and_then(|time| time.rsplit_once('.'))
            .map(|(_, fraction)| fraction);
        assert_eq!(fraction.map(str::len), Some(9), "{line}");
        let at = time
            .parse::<jiff::Timestamp>()
            .unwrap_or_else(|error| panic!("{line}: {error}"))
            .as_nanosecond();
        assert!(before <= at && at <= after, "{line} is not within the run");
        times.push(at);
        texts.push(text.to_owned());
    }
    assert!(times.windows(2).all(|pair| pair[0] <= pair[1]), "{stamped}");
    let at = separator_time(&stamped);
    assert_eq!(
        texts,
        [
            "first 1".to_owned(),
            "first 2".to_owned(),
            format!("--- worker-0: restart 1 at {at} (the previous run exited with code 1) ---"),
            "second 1".to_owned(),
            "second 2".to_owned(),
            "second 3".to_owned(),
        ]
    );
    // The last hour: everything; the last 200 ms, well after the job: nothing.
    let whole = logs(&scratch, &["flaky"]);
    assert_eq!(logs(&scratch, &["flaky", "--since", "1h"]), whole);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(logs(&scratch, &["flaky", "--since", "200ms"]), "");
    let zero = scratch.trainctl(&["logs", "flaky", "--since", "0s"]);
    assert_eq!(zero.code, Some(2), "{zero}");
}

#[test]
fn a_replica_that_did_not_restart_has_no_previous_run() {
    let scratch = Scratch::new("logs-no-previous");
    let manifest = scratch.write("job.yaml", &flaky("echo once; exit 0"));
    let run = scratch.run(&manifest, &["-q"]);
    assert_eq!(run.code, Some(0), "{run}");
    let previous = scratch.trainctl(&["logs", "flaky", "--replica", "worker-0", "--previous"]);
    assert_eq!(previous.code, Some(1), "{previous}");
    assert_eq!(
        previous.stderr,
        "error: previous terminated run of replica \"worker-0\" of tfjob/flaky not found: it has \
         not restarted\n"
    );
    let all = scratch.trainctl(&["logs", "flaky", "-p"]);
    assert_eq!(
        (all.code, all.stderr.as_str()),
        (
            Some(1),
            "error: no replica of tfjob/flaky has a previous terminated run (worker-0: it has not \
             restarted)\n"
        )
    );
}

/// `trainctl logs ARGS` with its stdout read by this test, which reads one line and goes, as
/// `| head -1` does; its exit code, stderr, and the line.
fn logs_into_head(scratch: &Scratch, args: &[&str]) -> (Option<i32>, String, String) {
    let mut child = Command::new(trainctl_cli_harness::binary())
        .arg("--state-dir")
        .arg(scratch.state_dir())
        .arg("logs")
        .args(args)
        .env_remove("TRAINCTL_HOME")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("trainctl starts");
    let mut line = String::new();
    {
        let stdout = child.stdout.take().expect("piped stdout");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read a line");
    }
    let status = wait_for("trainctl logs to end", SOON, || {
        child.try_wait().expect("try_wait")
    });
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("piped stderr"), &mut stderr)
        .expect("read stderr");
    (status.code(), stderr, line)
}

#[test]
fn logs_end_quietly_when_their_reader_goes_followed_or_not() {
    let scratch = Scratch::new("logs-head");
    // 20,000 lines (more than a pipe holds), then a line every 50 ms until stopped.
    let manifest = scratch.write(
        "job.yaml",
        &flaky("seq 20000 | sed 's/^/line /'\nwhile true; do echo tick; sleep 0.05; done"),
    );
    let running = scratch.spawn_run(&manifest, &["-q"], "run");
    wait_for(
        "the 20,000 lines logged and the replica recorded",
        SOON,
        || {
            let last = scratch.trainctl(&["logs", "flaky", "--tail", "1"]);
            (last.stdout == "worker-0 | tick\n").then_some(())
        },
    );
    assert_eq!(
        logs_into_head(&scratch, &["flaky"]),
        (Some(0), String::new(), "worker-0 | line 1\n".to_owned())
    );
    assert_eq!(
        logs_into_head(
            &scratch,
            &["flaky", "-f", "--replica", "worker-0", "--timestamps"]
        )
        .0,
        Some(0)
    );
    let (code, stderr, line) = logs_into_head(&scratch, &["flaky-worker-0", "-f", "--tail", "1"]);
    assert_eq!(
        (code, stderr.as_str(), line.as_str()),
        (Some(0), "", "tick\n")
    );
    signal(running.pid(), "INT");
    let run = running.finish(SOON);
    assert_eq!(run.code, Some(130), "{run}");
}

#[test]
fn the_servers_log_api_selects_as_the_pod_log_api_and_prints_as_logs_does() {
    let scratch = tempfile::tempdir().expect("scratch");
    let server = Server::start(&["--restart-backoff", "100ms"]);
    let manifest = flaky_in(Some(scratch.path()), TWO_RUNS);
    let (status, body) = server.request("POST", "/api/v1/jobs", Some(&manifest));
    assert_eq!(status, 201, "{body}");
    server.wait_for("flaky", "Succeeded", |view| state(view) == "Succeeded");
    let logs = |query: &str| {
        let (status, body) = server.request(
            "GET",
            &format!("/api/v1/namespaces/default/tfjobs/flaky/logs?{query}"),
            None,
        );
        (
            status,
            body.as_str()
                .map_or_else(|| body.to_string(), str::to_owned),
        )
    };
    let (status, whole) = logs("replica=worker-0");
    assert_eq!(status, 200, "{whole}");
    let at = separator_time(&whole);
    assert_eq!(
        whole,
        format!(
            "first 1\nfirst 2\n--- worker-0: restart 1 at {at} (the previous run exited with \
             code 1) ---\nsecond 1\nsecond 2\nsecond 3\n"
        )
    );
    let state_dir = server.state_dir().display().to_string();
    let cli = harness::trainctl(&["--state-dir", &state_dir, "logs", "flaky-worker-0"]);
    assert_eq!((cli.code, cli.stdout.as_str()), (Some(0), whole.as_str()));
    assert_eq!(
        logs("replica=worker-0&previous=true"),
        (200, "first 1\nfirst 2\n".to_owned())
    );
    assert_eq!(
        logs("tailLines=2"),
        (200, "worker-0 | second 2\nworker-0 | second 3\n".to_owned())
    );
    assert_eq!(logs("replica=worker-0&sinceSeconds=3600"), (200, whole));
    let (status, stamped) = logs("replica=worker-0&timestamps=true&tailLines=1");
    assert_eq!(status, 200);
    let (time, line) = stamped.split_once(' ').expect("a time, then the line");
    assert!(time.parse::<jiff::Timestamp>().is_ok(), "{stamped}");
    assert_eq!(line, "second 3\n");
    let (status, refused) = logs("sinceSeconds=0");
    assert_eq!(status, 400, "{refused}");
}

#[test]
fn the_logs_of_a_finished_job_are_interleaved_in_the_order_they_were_written() {
    let scratch = Scratch::new("interleaved");
    // Each worker writes a line only a while after the other wrote its previous one: a, b, a,
    // b. Worker 0, whose end ends the job, waits for the last line.
    let script = "if [ \"$INDEX\" = 0 ]; then\n\
                  echo a1; touch a1\n\
                  until [ -e b1 ]; do sleep 0.01; done; sleep 0.2; echo a2; touch a2\n\
                  until [ -e b2 ]; do sleep 0.01; done\n\
                  else\n\
                  until [ -e a1 ]; do sleep 0.01; done; sleep 0.2; echo b1; touch b1\n\
                  until [ -e a2 ]; do sleep 0.01; done; sleep 0.2; echo b2; touch b2\n\
                  fi";
    let manifest = flaky(script).replace("replicas: 1", "replicas: 2").replace(
        "              command: [sh, -c]",
        "              env:\n                - name: INDEX\n                  valueFrom: \
             {fieldRef: {fieldPath: \"metadata.labels['training.kubeflow.org/replica-index']\"}}\n\
             \x20             command: [sh, -c]",
    );
    let file = scratch.write("job.yaml", &manifest);
    let run = scratch.run(&file, &["-q"]);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(
        logs(&scratch, &["flaky"]),
        "worker-0 | a1\nworker-1 | b1\nworker-0 | a2\nworker-1 | b2\n"
    );
}
