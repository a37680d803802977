//! `trainctl render`: a v1 List of the objects the operator creates, for every fixture.

mod common;

use common::{fixture_manifests, trainctl};
use serde_json::Value;

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
    let path = common::invalid_corpus().join("replicas-negative.yaml");
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
    let example = common::tests_dir().join("../../../examples/tfjob-multi-worker.yaml");
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
    let path = common::fixtures().join("seeds/config-tfjob.yaml");
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
    let example = common::tests_dir().join("../../../examples/tfjob-multi-worker.yaml");
    let shown = example.display().to_string();
    let list = render_json(&["-f", &shown, "--cluster-domain", "cluster.local"]);
    let tf_config = env_of(items_of_kind(&list, "Pod")[1], "TF_CONFIG").expect("TF_CONFIG");
    assert!(
        tf_config.contains(r#""mnist-mwms-worker-0.default.svc.cluster.local:2222""#),
        "{tf_config}"
    );

    let output = std::process::Command::new(env!("CARGO_BIN_EXE_trainctl"))
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
fn gang_scheduler_adds_a_pod_group_first_and_schedules_pods_with_it() {
    let example = common::tests_dir().join("../../../examples/tfjob-multi-worker.yaml");
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
}
