//! `trainctl render`: a v1 List of the objects the operator creates, for every fixture.

use serde_json::{Value, json};
use trainctl_cli_harness as harness;
use trainctl_cli_harness::{fixture_manifests, trainctl};

fn render_json(args: &[&str]) -> Value {
    let mut all = vec!["render"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    let run = trainctl(&all);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    serde_json::from_str(&run.stdout).expect("render prints JSON")
}

fn env_of(pod: &Value, name: &str) -> Option<String> {
    pod["spec"]["containers"][0]["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str().map(str::to_owned))
}

fn items_of_kind<'a>(list: &'a Value, kind: &str) -> Vec<&'a Value> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|i| i["kind"] == kind)
        .collect()
}

#[test]
fn render_works_on_every_valid_fixture() {
    for path in fixture_manifests() {
        let shown = path.display().to_string();
        if shown.ends_with("batch-job-tensorflow.yaml") {
            continue;
        }
        for format in ["yaml", "json"] {
            let run = trainctl(&["render", "-f", &shown, "-o", format]);
            assert_eq!(run.code, Some(0), "{shown} -o {format}\n{}", run.stderr);
            assert!(
                run.stdout.contains("kind: List") || run.stdout.contains("\"kind\": \"List\""),
                "{shown}"
            );
        }
        let list = render_json(&["-f", &shown]);
        assert_eq!(list["apiVersion"], "v1");
        assert!(
            !items_of_kind(&list, "Pod").is_empty(),
            "{shown} renders no pod"
        );
    }
}

#[test]
fn render_refuses_an_invalid_manifest_with_exit_2() {
    let path = harness::invalid_corpus().join("replicas-negative.yaml");
    let shown = path.display().to_string();
    let run = trainctl(&["render", "-f", &shown]);
    assert_eq!(run.code, Some(2));
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains(&format!(
        "{shown}:8:17: spec.tfReplicaSpecs[Worker].replicas: is -1"
    )));
}

#[test]
fn namespace_flag_fills_in_jobs_without_one_and_reaches_tf_config() {
    let example = harness::tests_dir().join("../../../examples/tfjob-multi-worker.yaml");
    let shown = example.display().to_string();
    let list = render_json(&["-f", &shown, "-n", "team-a"]);
    let pods = items_of_kind(&list, "Pod");
    assert_eq!(pods.len(), 3);
    for pod in &pods {
        assert_eq!(pod["metadata"]["namespace"], "team-a");
    }
    let tf_config = env_of(pods[0], "TF_CONFIG").expect("TF_CONFIG");
    assert_eq!(
        tf_config,
        r#"{"cluster":{"chief":["mnist-mwms-chief-0.team-a.svc:2222"],"worker":["mnist-mwms-worker-0.team-a.svc:2222","mnist-mwms-worker-1.team-a.svc:2222"]},"task":{"type":"chief","index":0},"environment":"cloud"}"#
    );
}

#[test]
fn namespace_flag_conflicting_with_the_manifest_is_an_error() {
    let path = harness::fixtures().join("seeds/config-tfjob.yaml");
    let shown = path.display().to_string();
    let run = trainctl(&["render", "-f", &shown, "-n", "other"]);
    assert_eq!(run.code, Some(2));
    assert_eq!(
        run.stderr,
        format!(
            "{shown}: the job's namespace `kubeflow-user-example-com` does not match --namespace `other`\n"
        )
    );
}

#[test]
fn cluster_domain_flag_and_env_qualify_tf_config_addresses() {
    let example = harness::tests_dir().join("../../../examples/tfjob-multi-worker.yaml");
    let shown = example.display().to_string();
    let list = render_json(&["-f", &shown, "--cluster-domain", "cluster.local"]);
    let tf_config = env_of(items_of_kind(&list, "Pod")[1], "TF_CONFIG").expect("TF_CONFIG");
    assert!(
        tf_config.contains(r#""mnist-mwms-worker-0.default.svc.cluster.local:2222""#),
        "{tf_config}"
    );

    let output = std::process::Command::new(trainctl_cli_harness::binary())
        .args(["render", "-f", &shown, "-o", "json"])
        .env("CUSTOM_CLUSTER_DOMAIN", "corp.example")
        .output()
        .expect("runs");
    let list: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let tf_config = env_of(items_of_kind(&list, "Pod")[1], "TF_CONFIG").expect("TF_CONFIG");
    assert!(
        tf_config.contains(r#""mnist-mwms-worker-0.default.svc.corp.example:2222""#),
        "{tf_config}"
    );
}

#[test]
fn gang_scheduler_adds_its_objects_first_and_schedules_pods_with_them() {
    let example = harness::tests_dir().join("../../../examples/tfjob-multi-worker.yaml");
    let shown = example.display().to_string();
    let list = render_json(&["-f", &shown, "--gang-scheduler", "volcano"]);
    let items = list["items"].as_array().expect("items");
    assert_eq!(items[0]["kind"], "PodGroup");
    assert_eq!(items[0]["apiVersion"], "scheduling.volcano.sh/v1beta1");
    assert_eq!(items[0]["metadata"]["name"], "mnist-mwms");
    assert_eq!(items[0]["spec"]["minMember"], 3);
    for pod in items_of_kind(&list, "Pod") {
        assert_eq!(pod["spec"]["schedulerName"], "volcano");
    }

    let list = render_json(&[
        "-f",
        &shown,
        "--gang-scheduler",
        "scheduler-plugins-scheduler",
    ]);
    let items = list["items"].as_array().expect("items");
    assert_eq!(items[0]["apiVersion"], "scheduling.x-k8s.io/v1alpha1");

    // Kubernetes' own: the Workload, then the PodGroup made from it, then pods that name it.
    let list = render_json(&["-f", &shown, "--gang-scheduler", "kubernetes"]);
    let items = list["items"].as_array().expect("items");
    assert_eq!(
        (&items[0]["apiVersion"], &items[0]["kind"]),
        (&json!("scheduling.k8s.io/v1alpha2"), &json!("Workload"))
    );
    assert_eq!(
        items[0]["spec"]["podGroupTemplates"][0]["schedulingPolicy"],
        json!({"gang": {"minCount": 3}})
    );
    assert_eq!(
        (&items[1]["apiVersion"], &items[1]["kind"]),
        (&json!("scheduling.k8s.io/v1alpha2"), &json!("PodGroup"))
    );
    for pod in items_of_kind(&list, "Pod") {
        assert_eq!(
            pod["spec"]["schedulingGroup"],
            json!({"podGroupName": "mnist-mwms"})
        );
        assert_eq!(pod["spec"].get("schedulerName"), None);
    }
}

#[test]
fn an_autoscaled_elastic_job_renders_its_hpa_before_its_services_and_pods() {
    let imagenet = harness::fixtures().join("upstream/pytorch-elastic-imagenet-imagenet.yaml");
    let list = render_json(&["-f", &imagenet.display().to_string(), "-n", "ml"]);
    let items = list["items"].as_array().expect("items");
    assert_eq!(
        (&items[0]["apiVersion"], &items[0]["kind"]),
        (&json!("autoscaling/v2"), &json!("HorizontalPodAutoscaler"))
    );
    assert_eq!(items[0]["metadata"]["namespace"], "ml");
    assert_eq!(
        items[0]["spec"]["scaleTargetRef"],
        json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
               "name": "elastic-example-imagenet"})
    );
    assert_eq!(
        (
            &items[0]["spec"]["minReplicas"],
            &items[0]["spec"]["maxReplicas"]
        ),
        (&json!(1), &json!(3))
    );
    assert_eq!(items_of_kind(&list, "HorizontalPodAutoscaler").len(), 1);
    // The elastic example without metrics has none.
    let echo = harness::fixtures().join("upstream/pytorch-elastic-echo-echo.yaml");
    let list = render_json(&["-f", &echo.display().to_string()]);
    assert!(items_of_kind(&list, "HorizontalPodAutoscaler").is_empty());
}

/// A TFJob of `workers` workers running `true`.
fn tfjob_of(workers: u32) -> String {
    format!(
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: wide
spec:
  tfReplicaSpecs:
    Worker:
      replicas: {workers}
      template:
        spec:
          containers:
            - name: tensorflow
              image: busybox
              command: [\"true\"]
"
    )
}

/// The peak resident memory (KiB) of `trainctl render` of `manifest` written to `/dev/null`,
/// and its exit code: `VmHWM` read until the process exits.
fn render_peak_kib(manifest: &std::path::Path) -> (u64, Option<i32>) {
    let mut child = std::process::Command::new(trainctl_cli_harness::binary())
        .arg("render")
        .arg("-f")
        .arg(manifest)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("trainctl starts");
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return (peak, status.code());
        }
        let hwm = std::fs::read_to_string(&status_file)
            .ok()
            .and_then(|status| {
                let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
                line.split_whitespace().nth(1)?.parse().ok()
            });
        peak = peak.max(hwm.unwrap_or(0));
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn render_streams_a_wide_job_in_flat_memory() {
    // Each pod names every replica: 1,200 workers are 1,200 pods of 1,200 addresses (about
    // 55 MB of YAML), 400 workers a ninth of that. Built whole, the wide one needs about 60 MB
    // more memory; streamed, the two need the same.
    let dir = tempfile::tempdir().expect("tempdir");
    let small = dir.path().join("small.yaml");
    let wide = dir.path().join("wide.yaml");
    std::fs::write(&small, tfjob_of(400)).expect("write");
    std::fs::write(&wide, tfjob_of(1_200)).expect("write");
    let (small_peak, small_code) = render_peak_kib(&small);
    let (wide_peak, wide_code) = render_peak_kib(&wide);
    assert_eq!((small_code, wide_code), (Some(0), Some(0)));
    assert!(
        wide_peak < small_peak + 16 * 1024,
        "peak {wide_peak} KiB for 1,200 workers against {small_peak} KiB for 400"
    );
}

#[test]
fn render_into_a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let wide = dir.path().join("wide.yaml");
    std::fs::write(&wide, tfjob_of(300)).expect("write");
    for format in ["yaml", "json"] {
        let mut child = std::process::Command::new(trainctl_cli_harness::binary())
            .args(["render", "-o", format, "-f"])
            .arg(&wide)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("trainctl starts");
        // `| head -c 100`: read a little, then close the pipe.
        let mut stdout = child.stdout.take().expect("stdout");
        let mut start = [0; 100];
        std::io::Read::read_exact(&mut stdout, &mut start).expect("the list starts");
        drop(stdout);
        let output = child.wait_with_output().expect("trainctl exits");
        assert_eq!(output.status.code(), Some(0), "{format}");
        assert_eq!(String::from_utf8_lossy(&output.stderr), "", "{format}");
    }
}
