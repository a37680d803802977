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
