//! The habits of kubectl users, on jobs that `trainctl run` records: names as `KIND/NAME`,
//! several at once or from `-f FILE`; `get`'s `-o name|jsonpath|custom-columns`, `--sort-by`,
//! `-l`, `--show-labels` and `-w`; where a job not found here is; suggestions for a mistyped
//! kind or command.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use trainctl_cli_harness as harness;

use trainctl_cli_harness::Scratch;

/// How long a test waits for something that takes milliseconds when all is well.
const SOON: Duration = Duration::from_secs(20);

/// A TFJob of one worker that prints `hello` and succeeds, in `namespace`, with `labels`.
fn tfjob(name: &str, namespace: &str, labels: &str) -> String {
    format!(
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: {name}
  namespace: {namespace}
  labels: {{{labels}}}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.16.1
            command: [sh, -c, echo hello]
"
    )
}

/// A scratch directory where three jobs ran: `alpha` (team a) and `beta` (team b) in
/// `default`, `gamma` (team a) in `research`.
fn three_jobs(name: &str) -> Scratch {
    let scratch = Scratch::new(name);
    for (job, namespace, labels) in [
        ("alpha", "default", "team: a"),
        ("beta", "default", "team: b"),
        ("gamma", "research", "team: a"),
    ] {
        let manifest = scratch.write(&format!("{job}.yaml"), &tfjob(job, namespace, labels));
        let run = scratch.run(&manifest, &[]);
        assert_eq!(run.code, Some(0), "{run}");
    }
    scratch
}

/// The NAME column of a table, skipping the header.
fn names(stdout: &str) -> Vec<String> {
    harness::table(stdout)
        .into_iter()
        .map(|row| row["NAME"].clone())
        .collect()
}

#[test]
fn jobs_are_named_as_kubectl_names_objects() {
    let scratch = three_jobs("habits-names");
    // Named without their kind, jobs may be of several kinds: NAME says which.
    let run = scratch.trainctl(&["get", "alpha", "beta"]);
    assert_eq!(names(&run.stdout), ["tfjob/alpha", "tfjob/beta"], "{run}");
    for args in [
        &["get", "tfjob", "alpha", "beta"][..],
        &["get", "tfjob/alpha", "tfjobs.kubeflow.org/beta"],
    ] {
        let run = scratch.trainctl(args);
        assert_eq!(run.code, Some(0), "{args:?}: {run}");
        assert_eq!(names(&run.stdout), ["alpha", "beta"], "{args:?}");
    }
    // A manifest names its jobs, in their own namespace.
    let manifest = scratch.write(
        "two.yaml",
        &format!(
            "{}---\n{}",
            tfjob("alpha", "default", "team: a"),
            tfjob("gamma", "research", "team: a")
        ),
    );
    let run = scratch.trainctl(&["get", "-f", &manifest]);
    assert_eq!(run.code, Some(0), "{run}");
    let rows = harness::table(&run.stdout);
    let shown: Vec<(&str, &str)> = rows
        .iter()
        .map(|row| (row["NAMESPACE"].as_str(), row["NAME"].as_str()))
        .collect();
    // Jobs of two namespaces: the table says which is where.
    assert_eq!(shown, [("default", "alpha"), ("research", "gamma")]);
    let described = scratch.trainctl(&["describe", "-f", &manifest]);
    assert_eq!(described.code, Some(0), "{described}");
    assert_eq!(
        described.stdout.matches("\nKind:         TFJob\n").count(),
        2
    );
    assert!(
        described.stdout.contains("Events:")
            && described.stdout.contains("\n\n\nName:         gamma\n"),
        "{described}"
    );
    let waited = scratch.trainctl(&["wait", "alpha", "beta", "--for", "condition=Succeeded"]);
    assert_eq!(
        (waited.code, waited.stdout.as_str()),
        (
            Some(0),
            "tfjob.kubeflow.org/alpha condition met\ntfjob.kubeflow.org/beta condition met\n"
        ),
        "{waited}"
    );
}

#[test]
fn a_job_missing_among_several_is_said_and_the_others_are_done() {
    let scratch = three_jobs("habits-missing");
    let run = scratch.trainctl(&["get", "alpha", "nope"]);
    assert_eq!(run.code, Some(1), "{run}");
    assert_eq!(names(&run.stdout), ["tfjob/alpha"]);
    assert_eq!(
        run.stderr,
        "error: job \"nope\" not found in namespace \"default\"\n"
    );
    // No server runs: each job is removed from the state directory.
    let deleted = scratch.trainctl(&["delete", "nope", "beta"]);
    assert_eq!(deleted.code, Some(1), "{deleted}");
    assert!(
        deleted
            .stdout
            .starts_with("tfjob.kubeflow.org/beta deleted (no server runs for "),
        "{deleted}"
    );
    assert_eq!(
        deleted.stderr,
        "error: job \"nope\" not found in namespace \"default\" (see `trainctl get`)\n"
    );
    assert_eq!(
        names(&scratch.trainctl(&["get"]).stdout),
        ["tfjob/alpha"],
        "beta is gone, alpha stays"
    );
}

#[test]
fn a_job_in_another_namespace_is_pointed_at() {
    let scratch = three_jobs("habits-elsewhere");
    for args in [&["get", "gamma"][..], &["describe", "gamma"]] {
        let run = scratch.trainctl(args);
        assert_eq!(run.code, Some(1), "{args:?}: {run}");
        assert_eq!(
            run.stderr,
            "error: job \"gamma\" not found in namespace \"default\" (found in namespace \
             research: add -n research, or -A)\n",
            "{args:?}"
        );
    }
    let run = scratch.trainctl(&["get", "tfjob", "gamma", "-n", "research"]);
    assert_eq!(names(&run.stdout), ["gamma"]);
}

#[test]
fn mistyped_kinds_and_commands_get_the_spelling_meant() {
    let scratch = three_jobs("habits-typos");
    let run = scratch.trainctl(&["get", "tfjbs"]);
    assert_eq!(run.code, Some(1), "{run}");
    assert_eq!(
        run.stderr,
        "error: job \"tfjbs\" not found in namespace \"default\"; to list a kind: \
         `trainctl get tfjobs`\n"
    );
    let run = scratch.trainctl(&["get", "tfjbs/alpha"]);
    assert_eq!(run.code, Some(1), "{run}");
    assert!(
        run.stderr
            .starts_with("error: `tfjbs/alpha`: unknown job kind `tfjbs` (did you mean `tfjobs`?)"),
        "{run}"
    );
    let run = scratch.trainctl(&["gte"]);
    assert_eq!(run.code, Some(2), "{run}");
    assert!(
        run.stderr.starts_with(
            "error: unrecognized subcommand 'gte'\n\n  tip: a similar subcommand exists: 'get'\n"
        ),
        "{run}"
    );
}

#[test]
fn usage_lines_do_not_show_the_state_directory_set_by_the_environment() {
    let scratch = Scratch::new("habits-usage");
    let output = Command::new(trainctl_cli_harness::binary())
        .arg("submit")
        .env("TRAINCTL_HOME", scratch.state_dir())
        .output()
        .expect("trainctl runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("\nUsage: trainctl submit --filename <FILE>\n"),
        "{stderr}"
    );
}

#[test]
fn get_prints_names_templates_columns_sorted_and_selected() {
    let scratch = three_jobs("habits-formats");
    let run = scratch.trainctl(&["get", "-A", "-o", "name"]);
    assert_eq!(
        run.stdout,
        "tfjob.kubeflow.org/alpha\ntfjob.kubeflow.org/beta\ntfjob.kubeflow.org/gamma\n"
    );
    let run = scratch.trainctl(&[
        "get",
        "-A",
        "-o",
        r#"jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}={.status.conditions[-1:].type}{"\n"}{end}"#,
    ]);
    assert_eq!(
        run.stdout, "default/alpha=Succeeded\ndefault/beta=Succeeded\nresearch/gamma=Succeeded\n",
        "{run}"
    );
    // One job named: the template sees the job itself, not a List.
    let run = scratch.trainctl(&["get", "alpha", "-o", "jsonpath={.metadata.labels.team}"]);
    assert_eq!(run.stdout, "a");
    let run = scratch.trainctl(&[
        "get",
        "-A",
        "-o",
        "custom-columns=JOB:.metadata.name,TEAM:.metadata.labels.team",
        "--sort-by",
        "{.metadata.labels.team}",
        "-l",
        "team",
    ]);
    let rows: Vec<(String, String)> = harness::table(&run.stdout)
        .into_iter()
        .map(|row| (row["JOB"].clone(), row["TEAM"].clone()))
        .collect();
    assert_eq!(rows[2], ("beta".to_owned(), "b".to_owned()), "{run}");
    assert_eq!(rows.len(), 3, "{run}");
    let run = scratch.trainctl(&["get", "-A", "-l", "team=a", "--show-labels"]);
    let rows: Vec<(String, String)> = harness::table(&run.stdout)
        .into_iter()
        .map(|row| (row["NAME"].clone(), row["LABELS"].clone()))
        .collect();
    assert_eq!(
        rows,
        [
            ("tfjob/alpha".to_owned(), "team=a".to_owned()),
            ("tfjob/gamma".to_owned(), "team=a".to_owned())
        ]
    );
    let run = scratch.trainctl(&["get", "-l", "team in (a,"]);
    assert_eq!(run.code, Some(2), "{run}");
    let run = scratch.trainctl(&["get", "-o", "jsonpath={.metadata.name"]);
    assert_eq!(run.code, Some(1), "{run}");
    assert!(run.stderr.starts_with("error: "), "{run}");
}

#[test]
fn get_watch_prints_a_job_again_when_it_changes() {
    let scratch = three_jobs("habits-watch");
    let mut watch = Command::new(trainctl_cli_harness::binary())
        .args(["--state-dir"])
        .arg(scratch.state_dir())
        .args(["get", "-w", "-o", "name"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("trainctl runs");
    let (lines, received) = mpsc::channel();
    let stdout = watch.stdout.take().expect("piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let next = || received.recv_timeout(SOON).expect("a line from get -w");
    assert_eq!(
        [next(), next()],
        ["tfjob.kubeflow.org/alpha", "tfjob.kubeflow.org/beta"]
    );
    // A new job appears in the watch as it is recorded, and again as it changes.
    let manifest = scratch.write("delta.yaml", &tfjob("delta", "default", "team: d"));
    let run = scratch.run(&manifest, &[]);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(next(), "tfjob.kubeflow.org/delta");
    watch.kill().expect("kill the watch");
    let _ = watch.wait();
}

#[test]
fn a_failed_job_is_red_on_a_terminal_only() {
    let scratch = Scratch::new("habits-colour");
    let failing = tfjob("broken", "default", "team: a").replace("echo hello", "exit 3");
    let manifest = scratch.write("broken.yaml", &failing);
    assert_eq!(scratch.run(&manifest, &[]).code, Some(1));
    let piped = scratch.trainctl(&["get"]);
    assert!(
        piped.stdout.contains(" Failed ") && !piped.stdout.contains('\x1b'),
        "{piped}"
    );
    // `script` gives the command a terminal (util-linux, on every Debian).
    let on_terminal = |no_color: &str| {
        let line = format!(
            "{} --state-dir {} get",
            trainctl_cli_harness::binary().display(),
            scratch.state_dir().display()
        );
        let output = Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .env("NO_COLOR", no_color)
            .stdin(Stdio::null())
            .output()
            .expect("script runs");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let coloured = on_terminal("");
    assert!(coloured.contains("\x1b[31mFailed\x1b[0m"), "{coloured:?}");
    let plain = on_terminal("1");
    assert!(
        plain.contains(" Failed ") && !plain.contains("\x1b[31m"),
        "{plain:?}"
    );
}
