//! 13–14. What run prints, and what get and logs show afterwards.

use super::*;

#[test]
fn json_output_is_the_final_job_alone_and_get_and_logs_show_it_afterwards() {
    let scratch = Scratch::new("json-get-logs");
    let script = r#"if [ "$INDEX" = 1 ]; then echo "one of worker-1"; echo "two of worker-1" >&2; fi
echo "from $INDEX""#;
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "shown",
            // Every worker decides, so both logs are complete when the job ends.
            &["successPolicy: AllWorkers"],
            &[replicas("Worker", 2, "Never", script).with(INDEX_ENV)],
        ),
    );
    let run = scratch.run(&manifest, &["-o", "json"]);
    assert_eq!(run.code, Some(0), "{run}");
    let values: Vec<Value> = serde_json::Deserializer::from_str(&run.stdout)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|error| panic!("stdout is not JSON ({error}): {run}"));
    assert_eq!(values.len(), 1, "{run}");
    let job = &values[0];
    assert_eq!(
        (&job["kind"], &job["metadata"]["name"]),
        (&Value::from("TFJob"), &Value::from("shown"))
    );
    assert_eq!(
        conditions(job),
        ran_then(
            "TFJob",
            "TFJob shown is created.",
            "TFJob default/shown is running.",
            ("Succeeded", "TFJob default/shown successfully completed.")
        ),
    );
    // The replicas' output went to stderr, prefixed.
    for printed in ["from 0", "from 1", "worker-1 |"] {
        assert!(!run.stdout.contains(printed), "{run}");
    }
    assert_eq!(lines_after(&run.stderr, "worker-0 | "), ["from 0"]);
    assert_eq!(
        lines_after(&run.stderr, "worker-1 | "),
        ["one of worker-1", "two of worker-1", "from 1"]
    );

    let get = scratch.trainctl(&["get", "tfjob", "shown", "-o", "json"]);
    assert_eq!(get.code, Some(0), "{get}");
    assert_eq!(get.json()["status"], job["status"]);
    let listed = scratch.trainctl(&["get"]);
    let rows = table(&listed.stdout);
    assert_eq!(rows.len(), 1, "{listed}");
    assert_eq!(
        (rows[0]["NAME"].as_str(), rows[0]["STATE"].as_str()),
        ("tfjob/shown", "Succeeded")
    );

    assert_eq!(
        replica_log(&scratch, "shown", "worker-1"),
        "one of worker-1\ntwo of worker-1\nfrom 1\n"
    );
    let all = scratch.trainctl(&["logs", "shown"]);
    assert_eq!(all.code, Some(0), "{all}");
    assert_eq!(
        all.stdout,
        "worker-0 | from 0\nworker-1 | one of worker-1\nworker-1 | two of worker-1\nworker-1 | from 1\n"
    );
}

#[test]
fn running_a_job_again_replaces_its_record_and_removes_the_old_logs() {
    let scratch = Scratch::new("again");
    let job = |words: &str| {
        tfjob(
            "again",
            &[],
            &[replicas("Worker", 1, "Never", &format!("echo {words}"))],
        )
    };
    let first = scratch.write("first.yaml", &job("first run"));
    let second = scratch.write("second.yaml", &job("second run"));
    let uid = |run: &Run| {
        run.json()["metadata"]["uid"]
            .as_str()
            .expect("a uid")
            .to_owned()
    };
    let run = scratch.run(&first, &["-q", "-o", "json"]);
    assert_eq!(run.code, Some(0), "{run}");
    let old_logs = scratch.state_dir().join("logs").join(uid(&run));
    assert!(old_logs.join("worker-0.log").exists());

    let run = scratch.run(&second, &["-q", "-o", "json"]);
    assert_eq!(run.code, Some(0), "{run}");
    // The watchdog removes the replaced run's logs when the CPU is idle.
    wait_for("the first run's logs to be removed", SOON, || {
        (!old_logs.exists()).then_some(())
    });
    let new_logs = scratch.state_dir().join("logs").join(uid(&run));
    assert!(new_logs.join("worker-0.log").exists());
    assert_eq!(replica_log(&scratch, "again", "worker-0"), "second run\n");
    let get = scratch.trainctl(&["get"]);
    assert_eq!(table(&get.stdout).len(), 1, "{get}");
}

#[test]
fn a_quiet_run_shows_no_replica_output_and_keeps_all_of_it_in_order() {
    let scratch = Scratch::new("quiet-logs");
    // What the replica's stdout is: a pipe to trainctl's pump, which times its output, even with
    // nothing to show and no log limit to keep.
    let script = "readlink /proc/self/fd/1
for i in `seq 1 300`; do echo \"out $i\"; echo \"err $i\" >&2; done
printf 'no newline at the end'";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob("hushed", &[], &[replicas("Worker", 1, "Never", script)]),
    );
    let run = scratch.run(&manifest, &["-q", "--log-max-size", "0"]);
    assert_eq!(run.code, Some(0), "{run}");
    assert!(!run.stderr.contains("worker-0 |"), "{run}");
    assert!(!run.stderr.contains("out 1\n"), "{run}");
    let log = replica_log(&scratch, "hushed", "worker-0");
    let (stdout, rest) = log.split_once('\n').expect("the first line");
    assert!(stdout.starts_with("pipe:["), "stdout is {stdout}");
    let mut expected = String::new();
    for i in 1..=300 {
        write!(expected, "out {i}\nerr {i}\n").expect("writing to a String cannot fail");
    }
    expected.push_str("no newline at the end");
    assert_eq!(rest, expected);
}

#[test]
fn logs_keep_one_replicas_order_and_a_final_line_without_newline() {
    let scratch = Scratch::new("log-order");
    let script = "for i in `seq 1 300`; do echo \"out $i\"; echo \"err $i\" >&2; done
printf 'no newline at the end'";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob("ordered", &[], &[replicas("Worker", 1, "Never", script)]),
    );
    let run = scratch.run(&manifest, &[]);
    assert_eq!(run.code, Some(0), "{run}");
    let mut expected = String::new();
    for i in 1..=300 {
        write!(expected, "out {i}\nerr {i}\n").expect("writing to a String cannot fail");
    }
    expected.push_str("no newline at the end");
    assert_eq!(replica_log(&scratch, "ordered", "worker-0"), expected);
    let streamed = lines_after(&run.stderr, "worker-0 | ").join("\n");
    assert_eq!(streamed, expected);
    let all = scratch.trainctl(&["logs", "ordered"]);
    assert!(
        all.stdout.ends_with(
            "worker-0 | out 300\nworker-0 | err 300\nworker-0 | no newline at the end\n"
        ),
        "{all}"
    );
}
