//! 12. Bad input fails before anything runs.

use super::*;

#[test]
fn missing_command_fails_at_once_naming_the_replica() {
    let scratch = Scratch::new("no-command");
    let manifest = scratch.write(
        "job.yaml",
        r"apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: nocmd
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.16.1
            command: [no-such-program-xyz]
",
    );
    let run = scratch.run(&manifest, &["-o", "json"]);
    assert_eq!(run.code, Some(1), "{run}");
    let message = "cannot run on this machine: worker-0: command `no-such-program-xyz` not found on this machine (the container image's files of image `tensorflow/tensorflow:2.16.1` are not available locally; install it here or put it on PATH); and 1 more replica";
    assert_eq!(
        conditions(&run.json()),
        expect_conditions(&[
            ("Created", "True", "TFJobCreated", "TFJob nocmd is created."),
            ("Failed", "True", "TFJobFailed", message),
        ])
    );
    assert!(
        run.stderr
            .contains(&format!("trainctl: Failed: {message}\n")),
        "{run}"
    );
}

#[test]
fn invalid_manifest_exits_2_with_file_line_and_column() {
    let scratch = Scratch::new("invalid");
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "invalid",
            &[],
            &[replicas("Worker", 1, "Never", "touch started")],
        )
        .replace("replicas: 1", "replicas: one"),
    );
    let run = scratch.run(&manifest, &["-o", "json"]);
    assert_eq!(run.code, Some(2), "{run}");
    assert_eq!(run.stdout, "", "{run}");
    assert!(
        run.stderr.contains(&format!(
            "{manifest}:8:17: spec.tfReplicaSpecs[Worker].replicas: invalid type: string \"one\", expected i32\n"
        )),
        "{run}"
    );
    assert!(!scratch.path("started").exists());
}

#[test]
fn manifest_without_exactly_one_job_exits_2() {
    let configmap = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n";
    let job = tfjob(
        "one",
        &[],
        &[replicas("Worker", 1, "Never", "touch started")],
    );
    let cases = [
        (
            configmap.to_owned(),
            "no training job in the manifest (expected a TFJob, PyTorchJob, XGBoostJob, PaddleJob, JAXJob, MPIJob or MXJob)",
        ),
        (
            format!("{job}---\n{}", job.replace("name: one", "name: two")),
            "2 training jobs in the manifest; `trainctl run` runs one (split the file, or use `trainctl submit` with the server)",
        ),
    ];
    for (text, words) in cases {
        let scratch = Scratch::new("not-one-job");
        let manifest = scratch.write("job.yaml", &text);
        let run = scratch.run(&manifest, &["-o", "json"]);
        assert_eq!(run.code, Some(2), "{run}");
        assert_eq!(run.stdout, "", "{run}");
        assert!(
            run.stderr.contains(&format!("{manifest}: {words}\n")),
            "{run}"
        );
        assert!(!scratch.path("started").exists());
    }
}

#[test]
fn missing_configmap_fails_at_once_naming_the_replica_and_the_configmap() {
    let scratch = Scratch::new("no-configmap");
    let manifest = scratch.write(
        "job.yaml",
        r"apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: nocm
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
            command: [touch, started]
            env:
            - name: GREETING
              valueFrom: {configMapKeyRef: {name: settings, key: greeting}}
",
    );
    let run = scratch.run(&manifest, &["-o", "json"]);
    assert_eq!(run.code, Some(1), "{run}");
    let message = "cannot run on this machine: worker-0: replica nocm-worker-0: env GREETING: ConfigMap `settings` was not submitted with the job; give it in the same file or submit it to `trainctl server` first, or mark the reference `optional: true`";
    assert_eq!(
        conditions(&run.json()),
        expect_conditions(&[
            ("Created", "True", "TFJobCreated", "TFJob nocm is created."),
            ("Failed", "True", "TFJobFailed", message),
        ])
    );
    assert!(!scratch.path("started").exists());
}
