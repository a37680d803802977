//! A crash loop you can see: a replica whose script is not on this machine is said to be
//! missing before it starts, each exit and restart is an event (alike ones one line, counted), a
//! replica waiting out its back-off is `CrashLoopBackOff` with its next start, a job whose
//! replicas all are says so in its row, and its log is pointed at once it has exited alike three
//! times.

use super::*;

#[test]
fn a_missing_script_is_warned_of_and_its_crash_loop_is_visible() {
    let scratch = Scratch::new("crash-loop");
    let manifest = scratch.write(
        "job.yaml",
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: loop
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
              image: registry.example/model:1
              command: [python3, /opt/model/train.py]
",
    );
    let running = scratch.spawn_run(&manifest, &["-q"], "run");
    let hint = "trainctl: worker-0 exited with code 2 3 times in a row: see why in its log, \
                `trainctl logs tfjob loop --replica worker-0`";
    wait_for("the hint at the log", SOON, || {
        running.stderr().contains(hint).then_some(())
    });
    let warning = "trainctl: warning: Worker: `/opt/model/train.py` does not exist on this \
                   machine (the image's files are not used locally): `python3` will fail to open \
                   it; put the script there, or point the command at where it is";
    assert!(running.stderr().contains(warning), "{}", running.stderr());
    // Between two starts, the replica waits out its back-off, and says until when.
    let described = wait_for("worker-0 in CrashLoopBackOff", SOON, || {
        let described = scratch.trainctl(&["describe", "tfjob", "loop"]);
        described
            .stdout
            .lines()
            .any(|line| {
                line.trim_start().starts_with("worker-0")
                    && line.contains("CrashLoopBackOff (next start in ")
            })
            .then_some(described)
    });
    let events: Vec<&str> = described
        .stdout
        .split_once("Events:")
        .map_or("", |(_, events)| events)
        .lines()
        .collect();
    for expected in [
        "Normal    ExitedWithCode   Pod: default.loop-worker-0 exited with code 2",
        "Warning   BackOff          Back-off restarting failed container of pod loop-worker-0",
        "Warning   ScriptNotFound   Worker: `/opt/model/train.py` does not exist on this machine",
    ] {
        assert!(
            events.iter().any(|line| line.contains(expected)),
            "no `{expected}` in:\n{}",
            described.stdout
        );
    }
    signal(running.pid(), "INT");
    let run = running.finish(SOON);
    assert_eq!(run.code, Some(130), "{run}");
}

/// The cells of each line of a table (three or more spaces apart), the first column's made
/// `AGE` or `AGE (xN over AGE)` whatever the ages.
fn cells_aged(table: &str) -> Vec<Vec<String>> {
    let age = |text: &str| {
        text.strip_suffix('s')
            .is_some_and(|n| n.parse::<u32>().is_ok())
    };
    table
        .lines()
        .map(|line| {
            let mut cells: Vec<String> = line
                .split("   ")
                .map(str::trim)
                .filter(|cell| !cell.is_empty())
                .map(str::to_owned)
                .collect();
            let first = &cells[0];
            let shown = match first.split_once(" (x") {
                Some((last, rest)) => {
                    let (count, since) = rest
                        .strip_suffix(')')
                        .and_then(|rest| rest.split_once(" over "))
                        .unwrap_or_else(|| panic!("not `AGE (xN over AGE)`: {first}"));
                    assert!(age(last) && age(since), "{line}");
                    format!("AGE (x{count} over AGE)")
                }
                None if age(first) => "AGE".to_owned(),
                None => first.clone(),
            };
            cells[0] = shown;
            cells
        })
        .collect()
}

#[test]
fn the_exits_and_back_offs_of_a_crash_loop_are_one_line_each_with_their_count() {
    let scratch = Scratch::new("crash-loop-counted");
    // Fails three times, then succeeds.
    let script = "n=$(cat tries 2>/dev/null || echo 0); n=$((n + 1)); echo $n > tries\n\
                  [ $n -ge 4 ] || exit 3";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "counted",
            &[],
            &[replicas("Worker", 1, "OnFailure", script)],
        ),
    );
    let run = scratch.run(&manifest, &["-q"]);
    assert_eq!(run.code, Some(0), "{run}");

    let events = scratch.trainctl(&["events", "counted"]);
    assert_eq!(events.code, Some(0), "{events}");
    let row =
        |cells: &[&str]| -> Vec<String> { cells.iter().map(|&cell| cell.to_owned()).collect() };
    assert_eq!(
        cells_aged(&events.stdout),
        [
            row(&["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]),
            row(&[
                "AGE (x3 over AGE)",
                "Normal",
                "ExitedWithCode",
                "tfjob/counted",
                "Pod: default.counted-worker-0 exited with code 3"
            ]),
            row(&[
                "AGE (x3 over AGE)",
                "Warning",
                "BackOff",
                "pod/counted-worker-0",
                "Back-off restarting failed container of pod counted-worker-0"
            ]),
            row(&[
                "AGE",
                "Normal",
                "ExitedWithCode",
                "tfjob/counted",
                "Pod: default.counted-worker-0 exited with code 0"
            ]),
            row(&[
                "AGE",
                "Normal",
                "TFJobSucceeded",
                "tfjob/counted",
                "TFJob default/counted successfully completed."
            ]),
        ],
        "{events}"
    );

    // `describe` counts them the same way.
    let described = scratch.trainctl(&["describe", "tfjob", "counted"]);
    let section = described
        .stdout
        .split_once("Events:\n")
        .map_or("", |(_, events)| events);
    assert_eq!(
        cells_aged(section),
        [
            row(&["AGE", "TYPE", "REASON", "MESSAGE"]),
            row(&[
                "AGE (x3 over AGE)",
                "Normal",
                "ExitedWithCode",
                "Pod: default.counted-worker-0 exited with code 3"
            ]),
            row(&[
                "AGE (x3 over AGE)",
                "Warning",
                "BackOff",
                "Back-off restarting failed container of pod counted-worker-0"
            ]),
            row(&[
                "AGE",
                "Normal",
                "ExitedWithCode",
                "Pod: default.counted-worker-0 exited with code 0"
            ]),
            row(&[
                "AGE",
                "Normal",
                "TFJobSucceeded",
                "TFJob default/counted successfully completed."
            ]),
        ],
        "{described}"
    );
}

#[test]
fn a_job_whose_replicas_all_crash_loop_says_so_in_its_row() {
    let scratch = Scratch::new("crash-loop-row");
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "looping",
            &[],
            &[replicas("Worker", 2, "OnFailure", "exit 3")],
        ),
    );
    // A back-off much longer than a start: both replicas are waiting it out nearly all the time.
    let running = scratch.spawn(
        &[
            "run",
            "-f",
            &manifest,
            "-q",
            "--restart-backoff",
            "5s",
            "--restart-backoff-max",
            "5s",
        ],
        "run",
    );
    let row = wait_for("the job's row to say CrashLoopBackOff", SOON, || {
        let listed = scratch.trainctl(&["get", "-o", "wide"]);
        // Nothing listed before the job is recorded.
        (!listed.stdout.is_empty()).then_some(())?;
        table(&listed.stdout)
            .into_iter()
            .find(|row| row.get("REASON").map(String::as_str) == Some("CrashLoopBackOff"))
    });
    // All but the times and the restarts so far, which depend on when it was looked at.
    let mut shown = row.clone();
    for column in ["AGE", "DURATION", "RESTARTS"] {
        assert!(shown.remove(column).is_some(), "{row:?}");
    }
    let expected = [
        ("NAME", "tfjob/looping"),
        ("STATE", "Running"),
        ("REPLICAS", "Worker:2"),
        ("REASON", "CrashLoopBackOff"),
        ("PROGRESS", "-"),
    ];
    assert_eq!(
        shown,
        expected
            .into_iter()
            .map(|(column, cell)| (column.to_owned(), cell.to_owned()))
            .collect(),
        "{row:?}"
    );
    signal(running.pid(), "INT");
    let run = running.finish(SOON);
    assert_eq!(run.code, Some(130), "{run}");
    // A job that is over no longer says so: it says why it ended.
    let listed = scratch.trainctl(&["get", "-o", "wide"]);
    let over = table(&listed.stdout);
    assert_eq!(
        over[0]["REASON"], "TFJob looping was interrupted (SIGINT); its replicas were stopped",
        "{listed}"
    );
}
