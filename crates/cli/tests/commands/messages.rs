//! Messages say each thing once: an error's cause is not repeated after a message that already
//! gives it.

use trainctl_cli_harness::trainctl;

#[test]
fn an_error_says_its_cause_once() {
    let state = tempfile::tempdir().expect("tempdir");
    std::fs::write(state.path().join("server.json"), "{\n").expect("write");
    let manifest = state.path().join("job.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: once}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      template:\n        spec:\n          containers: [{name: tensorflow, image: tf}]\n",
    )
    .expect("write");
    let state_dir = state.path().display().to_string();
    let run = trainctl(&[
        "--state-dir",
        &state_dir,
        "submit",
        "-f",
        &manifest.display().to_string(),
    ]);
    assert_eq!(run.code, Some(1));
    let errors: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.starts_with("error: "))
        .collect();
    assert_eq!(
        errors,
        [format!(
            "error: {state_dir}/server.json is not a server address file (EOF while parsing an \
             object at line 2 column 0); expected {{\"url\": \"http://127.0.0.1:PORT\", \"pid\": \
             PID}}"
        )]
    );
}

/// What a manifest holds that would act on a terminal (an escape sequence that clears the
/// screen, a bell, a right-to-left override) is shown escaped by `describe` and `get`, never
/// sent to the terminal as it is.
#[test]
fn describe_and_get_show_terminal_controls_escaped() {
    let scratch = trainctl_cli_harness::scratch::Scratch::new("terminal-controls");
    scratch.write(
        "job.yaml",
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: controls}
spec:
  tfReplicaSpecs:
    Worker:
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: tensorflow
            image: \"img\\u001b[2J\\u0007\\u202egpj.exe\"
            command: [sh, -c, 'exit 3']
",
    );
    let run = scratch.trainctl(&["run", "-f", "job.yaml"]);
    assert_eq!(run.code, Some(1), "{run}");
    let described = scratch.trainctl(&["describe", "controls"]);
    assert_eq!(described.code, Some(0), "{described}");
    assert!(
        described
            .stdout
            .contains("Image:           img\\u{1b}[2J\\u{7}\\u{202e}gpj.exe\n"),
        "{}",
        described.stdout
    );
    for output in [
        &described.stdout,
        &scratch.trainctl(&["get", "-o", "wide"]).stdout,
    ] {
        assert!(
            !output.contains(['\u{1b}', '\u{7}', '\u{202e}']),
            "{output}"
        );
    }
}
