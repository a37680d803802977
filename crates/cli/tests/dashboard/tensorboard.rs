//! `trainctl tensorboard` starts the real TensorBoard (from the examples' environment) on two
//! jobs, each a run of its own, and nothing of it outlives the command.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use trainctl_cli_harness::manifest::{Replicas, tfjob};
use trainctl_cli_harness::{Running, Scratch, signal, wait_for};
use trainctl_events::EventWriter;

use super::examples_path;

/// How long TensorBoard has to start and read the event files (it imports TensorFlow).
const PATIENCE: Duration = Duration::from_secs(90);

/// Runs a job that succeeds at once and writes its `epoch_loss` into its directory's `train`.
fn job_with_curve(scratch: &Scratch, name: &str, loss: f32) {
    let path = scratch.write(
        &format!("{name}.yaml"),
        &tfjob(name, "", &[Replicas::workers(1, "true")]),
    );
    let run = scratch.run(&path, &[]);
    assert_eq!(run.code, Some(0), "{run}");
    let got = scratch.trainctl(&["get", name, "-o", "json"]);
    let uid = got.json()["metadata"]["uid"]
        .as_str()
        .expect("a uid")
        .to_owned();
    let dir = scratch
        .state_dir()
        .join("tensorboard")
        .join(uid)
        .join("train");
    let mut writer = EventWriter::create(&dir).expect("an event file");
    for epoch in 0..3_u8 {
        writer
            .scalar("epoch_loss", epoch.into(), 1e9 + f64::from(epoch), loss)
            .expect("write");
    }
    writer.flush().expect("flush");
}

/// `GET http://127.0.0.1:PORT/PATH`, as JSON; `None` until TensorBoard answers.
fn get(port: &str, path: &str) -> Option<Value> {
    let mut response = ureq::get(&format!("http://127.0.0.1:{port}{path}"))
        .call()
        .ok()?;
    serde_json::from_str(&response.body_mut().read_to_string().ok()?).ok()
}

#[test]
#[ignore = "needs TensorBoard (the examples' environment): run through ./scripts/test"]
fn tensorboard_serves_each_job_as_a_run_and_stops_with_the_command() {
    let scratch = Scratch::of_target("dashboard", "tensorboard");
    job_with_curve(&scratch, "lr-01", 0.25);
    job_with_curve(&scratch, "lr-001", 0.75);

    let path = std::env::join_paths(
        std::iter::once(examples_path()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .expect("a PATH");
    let mut command = Command::new(trainctl_cli_harness::binary());
    command.env("PATH", path);
    let command = scratch.command_with(command, &["tensorboard", "lr-01", "lr-001", "--port", "0"]);
    let mut tensorboard = Running::start(
        command,
        scratch.path("tensorboard.out"),
        scratch.path("tensorboard.err"),
    );
    // trainctl says where TensorBoard serves, on the free port it found.
    let said = wait_for("TensorBoard's address", PATIENCE, || {
        assert!(tensorboard.is_running(), "{}", tensorboard.stderr());
        Some(tensorboard.stdout()).filter(|said| said.ends_with('\n'))
    });
    let port = said
        .strip_prefix("TensorBoard: http://127.0.0.1:")
        .and_then(|rest| rest.strip_suffix("/ (Ctrl-C stops it)\n"))
        .unwrap_or_else(|| panic!("an address: {said:?}"))
        .to_owned();
    assert!(port.parse::<u16>().is_ok_and(|port| port != 0), "{said}");
    let mut runs: Vec<String> = wait_for("both runs", PATIENCE, || {
        serde_json::from_value(get(&port, "/data/runs")?)
            .ok()
            .filter(|runs: &Vec<String>| runs.len() == 2)
    });
    runs.sort();
    assert_eq!(runs, ["lr-001/train", "lr-01/train"]);
    let tags = get(&port, "/data/plugin/scalars/tags").expect("the scalars' tags");
    for run in ["lr-01/train", "lr-001/train"] {
        assert!(tags[run].get("epoch_loss").is_some(), "{run} in {tags}");
    }
    let stderr = tensorboard.stderr();
    for line in [
        format!("run lr-01: {}/tensorboard/", scratch.state_dir().display()),
        format!("run lr-001: {}/tensorboard/", scratch.state_dir().display()),
    ] {
        assert!(stderr.contains(&line), "{line} in {stderr}");
    }

    // trainctl became TensorBoard: stopping it leaves nothing behind.
    signal(tensorboard.pid(), "TERM");
    let stopped = tensorboard.finish(Duration::from_secs(30));
    assert_eq!(stopped.code, Some(0), "{stopped}");
    assert!(
        stopped
            .stderr
            .contains("TensorBoard caught SIGTERM; exiting..."),
        "{stopped}"
    );
    assert_eq!(scratch.processes().len(), 0, "{:?}", scratch.processes());
}
