//! ConfigMaps and Secrets on the local control plane (`docs/server.md`, "ConfigMaps and
//! Secrets"), as `kubectl apply -f configmap.yaml` then `kubectl apply -f job.yaml` work: the
//! server keeps what it is given (`configmap/NAME created`, then `configured`), a job submitted
//! later mounts it or reads its keys, one the server does not know fails the job in the
//! kubelet's words, and no answer carries a Secret's data.
//!
//! Each test has its own server and state directory, so they run in parallel.

use std::path::Path;

use serde_json::Value;
use trainctl_cli_harness::manifest::{Replicas, tfjob_in};
use trainctl_cli_harness::server::{Server, state};
use trainctl_cli_harness::{Run, trainctl};

/// A Secret's value, and the same in base64 (as `data` holds it).
const SECRET: &str = "s3cr3t-value";
const SECRET_BASE64: &str = "czNjcjN0LXZhbHVl";

/// A TFJob `name` of `namespace` whose one worker runs `sh -c script` with the container env
/// `env` (YAML flow mappings), without restarts.
fn job(namespace: &str, name: &str, script: &str, env: &[&str]) -> String {
    tfjob_in(
        namespace,
        name,
        "",
        &[Replicas::workers(1, script).env(env)],
    )
}

/// A job that mounts the ConfigMap `config_map` at `/etc/config` and prints its key `a`.
fn reader(name: &str, config_map: &str) -> String {
    let volume = format!("{{name: c, configMap: {{name: {config_map}}}}}");
    tfjob_in(
        "default",
        name,
        "",
        &[Replicas::workers(1, "cat /etc/config/a")
            .with(&[&volume], &["{name: c, mountPath: /etc/config}"])],
    )
}

/// The ConfigMap `settings`, its key `a` holding `value`; in no namespace.
fn settings(value: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: {value}\n")
}

/// The Secret `token`, its key `token` holding [`SECRET`].
fn token() -> String {
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\ntype: Opaque\ndata:\n  token: {SECRET_BASE64}\n"
    )
}

/// `trainctl --state-dir <the server's> ARGS`.
fn cli(server: &Server, args: &[&str]) -> Run {
    let dir = server
        .state_dir()
        .to_str()
        .expect("a UTF-8 path")
        .to_owned();
    let mut all = vec!["--state-dir", dir.as_str()];
    all.extend_from_slice(args);
    trainctl(&all)
}

/// Writes `text` to `dir/name`, then `trainctl submit -f` it with `extra` arguments.
fn submit(server: &Server, dir: &Path, name: &str, text: &str, extra: &[&str]) -> Run {
    let file = dir.join(name);
    std::fs::write(&file, text).expect("write the manifest");
    let mut args = vec!["submit", "-f", file.to_str().expect("a UTF-8 path")];
    args.extend_from_slice(extra);
    cli(server, &args)
}

/// Waits until the TFJob `namespace/name` has finished; its view.
fn finished(server: &Server, namespace: &str, name: &str) -> Value {
    let path = format!("/api/v1/namespaces/{namespace}/tfjobs/{name}");
    let started = std::time::Instant::now();
    loop {
        let (status, view) = server.request("GET", &path, None);
        assert_eq!(status, 200, "{view}");
        if view["finished"] == true {
            return view;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{namespace}/{name} never finished: {view}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The log of the one worker of the TFJob `namespace/name`.
fn logs(server: &Server, namespace: &str, name: &str) -> String {
    let (status, text) = server.request(
        "GET",
        &format!("/api/v1/namespaces/{namespace}/tfjobs/{name}/logs?replica=worker-0"),
        None,
    );
    assert_eq!(status, 200, "{text}");
    text.as_str()
        .map_or_else(|| text.to_string(), str::to_owned)
}

/// The messages of the job's conditions, joined.
fn conditions(view: &Value) -> String {
    view["job"]["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|condition| condition["message"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_config_map_submitted_alone_is_mounted_by_the_jobs_submitted_after_it() {
    let server = Server::start(&["--restart-backoff", "0s"]);
    let files = tempfile::tempdir().expect("tempdir");
    let applied = submit(&server, files.path(), "cm.yaml", &settings("first"), &[]);
    assert_eq!(applied.code, Some(0), "{}", applied.stderr);
    assert_eq!(applied.stdout, "configmap/settings created\n");

    let submitted = submit(
        &server,
        files.path(),
        "job.yaml",
        &reader("first", "settings"),
        &[],
    );
    assert_eq!(submitted.code, Some(0), "{}", submitted.stderr);
    assert_eq!(
        submitted.stdout,
        "tfjob.kubeflow.org/first submitted (Pending)\n"
    );
    let view = finished(&server, "default", "first");
    assert_eq!(state(&view), "Succeeded", "{view}");
    assert_eq!(
        logs(&server, "default", "first"),
        "first",
        "the file, as the key holds it"
    );

    // Applied again, it is `configured`; a job submitted after reads the new value.
    let again = submit(&server, files.path(), "cm.yaml", &settings("second"), &[]);
    assert_eq!(
        again.stdout, "configmap/settings configured\n",
        "{}",
        again.stderr
    );
    submit(
        &server,
        files.path(),
        "job2.yaml",
        &reader("second", "settings"),
        &[],
    );
    let view = finished(&server, "default", "second");
    assert_eq!(state(&view), "Succeeded", "{view}");
    assert_eq!(logs(&server, "default", "second"), "second");

    // A ConfigMap in the job's own file is the one it reads.
    let both = format!("{}---\n{}", settings("own"), reader("own", "settings"));
    let submitted = submit(&server, files.path(), "both.yaml", &both, &[]);
    assert_eq!(
        submitted.stdout,
        "configmap/settings configured\ntfjob.kubeflow.org/own submitted (Pending)\n",
        "{}",
        submitted.stderr
    );
    assert_eq!(state(&finished(&server, "default", "own")), "Succeeded");
    assert_eq!(logs(&server, "default", "own"), "own");
}

#[test]
fn a_job_referencing_a_config_map_the_server_does_not_know_fails_in_the_kubelets_words() {
    let server = Server::start(&["--restart-backoff", "0s"]);
    let files = tempfile::tempdir().expect("tempdir");
    submit(&server, files.path(), "cm.yaml", &settings("here"), &[]);
    let submitted = submit(
        &server,
        files.path(),
        "job.yaml",
        &reader("lost", "nope"),
        &[],
    );
    assert_eq!(submitted.code, Some(0), "{}", submitted.stderr);
    let view = finished(&server, "default", "lost");
    assert_eq!(state(&view), "Failed", "{view}");
    assert!(
        conditions(&view)
            .contains("MountVolume.SetUp failed for volume \"c\" : configmap \"nope\" not found"),
        "{view}"
    );
}

#[test]
fn a_config_map_is_kept_in_its_namespace() {
    let server = Server::start(&["--restart-backoff", "0s"]);
    let files = tempfile::tempdir().expect("tempdir");
    let applied = submit(
        &server,
        files.path(),
        "cm.yaml",
        &settings("team"),
        &["-n", "team-a"],
    );
    assert_eq!(
        applied.stdout, "configmap/settings created\n",
        "{}",
        applied.stderr
    );
    let env = "{name: A, valueFrom: {configMapKeyRef: {name: settings, key: a}}}";
    for namespace in ["team-a", "default"] {
        let text = job(namespace, "env", "echo a=$A", &[env]);
        submit(&server, files.path(), "job.yaml", &text, &[]);
    }
    let view = finished(&server, "team-a", "env");
    assert_eq!(state(&view), "Succeeded", "{view}");
    assert_eq!(logs(&server, "team-a", "env"), "a=team\n");
    let view = finished(&server, "default", "env");
    assert_eq!(state(&view), "Failed", "{view}");
    assert!(
        conditions(&view).contains("env A: ConfigMap `settings` was not submitted with the job"),
        "{view}"
    );

    // A ConfigMap of another namespace than -n's is refused, and nothing is kept.
    let elsewhere = settings("x").replace("name: settings\n", "name: other\n  namespace: team-b\n");
    let refused = submit(
        &server,
        files.path(),
        "b.yaml",
        &elsewhere,
        &["-n", "team-a"],
    );
    assert_eq!(refused.code, Some(2), "{}", refused.stdout);
    assert_eq!(
        refused.stderr,
        format!(
            "{}: configmap/other: the object's namespace `team-b` does not match the namespace \
             `team-a`\n",
            files.path().join("b.yaml").display()
        )
    );
}

#[test]
fn a_secret_submitted_alone_is_read_by_secret_key_ref_and_never_answered() {
    let server = Server::start(&["--restart-backoff", "0s"]);
    let files = tempfile::tempdir().expect("tempdir");
    let (status, answer) = server.request("POST", "/api/v1/jobs", Some(&token()));
    assert_eq!(status, 201, "{answer}");
    assert_eq!(
        answer["secrets"],
        serde_json::json!([{"action": "created", "namespace": "default", "name": "token"}])
    );
    assert_eq!(answer["configMaps"], serde_json::json!([]));
    assert_eq!(answer["jobs"], serde_json::json!([]));
    let text = answer.to_string();
    assert!(
        !text.contains(SECRET) && !text.contains(SECRET_BASE64),
        "{text}"
    );

    let applied = submit(&server, files.path(), "secret.yaml", &token(), &[]);
    assert_eq!(
        applied.stdout, "secret/token configured\n",
        "{}",
        applied.stderr
    );
    assert!(
        !applied.stdout.contains(SECRET) && !applied.stderr.contains(SECRET),
        "{}{}",
        applied.stdout,
        applied.stderr
    );

    let env = "{name: TOKEN, valueFrom: {secretKeyRef: {name: token, key: token}}}";
    let submitted = submit(
        &server,
        files.path(),
        "job.yaml",
        &job("default", "secretive", "echo token=$TOKEN", &[env]),
        &[],
    );
    assert_eq!(submitted.code, Some(0), "{}", submitted.stderr);
    let view = finished(&server, "default", "secretive");
    assert_eq!(state(&view), "Succeeded", "{view}");
    assert_eq!(
        logs(&server, "default", "secretive"),
        format!("token={SECRET}\n")
    );
    let (_, listed) = server.request("GET", "/api/v1/jobs", None);
    let listed = listed.to_string();
    assert!(
        !listed.contains(SECRET) && !listed.contains(SECRET_BASE64),
        "{listed}"
    );
}
