//! 11. The env a replica sees (docs/semantics.md §4, loopback addresses: §4.1).

use super::*;

#[test]
fn tf_config_matches_render_with_loopback_ports() {
    let scratch = Scratch::new("tf-config");
    let others = "echo \"$TF_CONFIG\"\necho up >> ready";
    let chief = "echo \"$TF_CONFIG\"\nuntil [ \"$(grep -c up ready 2>/dev/null)\" = 4 ]; do sleep 0.01; done";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "tfc",
            &[],
            &[
                replicas("Chief", 1, "Never", chief),
                replicas("Evaluator", 1, "Never", others),
                replicas("PS", 1, "Never", others),
                replicas("Worker", 2, "Never", others),
            ],
        ),
    );
    let run = scratch.run(&manifest, &["-q"]);
    assert_eq!(run.code, Some(0), "{run}");
    let rows = summary(&run.stderr);
    let slots = [
        ("chief", 0),
        ("evaluator", 0),
        ("ps", 0),
        ("worker", 0),
        ("worker", 1),
    ];
    let ports: Vec<u16> = slots
        .iter()
        .map(|(t, i)| rows[&format!("{t}-{i}")].port.expect("a port"))
        .collect();
    let mut distinct = ports.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), ports.len(), "ports {ports:?}");
    for (replica_type, index) in &slots {
        let slot = format!("{replica_type}-{index}");
        let local = replica_log(&scratch, "tfc", &slot);
        // Byte for byte the operator's TF_CONFIG, with loopback addresses for the services.
        let mut expected =
            rendered_env(&scratch, &manifest, &format!("tfc-{slot}"))["TF_CONFIG"].clone();
        for ((t, i), port) in slots.iter().zip(&ports) {
            expected = expected.replace(
                &format!("\"tfc-{t}-{i}.default.svc:2222\""),
                &format!("\"127.0.0.1:{port}\""),
            );
        }
        assert_eq!(local, format!("{expected}\n"), "{slot}");
        let config: Value = serde_json::from_str(&local).expect("TF_CONFIG is JSON");
        assert_eq!(
            config["task"],
            serde_json::json!({"type": replica_type, "index": index}),
            "{slot}"
        );
        assert_eq!(config["environment"], "cloud");
        assert_eq!(
            config["cluster"]["worker"],
            serde_json::json!([
                format!("127.0.0.1:{}", ports[3]),
                format!("127.0.0.1:{}", ports[4])
            ]),
        );
        assert_eq!(
            config["cluster"]
                .as_object()
                .expect("cluster")
                .keys()
                .collect::<Vec<_>>(),
            ["chief", "evaluator", "ps", "worker"],
        );
    }
}

#[test]
fn pytorch_env_matches_render_with_loopback_ports() {
    let scratch = Scratch::new("pytorch-env");
    let manifest = scratch.write(
        "job.yaml",
        r#"apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: pt
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.3.0
            command:
            - sh
            - -c
            - |
              env
              until [ "$(grep -c up ready 2>/dev/null)" = 2 ]; do sleep 0.01; done
    Worker:
      replicas: 2
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.3.0
            command: [sh, -c, "env; echo up >> ready"]
"#,
    );
    let run = scratch.run(&manifest, &["-q"]);
    assert_eq!(run.code, Some(0), "{run}");
    let master_port = summary(&run.stderr)["master-0"].port.expect("a port");
    let injected = |name: &str| {
        name == "PYTHONUNBUFFERED"
            || name == "WORLD_SIZE"
            || name == "RANK"
            || name.starts_with("MASTER_")
            || name.starts_with("PET_")
    };
    for (slot, rank) in [("master-0", "0"), ("worker-0", "1"), ("worker-1", "2")] {
        let seen: BTreeMap<String, String> = env_lines(&replica_log(&scratch, "pt", slot))
            .into_iter()
            .filter(|(name, _)| injected(name))
            .collect();
        let mut expected = rendered_env(&scratch, &manifest, &format!("pt-{slot}"));
        for (name, value) in &mut expected {
            match name.as_str() {
                "MASTER_ADDR" | "PET_MASTER_ADDR" => *value = "127.0.0.1".to_owned(),
                "MASTER_PORT" | "PET_MASTER_PORT" => *value = master_port.to_string(),
                _ => {}
            }
        }
        assert_eq!(seen, expected, "{slot}");
        // The set of docs/semantics.md §4.3 (nprocPerNode defaults to `auto`, so
        // PET_NPROC_PER_NODE is set).
        assert_eq!(
            seen.keys().map(String::as_str).collect::<Vec<_>>(),
            [
                "MASTER_ADDR",
                "MASTER_PORT",
                "PET_MASTER_ADDR",
                "PET_MASTER_PORT",
                "PET_NNODES",
                "PET_NODE_RANK",
                "PET_NPROC_PER_NODE",
                "PYTHONUNBUFFERED",
                "RANK",
                "WORLD_SIZE",
            ],
            "{slot}"
        );
        let value = |name: &str| seen[name].as_str();
        assert_eq!(
            [
                value("WORLD_SIZE"),
                value("RANK"),
                value("PET_NODE_RANK"),
                value("PET_NNODES"),
                value("PYTHONUNBUFFERED"),
            ],
            ["3", rank, rank, "3", "1"],
            "{slot}"
        );
    }
}

#[test]
fn env_value_from_configmaps_and_expansion_resolve_locally() {
    let scratch = Scratch::new("value-from");
    let manifest = scratch.write(
        "job.yaml",
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: ml
data:
  greeting: hello
---
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: envjob
  namespace: ml
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
            command:
            - sh
            - -c
            - |
              printf '%s\n' "$@"
              echo "POD_NAME=$POD_NAME"
              echo "POD_NAMESPACE=$POD_NAMESPACE"
              echo "POD_IP=$POD_IP"
              echo "GREETING=$GREETING"
              echo "ADDRESS=$ADDRESS"
              echo "TF_CONFIG=${TF_CONFIG-unset}"
            - sh
            args: ["$(GREETING) from $(POD_NAME)", "$$(POD_NAME)", "$(NOT_DEFINED)"]
            env:
            - name: POD_NAME
              valueFrom: {fieldRef: {fieldPath: metadata.name}}
            - name: POD_NAMESPACE
              valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
            - name: POD_IP
              valueFrom: {fieldRef: {fieldPath: status.podIP}}
            - name: GREETING
              valueFrom: {configMapKeyRef: {name: settings, key: greeting}}
            - name: ADDRESS
              value: "$(POD_IP):$(NOT_DEFINED)"
"#,
    );
    let run = scratch.run(&manifest, &["-q"]);
    assert_eq!(run.code, Some(0), "{run}");
    let logs = scratch.trainctl(&["logs", "-n", "ml", "envjob", "--replica", "worker-0"]);
    assert_eq!(logs.code, Some(0), "{logs}");
    assert_eq!(
        logs.stdout,
        "hello from envjob-worker-0
$(POD_NAME)
$(NOT_DEFINED)
POD_NAME=envjob-worker-0
POD_NAMESPACE=ml
POD_IP=127.0.0.1
GREETING=hello
ADDRESS=127.0.0.1:$(NOT_DEFINED)
TF_CONFIG=unset
"
    );
}

#[test]
fn replica_runs_with_trainctls_env_and_path_under_the_pods_env_in_its_working_dir() {
    use std::os::unix::fs::PermissionsExt as _;
    let scratch = Scratch::new("inherited-env");
    // A program only on the PATH trainctl has, as with an activated virtualenv.
    std::fs::create_dir_all(scratch.path("venv/bin")).expect("venv dir");
    std::fs::create_dir_all(scratch.path("work")).expect("work dir");
    let tool = scratch.write(
        "venv/bin/train-tool",
        "#!/bin/sh\necho \"FROM_TRAINCTL=$FROM_TRAINCTL\"\necho \"OVERRIDDEN=$OVERRIDDEN\"\npwd\n",
    );
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let work = scratch.path("work").display().to_string();
    let manifest = scratch.write(
        "job.yaml",
        &format!(
            r"apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: inherit
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
            command: [train-tool]
            workingDir: {work}
            env:
            - name: OVERRIDDEN
              value: from-the-pod
"
        ),
    );
    let path = format!(
        "{}:{}",
        scratch.path("venv/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = scratch.run_with_env(
        &manifest,
        &["-q"],
        &[
            ("PATH", &path),
            ("FROM_TRAINCTL", "outer"),
            ("OVERRIDDEN", "outer"),
        ],
    );
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(
        replica_log(&scratch, "inherit", "worker-0"),
        format!("FROM_TRAINCTL=outer\nOVERRIDDEN=from-the-pod\n{work}\n")
    );
}

/// Each replica gets `TRAINCTL_TENSORBOARD_DIR`, the job's own directory for its event files
/// (`<state dir>/tensorboard/<uid>`), made before it starts and kept with the job; a value the
/// manifest sets is the replica's.
#[test]
fn replicas_get_the_jobs_tensorboard_directory_unless_the_manifest_sets_one() {
    let scratch = Scratch::new("tensorboard-dir");
    let script = "echo \"$TRAINCTL_TENSORBOARD_DIR\"; test -d \"$TRAINCTL_TENSORBOARD_DIR\" && \
                  echo made; echo step > \"$TRAINCTL_TENSORBOARD_DIR/$$\"";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob("curves", &[], &[replicas("Worker", 1, "Never", script)]),
    );
    let run = scratch.run(&manifest, &["-q", "-o", "json"]);
    assert_eq!(run.code, Some(0), "{run}");
    let uid = run.json()["metadata"]["uid"]
        .as_str()
        .expect("the job's uid")
        .to_owned();
    let dir = scratch.state_dir().join("tensorboard").join(&uid);
    assert_eq!(
        replica_log(&scratch, "curves", "worker-0"),
        format!("{}\nmade\n", dir.display())
    );
    let written: Vec<String> = std::fs::read_dir(&dir)
        .expect("kept after the run")
        .map(|entry| std::fs::read_to_string(entry.expect("an entry").path()).expect("a file"))
        .collect();
    assert_eq!(written, ["step\n"], "what the replica wrote there is kept");

    let own = scratch.path("own");
    let manifest = scratch.write(
        "own.yaml",
        &format!(
            "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: own-curves
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
            command: [sh, -c, 'echo \"$TRAINCTL_TENSORBOARD_DIR\"']
            env:
            - name: TRAINCTL_TENSORBOARD_DIR
              value: {}
",
            own.display()
        ),
    );
    let run = scratch.run(&manifest, &["-q"]);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(
        replica_log(&scratch, "own-curves", "worker-0"),
        format!("{}\n", own.display())
    );
}
