//! `submit`, `delete`, `suspend` and `resume` on a cluster: the exact writes sent.

use super::*;

/// A manifest file in a fresh directory (kept alive with the returned guard).
fn manifest(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("job.yaml");
    std::fs::write(&path, text).expect("write the manifest");
    let shown = path.display().to_string();
    (dir, shown)
}

const JOB: &str = "\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - name: tensorflow
            image: tf
            command: [python, train.py]
";

/// The API server's answer to a create: the object, stored.
fn created(sent: &Sent) -> Reply {
    let mut object = sent.body.clone();
    object["metadata"]["uid"] = json!("uid-new");
    object["metadata"]["creationTimestamp"] = json!(ago(0));
    Reply::Json(201, object)
}

#[tokio::test]
async fn submit_creates_the_defaulted_job_in_the_context_namespace() {
    let (_dir, file) = manifest(JOB);
    let outcome = trainctl(&["submit", "-f", &file], created).await;
    assert_eq!(outcome.code, Ok(ExitCode::SUCCESS));
    assert_eq!(
        outcome.stdout,
        "tfjob.kubeflow.org/mnist submitted (Pending)\n"
    );
    assert_eq!(
        requests(&outcome.sent),
        ["POST /apis/kubeflow.org/v1/namespaces/default/tfjobs?"]
    );
    assert_eq!(
        outcome.sent[0].content_type.as_deref(),
        Some("application/json")
    );
    assert_eq!(
        outcome.sent[0].body,
        json!({
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "metadata": {"name": "mnist", "namespace": "default"},
            "spec": {
                "runPolicy": {"cleanPodPolicy": "None", "suspend": false},
                "successPolicy": "",
                "tfReplicaSpecs": {"Worker": {
                    "replicas": 2,
                    "restartPolicy": "Never",
                    "template": {"spec": {"containers": [{
                        "name": "tensorflow",
                        "image": "tf",
                        "command": ["python", "train.py"],
                        "ports": [{"name": "tfjob-port", "containerPort": 2222}],
                    }]}},
                }},
            },
        })
    );
}

#[tokio::test]
async fn submit_applies_the_manifests_config_maps_first_in_the_namespace_asked() {
    let text = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings}}\ndata: {{epochs: \"3\"}}\n---\n{JOB}"
    );
    let (_dir, file) = manifest(&text);
    let outcome = trainctl(&["submit", "-f", &file, "-n", "team-a"], |sent| {
        if sent.method == Method::PATCH {
            Reply::Json(200, sent.body.clone())
        } else {
            created(sent)
        }
    })
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::SUCCESS));
    assert_eq!(
        outcome.stdout,
        "configmap/settings applied\ntfjob.kubeflow.org/mnist submitted (Pending)\n"
    );
    assert_eq!(
        requests(&outcome.sent),
        [
            "PATCH /api/v1/namespaces/team-a/configmaps/settings?&fieldManager=trainctl-cli",
            "POST /apis/kubeflow.org/v1/namespaces/team-a/tfjobs?",
        ]
    );
    assert_eq!(
        outcome.sent[0].content_type.as_deref(),
        Some("application/apply-patch+yaml")
    );
    assert_eq!(
        outcome.sent[0].body,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "settings", "namespace": "team-a"},
               "data": {"epochs": "3"}})
    );
    assert_eq!(outcome.sent[1].body["metadata"]["namespace"], "team-a");
}

#[tokio::test]
async fn submit_of_an_invalid_manifest_exits_2_and_sends_nothing() {
    let (_dir, file) = manifest(&JOB.replace("replicas: 2", "replicas: -1"));
    let outcome = trainctl(&["submit", "-f", &file], created).await;
    assert_eq!(outcome.code, Ok(ExitCode::from(2)));
    assert!(outcome.sent.is_empty(), "{:?}", outcome.sent);
}

#[tokio::test]
async fn submit_of_a_job_that_exists_exits_1() {
    let (_dir, file) = manifest(JOB);
    let outcome = trainctl(&["submit", "-f", &file], |_| {
        status(
            409,
            "AlreadyExists",
            "tfjobs.kubeflow.org \"mnist\" already exists",
            Some("mnist"),
        )
    })
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::FAILURE));
    assert_eq!(outcome.stdout, "");
}

#[tokio::test]
async fn submit_refused_by_the_cluster_schema_exits_2() {
    let (_dir, file) = manifest(JOB);
    let outcome = trainctl(&["submit", "-f", &file], |_| {
        status(
            422,
            "Invalid",
            "TFJob.kubeflow.org \"mnist\" is invalid: spec: Required value",
            Some("mnist"),
        )
    })
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::from(2)));
}

/// Answers the GET of `mnist` as a TFJob (other kinds have none), and `write` with `answer`.
fn job_then(answer: Reply) -> impl FnMut(&Sent) -> Reply + Send + 'static {
    let mut answer = Some(answer);
    move |sent| match (&sent.method, sent.path()) {
        (&Method::GET, "/apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist") => {
            Reply::Json(200, tfjob(running()))
        }
        (&Method::GET, _) => status(404, "NotFound", "not found", Some("mnist")),
        _ => answer.take().unwrap_or(Reply::Hang),
    }
}

#[tokio::test]
async fn delete_deletes_in_the_background_as_kubectl() {
    let outcome = trainctl(
        &["delete", "tfjob", "mnist"],
        job_then(Reply::Json(200, tfjob(running()))),
    )
    .await;
    assert_eq!(outcome.code, Ok(ExitCode::SUCCESS));
    assert_eq!(outcome.stdout, "tfjob.kubeflow.org/mnist deleted\n");
    assert_eq!(
        requests(&outcome.sent),
        [
            "GET /apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist",
            "DELETE /apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist?",
        ]
    );
    assert_eq!(
        outcome.sent[1].body,
        json!({"propagationPolicy": "Background"})
    );
}

#[tokio::test]
async fn delete_of_a_job_gone_meanwhile_says_not_found() {
    let outcome = trainctl(
        &["delete", "tfjob", "mnist"],
        job_then(status(404, "NotFound", "not found", Some("mnist"))),
    )
    .await;
    assert_eq!(
        outcome.code,
        Err(
            "tfjob \"mnist\" not found in namespace \"default\" (see `trainctl --kube get`)"
                .to_owned()
        )
    );
}

#[tokio::test]
async fn suspend_and_resume_patch_run_policy_suspend() {
    for (command, suspend, done) in [("suspend", true, "suspended"), ("resume", false, "resumed")] {
        let outcome = trainctl(
            &[command, "mnist"],
            job_then(Reply::Json(200, tfjob(running()))),
        )
        .await;
        assert_eq!(outcome.code, Ok(ExitCode::SUCCESS), "{command}");
        assert_eq!(outcome.stdout, format!("tfjob.kubeflow.org/mnist {done}\n"));
        let patch = outcome
            .sent
            .iter()
            .find(|sent| sent.method == Method::PATCH)
            .expect("a patch");
        assert_eq!(
            patch.uri,
            "/apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist?"
        );
        assert_eq!(
            patch.content_type.as_deref(),
            Some("application/merge-patch+json")
        );
        assert_eq!(
            patch.body,
            json!({"spec": {"runPolicy": {"suspend": suspend}}})
        );
    }
}
