//! The commands that look at or change a recorded job: `describe`, `wait` and `logs -f` on jobs
//! that `trainctl run` records, and `submit`, `delete`, `suspend`, `resume` where no server
//! runs (what needs a server is tested with it).
//!
//! Replicas are small `sh` scripts that wait for a file `go` in the scratch directory, so a test
//! decides when a job may end; nothing sleeps to wait, tests poll for the event with a timeout.

use std::fmt::Write as _;
use std::os::unix::fs::DirBuilderExt as _;
use std::time::Duration;
use trainctl_cli_harness as harness;

use trainctl_cli_harness::{Run, Scratch, lines_after, wait_for};

/// How long a test waits for something that takes milliseconds when all is well.
const SOON: Duration = Duration::from_secs(10);

/// The script line that blocks a replica until the test creates the file `go`.
const UNTIL_GO: &str = "while [ ! -e go ]; do sleep 0.05; done";

/// A TFJob named `name` with `count` workers (every one deciding success) under `Never`, each
/// running `sh -c SCRIPT` with its index in `$INDEX`.
fn tfjob(name: &str, count: u32, script: &str) -> String {
    let mut yaml = format!(
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: {name}
spec:
  successPolicy: AllWorkers
  tfReplicaSpecs:
    Worker:
      replicas: {count}
      restartPolicy: Never
      template:
        spec:
          terminationGracePeriodSeconds: 1
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.16.1
            env:
            - name: INDEX
              valueFrom: {{fieldRef: {{fieldPath: \"metadata.labels['training.kubeflow.org/replica-index']\"}}}}
            command:
            - sh
            - -c
            - |
"
    );
    for line in script.lines() {
        writeln!(yaml, "              {line}").expect("writing to a String cannot fail");
    }
    yaml
}

/// Starts `trainctl run` on the job and returns once the job is recorded.
fn start(scratch: &Scratch, name: &str, manifest: &str) -> harness::Running {
    let run = scratch.spawn_run(manifest, &[], "run");
    wait_for("the job to be recorded", SOON, || {
        (scratch.trainctl(&["get", "tfjob", name]).code == Some(0)).then_some(())
    });
    run
}

/// Lets the job's replicas past [`UNTIL_GO`].
fn go(scratch: &Scratch) {
    scratch.write("go", "");
}

/// The words of the line of `text` that starts with `label` (`State:`), label excluded.
fn field<'a>(text: &'a str, label: &str) -> Vec<&'a str> {
    text.lines()
        .find_map(|line| line.trim_start().strip_prefix(label))
        .unwrap_or_else(|| panic!("no `{label}` line in:\n{text}"))
        .split_whitespace()
        .collect()
}

/// The rows of the table under `title` (`Replicas:`), each as its cells (split on spaces).
fn section<'a>(text: &'a str, title: &str) -> Vec<Vec<&'a str>> {
    text.lines()
        .skip_while(|line| *line != title)
        .skip(2)
        .take_while(|line| line.starts_with("  "))
        .map(|line| line.split_whitespace().collect())
        .collect()
}

fn no_server_message(scratch: &Scratch) -> String {
    let dir = scratch.state_dir().display().to_string();
    format!(
        "error: no trainctl server is running for state directory {dir}; start one with: trainctl server --state-dir {dir} &\n"
    )
}

// logs -f

#[test]
fn logs_follow_prints_every_line_as_written_until_the_job_ends() {
    let scratch = Scratch::new("logs-follow");
    let script = format!(
        "echo \"start $INDEX\"\n{UNTIL_GO}\necho \"middle $INDEX\" >&2\nsleep 1\necho \"end $INDEX\"\nprintf \"last $INDEX\""
    );
    let manifest = scratch.write("job.yaml", &tfjob("followed", 2, &script));
    let run = start(&scratch, "followed", &manifest);
    let all = scratch.spawn(&["logs", "followed", "-f"], "all");
    let one = scratch.spawn(&["logs", "followed", "--replica", "worker-1", "-f"], "one");
    wait_for("logs -f to print the first lines", SOON, || {
        let printed = all.stdout();
        (printed.contains("worker-0 | start 0\n") && printed.contains("worker-1 | start 1\n"))
            .then_some(())
    });
    wait_for("logs --replica -f to print the first line", SOON, || {
        (one.stdout() == "start 1\n").then_some(())
    });
    let (mut all, mut one) = (all, one);
    assert!(
        all.is_running(),
        "logs -f ended before the job:\n{}",
        all.stdout()
    );
    assert!(
        one.is_running(),
        "logs -f ended before the job:\n{}",
        one.stdout()
    );
    go(&scratch);
    let all = all.finish(SOON);
    assert_eq!(all.code, Some(0), "{all}");
    for index in 0..2 {
        assert_eq!(
            lines_after(&all.stdout, &format!("worker-{index} | ")),
            [
                format!("start {index}"),
                format!("middle {index}"),
                format!("end {index}"),
                format!("last {index}")
            ],
            "{all}"
        );
    }
    assert_eq!(all.stdout.lines().count(), 8, "{all}");
    let one = one.finish(SOON);
    assert_eq!(one.code, Some(0), "{one}");
    assert_eq!(one.stdout, "start 1\nmiddle 1\nend 1\nlast 1");
    let run = run.finish(SOON);
    assert_eq!(run.code, Some(0), "{run}");
}

#[test]
fn logs_follow_of_a_finished_job_prints_it_all_and_ends() {
    let scratch = Scratch::new("logs-follow-done");
    let manifest = scratch.write("job.yaml", &tfjob("done", 2, "echo \"from $INDEX\""));
    let run = scratch.run(&manifest, &[]);
    assert_eq!(run.code, Some(0), "{run}");
    for args in [
        &["logs", "done", "-f"][..],
        &["logs", "done", "--all", "-f"],
    ] {
        let logs = scratch.trainctl(args);
        assert_eq!(logs.code, Some(0), "{logs}");
        assert_eq!(
            logs.stdout, "worker-0 | from 0\nworker-1 | from 1\n",
            "{args:?}"
        );
    }
}

#[test]
fn logs_all_and_replica_exclude_each_other() {
    let scratch = Scratch::new("logs-all-replica");
    let logs = scratch.trainctl(&["logs", "x", "--all", "--replica", "worker-0"]);
    assert_eq!(logs.code, Some(2), "{logs}");
    assert!(logs.stderr.contains("cannot be used with"), "{logs}");
}

#[test]
fn logs_of_a_replica_the_job_does_not_have_lists_those_it_has() {
    let scratch = Scratch::new("logs-no-replica");
    let manifest = scratch.write("job.yaml", &tfjob("two", 2, "true"));
    assert_eq!(scratch.run(&manifest, &[]).code, Some(0));
    let logs = scratch.trainctl(&["logs", "two", "--replica", "worker-2", "-f"]);
    assert_eq!(logs.code, Some(1), "{logs}");
    assert_eq!(
        logs.stderr,
        "error: tfjob/two has no replica \"worker-2\" (it has: worker-0, worker-1)\n"
    );
}

// wait

#[test]
fn wait_returns_0_once_the_job_has_the_condition() {
    let scratch = Scratch::new("wait-succeeded");
    let manifest = scratch.write("job.yaml", &tfjob("waited", 1, UNTIL_GO));
    let run = start(&scratch, "waited", &manifest);
    let waiting = scratch.spawn(
        &[
            "wait",
            "waited",
            "--for",
            "condition=Succeeded",
            "--timeout",
            "1m",
        ],
        "wait",
    );
    let running = scratch.trainctl(&["wait", "tfjob", "waited", "--for=condition=Running"]);
    assert_eq!(running.code, Some(0), "{running}");
    assert_eq!(running.stdout, "tfjob.kubeflow.org/waited condition met\n");
    go(&scratch);
    let waited = waiting.finish(SOON);
    assert_eq!(waited.code, Some(0), "{waited}");
    assert_eq!(waited.stdout, "tfjob.kubeflow.org/waited condition met\n");
    assert_eq!(run.finish(SOON).code, Some(0));
}

#[test]
fn wait_times_out_with_kubectls_message() {
    let scratch = Scratch::new("wait-timeout");
    let manifest = scratch.write("job.yaml", &tfjob("slow", 1, UNTIL_GO));
    let run = start(&scratch, "slow", &manifest);
    for timeout in ["0s", "300ms"] {
        let waited = scratch.trainctl(&[
            "wait",
            "slow",
            "--for",
            "condition=Succeeded",
            "--timeout",
            timeout,
        ]);
        assert_eq!(waited.code, Some(1), "{waited}");
        assert_eq!(
            waited.stderr,
            "error: timed out waiting for the condition on tfjobs/slow\n"
        );
        assert_eq!(waited.stdout, "");
    }
    go(&scratch);
    assert_eq!(run.finish(SOON).code, Some(0));
}

#[test]
fn wait_for_success_of_a_job_that_fails_exits_1_at_once() {
    let scratch = Scratch::new("wait-failed");
    let manifest = scratch.write(
        "job.yaml",
        &tfjob("doomed", 1, &format!("{UNTIL_GO}\nexit 3")),
    );
    let run = start(&scratch, "doomed", &manifest);
    let waiting = scratch.spawn(
        &[
            "wait",
            "doomed",
            "--for",
            "condition=Succeeded",
            "--timeout",
            "10m",
        ],
        "wait",
    );
    go(&scratch);
    let waited = waiting.finish(SOON);
    assert_eq!(waited.code, Some(1), "{waited}");
    assert!(
        waited
            .stderr
            .starts_with("error: tfjobs/doomed finished with condition Failed ("),
        "{waited}"
    );
    assert!(
        waited
            .stderr
            .ends_with(", so condition=Succeeded will never be met\n"),
        "{waited}"
    );
    assert_eq!(run.finish(SOON).code, Some(1));
    let failed = scratch.trainctl(&["wait", "doomed", "--for", "condition=failed"]);
    assert_eq!(failed.code, Some(0), "{failed}");
}

#[test]
fn wait_on_a_job_that_does_not_exist() {
    let scratch = Scratch::new("wait-missing");
    let waited = scratch.trainctl(&["wait", "nothing", "--for", "condition=Succeeded"]);
    assert_eq!(waited.code, Some(1), "{waited}");
    assert_eq!(
        waited.stderr,
        "error: job \"nothing\" not found in namespace \"default\" (see `trainctl get`)\n"
    );
    let deleted = scratch.trainctl(&["wait", "tfjob", "nothing", "--for", "delete"]);
    assert_eq!(deleted.code, Some(0), "{deleted}");
}

#[test]
fn wait_refuses_what_it_cannot_wait_for() {
    let scratch = Scratch::new("wait-bad-for");
    for (wanted, message) in [
        (
            "jsonpath={.status}",
            "`jsonpath={.status}` is not something trainctl can wait for",
        ),
        ("condition=Complete", "unknown condition `Complete`"),
    ] {
        let waited = scratch.trainctl(&["wait", "x", "--for", wanted]);
        assert_eq!(waited.code, Some(2), "{waited}");
        assert!(waited.stderr.contains(message), "{waited}");
    }
    let negative = scratch.trainctl(&["wait", "x", "--for", "delete", "--timeout=-1s"]);
    assert_eq!(negative.code, Some(1), "{negative}");
    assert!(
        negative.stderr.contains("a timeout cannot be negative"),
        "{negative}"
    );
}

// describe

#[test]
fn describe_shows_the_spec_replicas_conditions_and_events_of_a_run_job() {
    let scratch = Scratch::new("describe");
    let manifest = scratch.write("job.yaml", &tfjob("described", 2, "echo hi"));
    let run = scratch.run(&manifest, &[]);
    assert_eq!(run.code, Some(0), "{run}");
    let described = scratch.trainctl(&["describe", "described"]);
    assert_eq!(described.code, Some(0), "{described}");
    let text = &described.stdout;
    assert_eq!(field(text, "Name:"), ["described"]);
    assert_eq!(field(text, "Namespace:"), ["default"]);
    assert_eq!(field(text, "Kind:"), ["TFJob"]);
    assert_eq!(field(text, "State:"), ["Succeeded"]);
    for label in ["UID:", "Created:", "Started:", "Completed:", "Duration:"] {
        assert!(!field(text, label).is_empty(), "{label}\n{text}");
    }
    assert_eq!(field(text, "Replicas:"), ["2"]);
    assert_eq!(field(text, "Restart Policy:"), ["Never"]);
    assert!(
        text.contains("    Command:         sh -c 'echo hi\n"),
        "{text}"
    );
    assert_eq!(field(text, "Clean Pod Policy:"), ["None"]);
    let replicas = section(text, "Replicas:");
    assert_eq!(replicas.len(), 2, "{text}");
    for (index, row) in replicas.iter().enumerate() {
        assert_eq!(
            row[..4],
            [format!("worker-{index}").as_str(), "Succeeded", "0", "0"],
            "{text}"
        );
    }
    let conditions = section(text, "Conditions:");
    assert!(
        conditions
            .iter()
            .any(|row| row[..3] == ["Succeeded", "True", "TFJobSucceeded"]),
        "{text}"
    );
    assert!(!section(text, "Events:").is_empty(), "{text}");
    let by_kind = scratch.trainctl(&["describe", "tfjobs", "described"]);
    assert_eq!(by_kind.code, Some(0), "{by_kind}");
    assert_eq!(field(&by_kind.stdout, "UID:"), field(text, "UID:"));
}

#[test]
fn describe_of_a_job_that_does_not_exist_exits_1() {
    let scratch = Scratch::new("describe-missing");
    let described = scratch.trainctl(&["describe", "tfjob", "nope", "-n", "ml"]);
    assert_eq!(described.code, Some(1), "{described}");
    assert_eq!(
        described.stderr,
        "error: tfjob \"nope\" not found in namespace \"ml\" (see `trainctl get`)\n"
    );
}

// The writes, without a server.

#[test]
fn writes_without_a_server_say_how_to_start_one() {
    let scratch = Scratch::new("no-server");
    let manifest = scratch.write("job.yaml", &tfjob("queued", 1, "true"));
    for args in [
        &["submit", "-f", manifest.as_str()][..],
        &["suspend", "tfjob", "queued"],
        &["resume", "queued", "-n", "ml"],
    ] {
        let run: Run = scratch.trainctl(args);
        assert_eq!(run.code, Some(1), "{args:?}: {run}");
        assert_eq!(run.stderr, no_server_message(&scratch), "{args:?}");
        assert_eq!(run.stdout, "", "{args:?}");
    }
}

#[test]
fn delete_without_a_server_reads_the_state_directory() {
    // `delete` works with no server (crates/cli/tests/commands/recovery.rs deletes a job so): a job
    // that is not there is not found, as with a server.
    let scratch = Scratch::new("no-server-delete");
    for args in [&["delete", "tfjob", "queued"][..], &["delete", "queued"]] {
        let run: Run = scratch.trainctl(args);
        assert_eq!(run.code, Some(1), "{args:?}: {run}");
        assert_eq!(
            run.stderr.lines().last(),
            Some("error: tfjob \"queued\" not found in namespace \"default\" (see `trainctl get`)")
                .filter(|_| args.len() == 3)
                .or(Some(
                    "error: job \"queued\" not found in namespace \"default\" (see `trainctl get`)"
                )),
            "{args:?}"
        );
    }
}

#[test]
fn a_server_that_is_gone_is_no_server() {
    let scratch = Scratch::new("server-gone");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address")
        .port();
    let state = scratch.state_dir();
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&state)
        .expect("state dir");
    std::fs::write(
        state.join("server.json"),
        format!(r#"{{"url": "http://127.0.0.1:{port}", "pid": 1}}"#),
    )
    .expect("server.json");
    std::fs::write(state.join("server.token"), "00").expect("server.token");
    let run = scratch.trainctl(&["suspend", "tfjob", "queued"]);
    assert_eq!(run.code, Some(1), "{run}");
    assert_eq!(run.stderr, no_server_message(&scratch));
}

#[test]
fn submit_of_an_invalid_manifest_reports_as_validate_does_without_a_server() {
    let scratch = Scratch::new("submit-invalid");
    let corpus = harness::invalid_corpus();
    for file in [
        "backoff-negative.yaml",
        "containers-empty.yaml",
        "apiversion-missing.yaml",
    ] {
        let path = corpus.join(file).display().to_string();
        let validated = scratch.trainctl(&["validate", "-f", &path]);
        let submitted = scratch.trainctl(&["submit", "-f", &path]);
        assert_eq!(submitted.code, Some(2), "{file}: {submitted}");
        assert_eq!(submitted.stderr, validated.stderr, "{file}");
        assert!(
            submitted.stderr.contains(&format!("{path}:")),
            "{submitted}"
        );
    }
    let text = std::fs::read_to_string(corpus.join("backoff-negative.yaml")).expect("corpus");
    let state = scratch.state_dir().display().to_string();
    let validated = harness::trainctl_with_stdin(&["validate", "-f", "-"], &text);
    let submitted =
        harness::trainctl_with_stdin(&["--state-dir", &state, "submit", "-f", "-"], &text);
    assert_eq!(submitted.code, Some(2), "{}", submitted.stderr);
    assert_eq!(submitted.stderr, validated.stderr);
    let missing = scratch.trainctl(&["submit", "-f", "missing.yaml"]);
    assert_eq!(missing.code, Some(2), "{missing}");
    assert_eq!(
        missing.stderr, "missing.yaml: no such file\n1 error\n",
        "{missing}"
    );
}

#[test]
fn submit_refuses_a_manifest_without_an_object_or_in_another_namespace() {
    let scratch = Scratch::new("submit-refused");
    // A ConfigMap, Secret or ResourceQuota alone is submitted (server_companions.rs).
    let nothing = scratch.write("nothing.yaml", "# nothing yet\n");
    let submitted = scratch.trainctl(&["submit", "-f", &nothing]);
    assert_eq!(submitted.code, Some(2), "{submitted}");
    assert_eq!(
        submitted.stderr,
        format!(
            "{nothing}:1:1: the file holds no object: expected a kubeflow.org/v1 job (e.g. `kind: TFJob`)\n1 error\n"
        )
    );
    let job = tfjob("elsewhere", 1, "true").replace(
        "  name: elsewhere\n",
        "  name: elsewhere\n  namespace: team-a\n",
    );
    let manifest = scratch.write("job.yaml", &job);
    let submitted = scratch.trainctl(&["submit", "-f", &manifest, "-n", "team-b"]);
    assert_eq!(submitted.code, Some(2), "{submitted}");
    assert_eq!(
        submitted.stderr,
        format!("{manifest}: the job's namespace `team-a` does not match --namespace `team-b`\n")
    );
}
