//! The everyday commands that look at this machine: `get replicas` (as `kubectl get pods`),
//! `events` (as `kubectl events`), `top node` and `top job`, and `version` and `completion`.
//!
//! Replicas are small `sh` scripts that wait for a file `go` in the scratch directory, so a test
//! decides when a job may end; nothing sleeps to wait, tests poll with a timeout.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;
use trainctl_cli_harness as harness;

use trainctl_cli_harness::server::Server;
use trainctl_cli_harness::{Run, Scratch, table, wait_for};

/// How long a test waits for something that takes milliseconds when all is well.
const SOON: Duration = Duration::from_secs(10);

/// The script line that blocks a replica until the test creates the file `go`.
const UNTIL_GO: &str = "while [ ! -e go ]; do sleep 0.05; done";

/// A TFJob named `name` with `workers` workers under `Never`, each asking for `gpus` GPUs and
/// running `sh -c SCRIPT`.
fn tfjob(name: &str, workers: u32, gpus: u32, script: &str) -> String {
    let mut yaml = format!(
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: {name}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: {workers}
      restartPolicy: Never
      template:
        metadata:
          labels: {{team: vision}}
        spec:
          terminationGracePeriodSeconds: 1
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.16.1
            resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}
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

/// Starts `trainctl run EXTRA` on the job and returns once every one of its replicas runs.
fn start_running(
    scratch: &Scratch,
    name: &str,
    manifest: &str,
    extra: &[&str],
) -> harness::Running {
    let run = scratch.spawn_run(manifest, extra, name);
    wait_for(&format!("job {name} to run"), SOON, || {
        let get = scratch.trainctl(&["get", "tfjob", name]);
        (get.code == Some(0) && table(&get.stdout)[0]["STATE"] == "Running").then_some(())
    });
    run
}

/// The rows of a table as maps from header to cell.
fn rows(run: &Run) -> Vec<BTreeMap<String, String>> {
    assert_eq!(run.code, Some(0), "{run}");
    table(&run.stdout)
}

/// The first line of `text`.
fn header(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// The column headers of a table (three or more spaces apart; a header may hold one space).
fn headers(text: &str) -> Vec<&str> {
    header(text)
        .split("   ")
        .map(str::trim)
        .filter(|cell| !cell.is_empty())
        .collect()
}

// get replicas

#[test]
fn get_replicas_lists_a_jobs_replicas_as_kubectl_lists_pods() {
    let scratch = Scratch::new("get-replicas");
    let manifest = scratch.write("job.yaml", &tfjob("pods", 2, 0, UNTIL_GO));
    let run = start_running(&scratch, "pods", &manifest, &[]);
    wait_for("both replicas to run", SOON, || {
        let get = scratch.trainctl(&["get", "replicas"]);
        (get.code == Some(0) && get.stdout.matches(" Running ").count() == 2).then_some(())
    });

    let get = scratch.trainctl(&["get", "replicas"]);
    assert_eq!(
        header(&get.stdout),
        "NAME            READY   STATUS    RESTARTS   AGE"
    );
    let listed: Vec<[String; 4]> = rows(&get)
        .into_iter()
        .map(|row| ["NAME", "READY", "STATUS", "RESTARTS"].map(|column| row[column].clone()))
        .collect();
    assert_eq!(
        listed,
        [
            ["pods-worker-0", "1/1", "Running", "0"].map(str::to_owned),
            ["pods-worker-1", "1/1", "Running", "0"].map(str::to_owned),
        ]
    );

    let wide = scratch.trainctl(&["get", "replicas", "tfjob/pods", "-o", "wide", "-A"]);
    assert_eq!(
        headers(&wide.stdout),
        [
            "NAMESPACE",
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "PID",
            "GPUS",
            "JOB"
        ],
        "{wide}"
    );
    for row in rows(&wide) {
        assert_eq!(
            (row["NAMESPACE"].as_str(), row["JOB"].as_str()),
            ("default", "tfjob/pods")
        );
        assert!(row["PID"].parse::<u32>().is_ok(), "{row:?}");
        assert_eq!(row["GPUS"], "-");
    }

    let selected = |selector: &str| -> Vec<String> {
        rows(&scratch.trainctl(&["get", "replicas", "pods", "-l", selector]))
            .into_iter()
            .map(|row| row["NAME"].clone())
            .collect()
    };
    assert_eq!(
        selected("training.kubeflow.org/replica-index=1"),
        ["pods-worker-1"]
    );
    assert_eq!(
        selected("training.kubeflow.org/job-role"),
        ["pods-worker-0"]
    );
    assert_eq!(
        selected("team==vision,training.kubeflow.org/replica-index!=0"),
        ["pods-worker-1"]
    );
    let none = scratch.trainctl(&["get", "replicas", "-l", "team=audio"]);
    assert_eq!(
        (none.code, none.stdout.as_str(), none.stderr.as_str()),
        (Some(0), "", "No resources found in default namespace.\n")
    );
    let bad = scratch.trainctl(&["get", "replicas", "-l", "a=b=c"]);
    assert_eq!(bad.code, Some(2), "{bad}");
    let missing = scratch.trainctl(&["get", "replicas", "tfjob/nope"]);
    assert_eq!(
        (missing.code, missing.stderr.as_str()),
        (
            Some(1),
            "error: tfjob \"nope\" not found in namespace \"default\" (see `trainctl get`)\n"
        )
    );

    scratch.write("go", "");
    assert_eq!(run.finish(SOON).code, Some(0));
    // worker-0 decides the job (TFJob's default success policy); worker-1 may exit first, or be
    // stopped as the job succeeds.
    let done = rows(&scratch.trainctl(&["get", "replicas", "pods"]));
    assert_eq!(done[0]["STATUS"], "Succeeded", "{done:?}");
    assert!(
        done.iter().all(|row| row["READY"] == "0/1"
            && ["Succeeded", "Stopped"].contains(&row["STATUS"].as_str())),
        "{done:?}"
    );
}

// events

#[test]
fn events_lists_a_finished_jobs_events_oldest_first() {
    let scratch = Scratch::new("events");
    let manifest = scratch.write("job.yaml", &tfjob("evented", 1, 0, "true"));
    let run = scratch.run(&manifest, &[]);
    assert_eq!(run.code, Some(0), "{run}");

    let events = scratch.trainctl(&["events"]);
    let listed = rows(&events);
    assert_eq!(
        headers(&events.stdout),
        ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        "{events}"
    );
    let exited = listed
        .iter()
        .find(|row| row["REASON"] == "ExitedWithCode")
        .unwrap_or_else(|| panic!("no ExitedWithCode event:\n{events}"));
    assert_eq!(
        (
            exited["TYPE"].as_str(),
            exited["OBJECT"].as_str(),
            exited["MESSAGE"].as_str()
        ),
        (
            "Normal",
            "tfjob/evented",
            "Pod: default.evented-worker-0 exited with code 0"
        )
    );
    assert_eq!(
        listed.last().map(|row| row["REASON"].as_str()),
        Some("TFJobSucceeded"),
        "the job's end comes last:\n{events}"
    );

    // The same events, however the job is named; LAST SEEN may have moved on meanwhile.
    let reasons = |run: Run| -> Vec<String> {
        rows(&run)
            .into_iter()
            .map(|row| row["REASON"].clone())
            .collect()
    };
    let all = reasons(scratch.trainctl(&["events"]));
    for args in [
        &["events", "evented"][..],
        &["events", "tfjob/evented"],
        &["events", "--for", "tfjobs/evented"],
        &["events", "-A"],
        &["events", "--types", "Normal,Warning"],
    ] {
        assert_eq!(reasons(scratch.trainctl(args)), all, "{args:?}");
    }
    let every = scratch.trainctl(&["events", "-A"]);
    assert_eq!(
        headers(&every.stdout)[..2],
        ["NAMESPACE", "LAST SEEN"],
        "{every}"
    );
    assert!(rows(&every).iter().all(|row| row["NAMESPACE"] == "default"));

    let elsewhere = scratch.trainctl(&["events", "-n", "team-a"]);
    assert_eq!(
        (
            elsewhere.code,
            elsewhere.stdout.as_str(),
            elsewhere.stderr.as_str()
        ),
        (Some(0), "", "No events found in team-a namespace.\n")
    );
    let missing = scratch.trainctl(&["events", "nope"]);
    assert_eq!(
        (
            missing.code,
            missing.stdout.as_str(),
            missing.stderr.as_str()
        ),
        (
            Some(1),
            "",
            "error: job \"nope\" not found in namespace \"default\" (see `trainctl get`)\n"
        )
    );
    let both = scratch.trainctl(&["events", "evented", "--for", "tfjob/evented"]);
    assert_eq!(both.code, Some(2), "{both}");
}

#[test]
fn events_watch_prints_each_new_event_as_it_happens() {
    let scratch = Scratch::new("events-watch");
    let watch = scratch.spawn(&["events", "-w"], "watch");
    for name in ["first", "second"] {
        let manifest = scratch.write(&format!("{name}.yaml"), &tfjob(name, 1, 0, UNTIL_GO));
        let run = start_running(&scratch, name, &manifest, &[]);
        scratch.write("go", "");
        assert_eq!(run.finish(SOON).code, Some(0));
        std::fs::remove_file(scratch.path("go")).expect("remove go");
        let end = format!("TFJob default/{name} successfully completed.");
        wait_for(
            &format!("the watch to print the end of {name}"),
            SOON,
            || watch.stdout().contains(&end).then_some(()),
        );
    }
    let printed = watch.stdout();
    let lines: Vec<&str> = printed.lines().collect();
    assert!(lines[0].starts_with("LAST SEEN   TYPE "), "{printed}");
    assert_eq!(
        printed.matches("LAST SEEN").count(),
        1,
        "one header:\n{printed}"
    );
    let reasons: Vec<&str> = lines[1..]
        .iter()
        .map(|line| line.split_whitespace().nth(2).unwrap_or_default())
        .collect();
    assert_eq!(
        reasons,
        [
            "ExitedWithCode",
            "TFJobSucceeded",
            "ExitedWithCode",
            "TFJobSucceeded"
        ],
        "{printed}"
    );
    let mut watch = watch;
    assert!(watch.is_running(), "-w runs until interrupted");
}

// top

#[test]
fn top_node_shows_which_replica_holds_each_gpu_and_the_queue() {
    let scratch = Scratch::new("top-node");
    let holder = scratch.write("holder.yaml", &tfjob("holder", 1, 1, UNTIL_GO));
    let holding = start_running(&scratch, "holder", &holder, &["-q", "--gpus", "2"]);
    let waiter = scratch.write("waiter.yaml", &tfjob("waiter", 1, 2, "true"));
    let waiting = scratch.spawn_run(&waiter, &["-q", "--gpus", "2"], "waiter");
    wait_for("job waiter to wait for the GPUs", SOON, || {
        let node = scratch.trainctl(&["top", "node", "--gpus", "2", "--cpus", "4"]);
        node.stdout.contains("waiting for 2 GPUs").then_some(())
    });

    let node = scratch.trainctl(&[
        "top", "node", "--gpus", "2", "--cpus", "4", "--memory", "8Gi",
    ]);
    assert_eq!(node.code, Some(0), "{node}");
    assert_eq!(
        node.stdout,
        "\
Resources:
  RESOURCE   CAPACITY   HELD   FREE
  cpu        4          0      4
  memory     8Gi        0      8Gi
  gpu        2          1      1
GPUs:
  GPU   HELD BY
  0     tfjob/default/holder worker-0
  1     <free>
Queue:
  #   JOB                    WAITING FOR
  1   tfjob/default/waiter   waiting for 2 GPUs, 1 free
"
    );

    scratch.write("go", "");
    assert_eq!(holding.finish(SOON).code, Some(0));
    assert_eq!(waiting.finish(SOON).code, Some(0));
    let idle = scratch.trainctl(&[
        "top", "node", "--gpus", "1", "--cpus", "2", "--memory", "1Gi",
    ]);
    assert_eq!(
        idle.stdout,
        "\
Resources:
  RESOURCE   CAPACITY   HELD   FREE
  cpu        2          0      2
  memory     1Gi        0      1Gi
  gpu        1          0      1
GPUs:
  GPU   HELD BY
  0     <free>
Queue:  <none>
"
    );
}

#[test]
fn top_node_counts_the_machine_as_the_running_server_does() {
    let server = Server::start(&["--gpus", "3", "--cpus", "6", "--memory", "12Gi"]);
    let dir = server.state_dir().to_str().expect("UTF-8 path");
    let node = harness::trainctl(&["--state-dir", dir, "top", "node"]);
    assert_eq!(node.code, Some(0), "{}", node.stderr);
    assert!(
        node.stdout.starts_with(
            "Resources:\n  RESOURCE   CAPACITY   HELD   FREE\n  cpu        6          0      6\n  \
             memory     12Gi       0      12Gi\n  gpu        3          0      3\n"
        ),
        "{}",
        node.stdout
    );
    // Flags say how to count the machine instead.
    let node = harness::trainctl(&["--state-dir", dir, "top", "node", "--gpus", "1"]);
    assert!(node.stdout.contains("\n  gpu        1 "), "{}", node.stdout);
}

#[test]
fn top_job_measures_the_running_jobs_processes() {
    let scratch = Scratch::new("top-job");
    let none = scratch.trainctl(&["top", "job"]);
    assert_eq!(
        (none.code, none.stdout.as_str(), none.stderr.as_str()),
        (Some(0), "", "No running jobs found in default namespace.\n")
    );
    // A busy replica: it spins until told to stop.
    let busy = "while [ ! -e go ]; do :; done";
    let manifest = scratch.write("job.yaml", &tfjob("busy", 2, 0, busy));
    let run = start_running(&scratch, "busy", &manifest, &[]);

    let top = scratch.trainctl(&["top", "job"]);
    assert_eq!(
        header(&top.stdout),
        "NAME         CPU(cores)   MEMORY(bytes)   GPUS"
    );
    let [job] = &rows(&top)[..] else {
        panic!("one job:\n{top}");
    };
    assert_eq!(job["NAME"], "tfjob/busy");
    let cores: f64 = job["CPU(cores)"].parse().expect("cores");
    assert!(cores > 0.05, "two spinning replicas use CPU:\n{top}");
    assert!(job["MEMORY(bytes)"].ends_with("Mi"), "{top}");
    assert_eq!(job["GPUS"], "-");

    let replicas = scratch.trainctl(&["top", "job", "busy", "--replicas", "-A"]);
    let names: Vec<(String, String)> = rows(&replicas)
        .into_iter()
        .map(|row| (row["NAMESPACE"].clone(), row["NAME"].clone()))
        .collect();
    assert_eq!(
        names,
        [
            ("default".to_owned(), "busy-worker-0".to_owned()),
            ("default".to_owned(), "busy-worker-1".to_owned())
        ]
    );

    scratch.write("go", "");
    assert_eq!(run.finish(SOON).code, Some(0));
    let done = scratch.trainctl(&["top", "job", "busy"]);
    assert_eq!(
        (done.code, done.stderr.as_str()),
        (
            Some(1),
            "error: tfjob \"busy\" in namespace \"default\" has no running replica: it is \
             Succeeded\n"
        )
    );
}

#[test]
fn top_and_events_have_no_cluster_mode_and_say_what_to_use() {
    let scratch = Scratch::new("no-cluster-mode");
    let events = scratch.trainctl(&["--kube", "events"]);
    assert_eq!(
        (events.code, events.stderr.as_str()),
        (
            Some(1),
            "error: `trainctl events` reads this machine's jobs and has no cluster mode yet; for \
             a cluster's: kubectl events -n NAMESPACE --for tfjob/NAME\n"
        )
    );
    let top = scratch.trainctl(&["--kube", "top", "job"]);
    assert_eq!(top.code, Some(1), "{top}");
    assert!(top.stderr.contains("kubectl top pod"), "{top}");
}

// version

#[test]
fn version_prints_the_clients_and_whether_a_server_runs() {
    let client = format!("Client Version: v{}\n", env!("CARGO_PKG_VERSION"));
    let state = tempfile::tempdir().expect("tempdir");
    let dir = state.path().to_str().expect("UTF-8 path");
    let alone = harness::trainctl(&["--state-dir", dir, "version"]);
    assert_eq!(
        (alone.code, alone.stdout.as_str(), alone.stderr.as_str()),
        (
            Some(0),
            format!("{client}Server: not running\n").as_str(),
            ""
        )
    );
    let only_client = harness::trainctl(&["--state-dir", dir, "version", "--client"]);
    assert_eq!(only_client.stdout, client);
    let flag = harness::trainctl(&["--version"]);
    assert_eq!(
        flag.stdout,
        format!("trainctl {}\n", env!("CARGO_PKG_VERSION"))
    );

    let server = Server::start(&[]);
    let dir = server.state_dir().to_str().expect("UTF-8 path");
    let with_server = harness::trainctl(&["--state-dir", dir, "version"]);
    assert_eq!(
        with_server.stdout,
        format!(
            "{client}Server Version: v{}\nServer Address: {}\n",
            env!("CARGO_PKG_VERSION"),
            server.url
        )
    );
    let json = harness::trainctl(&["--state-dir", dir, "version", "-o", "json"]);
    let value: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(
        value["clientVersion"]["gitVersion"],
        format!("v{}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(value["serverAddress"], server.url.as_str());
    assert_eq!(
        value["serverVersion"]["gitVersion"],
        format!("v{}", env!("CARGO_PKG_VERSION"))
    );
    let yaml = harness::trainctl(&["--state-dir", dir, "version", "-o", "yaml", "--client"]);
    assert!(
        yaml.stdout.starts_with("clientVersion:\n  major: "),
        "{}",
        yaml.stdout
    );
    assert!(!yaml.stdout.contains("serverAddress"), "{}", yaml.stdout);
}

// completion

#[test]
fn completion_scripts_for_bash_zsh_and_fish() {
    let bash = harness::trainctl(&["completion", "bash"]);
    assert_eq!(bash.code, Some(0), "{}", bash.stderr);
    assert!(bash.stdout.contains("_trainctl()"), "{}", bash.stdout);
    assert!(
        bash.stdout.contains("complete -F _trainctl"),
        "{}",
        bash.stdout
    );
    assert!(bash.stdout.contains("events"), "every command is completed");
    assert!(
        !bash.stdout.contains("__shim"),
        "internal commands are not offered"
    );
    let zsh = harness::trainctl(&["completion", "zsh"]);
    assert!(
        zsh.stdout.starts_with("#compdef trainctl\n"),
        "{}",
        zsh.stdout
    );
    let fish = harness::trainctl(&["completion", "fish"]);
    assert!(
        fish.stdout.contains("complete -c trainctl"),
        "{}",
        fish.stdout
    );
    let unknown = harness::trainctl(&["completion", "tcsh"]);
    assert_eq!(unknown.code, Some(2), "{}", unknown.stderr);
}

// help

#[test]
fn every_new_command_has_examples_in_its_help() {
    for command in [
        &["events"][..],
        &["top"],
        &["top", "node"],
        &["top", "job"],
        &["version"],
        &["completion"],
    ] {
        let help = harness::trainctl(&[command, &["--help"]].concat());
        assert_eq!(help.code, Some(0), "{command:?}: {}", help.stderr);
        assert!(
            help.stdout.contains("\nExamples:\n"),
            "{command:?}:\n{}",
            help.stdout
        );
    }
    let completion = harness::trainctl(&["completion", "--help"]);
    assert!(
        completion
            .stdout
            .contains("source <(trainctl completion bash)"),
        "{}",
        completion.stdout
    );
}
