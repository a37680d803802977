//! The way out to TensorBoard: `describe` says where a job's event files are looked for, and
//! `trainctl tensorboard` gives TensorBoard one run per job, or says why it cannot; the progress
//! read from those files counts Keras' epochs as users do, from 1. TensorBoard
//! itself is started by the dashboard's tests (`crates/cli/tests/dashboard/tensorboard.rs`),
//! where the examples' environment is.

use std::path::{Path, PathBuf};

use trainctl_cli_harness::manifest::{Replicas, tfjob, tfjob_in};
use trainctl_cli_harness::reading::table;
use trainctl_cli_harness::{Run, Scratch};
use trainctl_events::EventWriter;

/// Runs a job that succeeds at once, in `namespace` when given; its uid.
fn finished_job(scratch: &Scratch, namespace: Option<&str>, name: &str) -> String {
    let replicas = [Replicas::workers(1, "true")];
    let manifest = match namespace {
        Some(namespace) => tfjob_in(namespace, name, "", &replicas),
        None => tfjob(name, "", &replicas),
    };
    let path = scratch.write(&format!("{name}.yaml"), &manifest);
    let run = scratch.run(&path, &[]);
    assert_eq!(run.code, Some(0), "{run}");
    let namespace = namespace.unwrap_or("default");
    let got = scratch.trainctl(&["get", "tfjob", name, "-n", namespace, "-o", "json"]);
    assert_eq!(got.code, Some(0), "{got}");
    got.json()["metadata"]["uid"]
        .as_str()
        .expect("a uid")
        .to_owned()
}

/// The job's own directory for event files.
fn own_dir(scratch: &Scratch, uid: &str) -> PathBuf {
    scratch.state_dir().join("tensorboard").join(uid)
}

/// Writes an `epoch_loss` of three epochs into `dir/run`.
fn write_curve(dir: &Path, run: &str) {
    write_epochs(dir, run, 3);
}

/// Writes an `epoch_loss` of `epochs` epochs into `dir/run`, as Keras does: epoch N at step N-1.
fn write_epochs(dir: &Path, run: &str, epochs: u8) {
    let mut writer = EventWriter::create(&dir.join(run)).expect("an event file");
    for step in 0..epochs {
        writer
            .scalar("epoch_loss", step.into(), 1e9 + f64::from(step), 0.5)
            .expect("write");
    }
    writer.flush().expect("flush");
}

/// The value of `label`'s line (`TensorBoard:  DIR`) and of the lines that continue it.
fn field_lines<'a>(text: &'a str, label: &str) -> Vec<&'a str> {
    let mut lines = text.lines().skip_while(|line| !line.starts_with(label));
    let Some(first) = lines.next() else {
        panic!("no `{label}` line in:\n{text}");
    };
    let width = first.len() - first[label.len()..].trim_start().len();
    std::iter::once(first[width..].trim_end())
        .chain(
            lines
                .take_while(|line| line.len() > width && line[..width].trim().is_empty())
                .map(|line| line[width..].trim_end()),
        )
        .collect()
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn describe_shows_the_directories_where_event_files_are_looked_for() {
    let scratch = Scratch::new("describe-tensorboard");
    let logs = scratch.path("logs");
    std::fs::create_dir_all(logs.join("curvy")).expect("the claim's directory of the job");
    let manifest = tfjob(
        "curvy",
        "",
        &[Replicas::workers(1, "true").with(
            &["{name: logs, persistentVolumeClaim: {claimName: logs}}"],
            &["{name: logs, mountPath: /logs}"],
        )],
    );
    let path = scratch.write("curvy.yaml", &manifest);
    let binding = format!("logs={}", display(&logs));
    let run = scratch.run(&path, &["--volume", &binding]);
    assert_eq!(run.code, Some(0), "{run}");
    let uid = scratch.trainctl(&["get", "curvy", "-o", "json"]).json()["metadata"]["uid"]
        .as_str()
        .expect("a uid")
        .to_owned();

    let described = scratch.trainctl(&["describe", "curvy"]);
    assert_eq!(described.code, Some(0), "{described}");
    assert_eq!(
        field_lines(&described.stdout, "TensorBoard:"),
        [
            display(&own_dir(&scratch, &uid)),
            display(&logs.join("curvy"))
        ],
        "{described}"
    );
}

#[test]
fn progress_counts_keras_epochs_from_one() {
    let scratch = Scratch::new("progress-epochs");
    let uid = finished_job(&scratch, None, "fifteen");
    // The last of 15 epochs is written at step 14.
    write_epochs(&own_dir(&scratch, &uid), "train", 15);

    let wide = scratch.trainctl(&["get", "fifteen", "-o", "wide"]);
    assert_eq!(wide.code, Some(0), "{wide}");
    let rows = table(&wide.stdout);
    assert_eq!(rows[0]["PROGRESS"], "epoch 15 epoch_loss=0.5000", "{wide}");
    let described = scratch.trainctl(&["describe", "fifteen"]);
    assert_eq!(described.code, Some(0), "{described}");
    let progress = field_lines(&described.stdout, "Progress:");
    assert!(
        progress[0].starts_with("epoch 15, epoch_loss 0.5000 (run train, written "),
        "{described}"
    );
}

#[test]
fn tensorboard_gives_each_job_a_run_of_its_own() {
    let scratch = Scratch::new("tensorboard-runs");
    let fast = finished_job(&scratch, None, "lr-01");
    let slow = finished_job(&scratch, None, "lr-001");
    write_curve(&own_dir(&scratch, &fast), "train");
    write_curve(&own_dir(&scratch, &slow), "train");

    // A job named twice is one run.
    let printed = scratch.trainctl(&["tensorboard", "lr-01", "lr-001", "lr-01", "--print"]);
    assert_eq!(printed.code, Some(0), "{printed}");
    assert_eq!(
        printed.stdout,
        format!(
            "tensorboard --logdir_spec lr-01:{},lr-001:{} --host 127.0.0.1 --port 6006\n",
            display(&own_dir(&scratch, &fast)),
            display(&own_dir(&scratch, &slow))
        )
    );
}

#[test]
fn port_zero_is_a_free_port_found_before_tensorboard_starts() {
    let scratch = Scratch::new("tensorboard-port");
    let uid = finished_job(&scratch, None, "curvy");
    write_curve(&own_dir(&scratch, &uid), "train");
    let printed = scratch.trainctl(&["tensorboard", "curvy", "--port", "0", "--print"]);
    assert_eq!(printed.code, Some(0), "{printed}");
    let prefix = format!(
        "tensorboard --logdir_spec curvy:{} --host 127.0.0.1 --port ",
        display(&own_dir(&scratch, &uid))
    );
    let port = printed
        .stdout
        .strip_prefix(&prefix)
        .and_then(|rest| rest.strip_suffix('\n'))
        .unwrap_or_else(|| panic!("{printed}"));
    assert!(port.parse::<u16>().is_ok_and(|port| port != 0), "{printed}");
}

#[test]
fn jobs_of_one_name_in_two_namespaces_are_told_apart() {
    let scratch = Scratch::new("tensorboard-namespaces");
    let ours = finished_job(&scratch, Some("team-a"), "mnist");
    let theirs = finished_job(&scratch, Some("team-b"), "mnist");
    write_curve(&own_dir(&scratch, &ours), "");
    write_curve(&own_dir(&scratch, &theirs), "");
    let printed = scratch.trainctl(&[
        "tensorboard",
        "mnist",
        "-n",
        "team-a",
        "--port",
        "7000",
        "--print",
    ]);
    assert_eq!(printed.code, Some(0), "{printed}");
    assert_eq!(
        printed.stdout,
        format!(
            "tensorboard --logdir_spec mnist:{} --host 127.0.0.1 --port 7000\n",
            display(&own_dir(&scratch, &ours))
        )
    );
    let replicas = [Replicas::workers(1, "true")];
    let both = scratch.write(
        "both.yaml",
        &format!(
            "{}---\n{}",
            tfjob_in("team-a", "mnist", "", &replicas),
            tfjob_in("team-b", "mnist", "", &replicas)
        ),
    );
    let both = scratch.trainctl(&["tensorboard", "-f", &both, "--print"]);
    assert_eq!(both.code, Some(0), "{both}");
    assert_eq!(
        both.stdout,
        format!(
            "tensorboard --logdir_spec team-a/mnist:{},team-b/mnist:{} --host 127.0.0.1 --port 6006\n",
            display(&own_dir(&scratch, &ours)),
            display(&own_dir(&scratch, &theirs))
        )
    );
}

#[test]
fn a_job_without_event_files_is_said_with_where_they_are_looked_for() {
    let scratch = Scratch::new("tensorboard-none");
    let uid = finished_job(&scratch, None, "silent");
    let refused = scratch.trainctl(&["tensorboard", "silent"]);
    assert_eq!(refused.code, Some(1), "{refused}");
    assert_eq!(
        refused.stderr,
        format!(
            "error: tfjob \"silent\" has written no TensorBoard event files (yet): trainctl looks \
             for them in {}; its replicas are given the first in TRAINCTL_TENSORBOARD_DIR \
             (tf.keras.callbacks.TensorBoard(log_dir=os.environ[\"TRAINCTL_TENSORBOARD_DIR\"]))\n",
            display(&own_dir(&scratch, &uid))
        )
    );
}

#[test]
fn an_unknown_job_is_not_found() {
    let scratch = Scratch::new("tensorboard-unknown");
    let refused = scratch.trainctl(&["tensorboard", "nope", "-n", "ml"]);
    assert_eq!(refused.code, Some(1), "{refused}");
    assert_eq!(
        refused.stderr,
        "error: job \"nope\" not found in namespace \"ml\" (see `trainctl get`)\n"
    );
}

#[test]
fn without_tensorboard_on_path_it_says_how_to_get_it() {
    let scratch = Scratch::new("tensorboard-missing");
    let uid = finished_job(&scratch, None, "curvy");
    write_curve(&own_dir(&scratch, &uid), "train");
    let empty = scratch.path("bin");
    std::fs::create_dir_all(&empty).expect("an empty bin directory");
    let mut command = std::process::Command::new(trainctl_cli_harness::binary());
    command.env("PATH", &empty);
    let refused: Run =
        trainctl_cli_harness::run_to_end(scratch.command_with(command, &["tensorboard", "curvy"]));
    assert_eq!(refused.code, Some(1), "{refused}");
    assert_eq!(
        refused.stderr,
        "error: `tensorboard` was not found on PATH: install it with `pip install tensorboard` \
         (in a virtualenv, then activate it), or, in trainctl's repository, use the examples' \
         environment: PATH=\"$(scripts/python-env):$PATH\" trainctl tensorboard ...\n"
    );
}

#[test]
fn a_host_that_is_not_loopback_is_refused() {
    let scratch = Scratch::new("tensorboard-host");
    let refused = scratch.trainctl(&["tensorboard", "any", "--host", "0.0.0.0"]);
    assert_eq!(refused.code, Some(1), "{refused}");
    assert!(
        refused
            .stderr
            .starts_with("error: refusing to serve TensorBoard on 0.0.0.0: not a loopback address"),
        "{refused}"
    );
}

#[test]
fn it_has_no_cluster_mode() {
    let scratch = Scratch::new("tensorboard-kube");
    let refused = scratch.trainctl(&[
        "--kube",
        "--kubeconfig",
        &display(&scratch.path("nowhere")),
        "tensorboard",
        "mnist",
    ]);
    assert_eq!(refused.code, Some(1), "{refused}");
    assert_eq!(
        refused.stderr,
        "error: `trainctl tensorboard` reads this machine's event files and has no cluster mode; \
         a cluster's are on its pods' volumes: run TensorBoard beside them\n"
    );
}

#[test]
fn help_says_where_tensorboard_comes_from_with_examples() {
    let help = trainctl_cli_harness::trainctl(&["tensorboard", "--help"]);
    assert_eq!(help.code, Some(0), "{help}");
    for expected in [
        "Start TensorBoard on the event files of one job or several",
        "--port <PORT>",
        "install\nit with `pip install tensorboard`",
        "\nExamples:\n",
        "trainctl tensorboard lr-01 lr-001                   two jobs, two runs, compared",
    ] {
        assert!(
            help.stdout.contains(expected),
            "{expected}:\n{}",
            help.stdout
        );
    }
}
