//! A namespace given apart from a manifest is a DNS-1123 label, or it is refused before
//! anything is stored: the CLI's `-n` (before anything is read or contacted), the server's
//! `?namespace=` and its paths' `{namespace}` (400, with the JSON error envelope).

use serde_json::json;
use trainctl_cli_harness::server::Server;
use trainctl_cli_harness::trainctl;

/// What a namespace is, as every refusal ends.
const RULE: &str = "a namespace is a DNS-1123 label: lowercase letters, digits and `-`, starting \
                    and ending with a letter or digit, at most 63 characters";

const JOB: &str = "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: quiet
spec:
  runPolicy: {suspend: true}
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          containers: [{name: tensorflow, image: busybox, command: ['true']}]
";

#[test]
fn every_commands_namespace_flag_is_checked_before_anything_is_done() {
    let state = tempfile::tempdir().expect("tempdir");
    let manifest = state.path().join("job.yaml");
    std::fs::write(&manifest, JOB).expect("write");
    let state_dir = state.path().join("state");
    let state_dir = state_dir.to_str().expect("UTF-8 path");
    let manifest = manifest.to_str().expect("UTF-8 path");
    for (namespace, problem) in [
        (
            "../../etc",
            "`../../etc` is not a valid namespace: `.` is not allowed",
        ),
        (
            "a;touch x",
            "`a;touch x` is not a valid namespace: `;` is not allowed",
        ),
        ("", "the namespace is empty"),
    ] {
        for command in [
            &["submit", "-f", manifest][..],
            &["run", "-f", manifest],
            &["render", "-f", manifest],
            &["get"],
            &["describe", "quiet"],
            &["logs", "quiet"],
            &["wait", "quiet", "--for", "delete"],
            &["suspend", "quiet"],
            &["resume", "quiet"],
            &["delete", "quiet"],
        ] {
            for flag in ["-n", "--namespace"] {
                let args = [&["--state-dir", state_dir][..], command, &[flag, namespace]].concat();
                let run = trainctl(&args);
                assert_eq!(
                    (run.code, run.stdout.as_str(), run.stderr),
                    (
                        Some(2),
                        "",
                        format!(
                            "error: invalid value '{namespace}' for '--namespace <NS>': \
                             {problem}; {RULE}\n\nFor more information, try '--help'.\n"
                        )
                    ),
                    "{args:?}"
                );
            }
        }
    }
    // Nothing was read or created: not even the state directory.
    assert!(!state.path().join("state").exists());
}

#[test]
fn the_servers_namespace_parameters_are_checked_and_nothing_is_stored() {
    let server = Server::start(&[]);
    let refused = |source: &str, namespace: &str, problem: &str| {
        json!({
            "error": format!("{source}: `{namespace}` is not a valid namespace: {problem}; {RULE}"),
            "details": []
        })
    };
    let query = "the query parameter `namespace`";
    assert_eq!(
        server.request("POST", "/api/v1/jobs?namespace=a%3Btouch%20x", Some(JOB)),
        (400, refused(query, "a;touch x", "`;` is not allowed"))
    );
    assert_eq!(
        server.request("GET", "/api/v1/jobs?namespace=..%2F..%2Fetc", None),
        (400, refused(query, "../../etc", "`.` is not allowed"))
    );
    let path = "the path's namespace";
    for (method, suffix) in [
        ("GET", ""),
        ("DELETE", ""),
        ("POST", "/suspend"),
        ("POST", "/resume"),
        ("GET", "/logs"),
    ] {
        assert_eq!(
            server.request(
                method,
                &format!("/api/v1/namespaces/..%2F..%2Fetc/tfjobs/quiet{suffix}"),
                None
            ),
            (400, refused(path, "../../etc", "`.` is not allowed")),
            "{method} {suffix}"
        );
        assert_eq!(
            server.request(
                method,
                &format!("/api/v1/namespaces/Team/tfjobs/quiet{suffix}"),
                None
            ),
            (400, refused(path, "Team", "`T` is not allowed")),
            "{method} {suffix}"
        );
    }
    assert_eq!(
        server.request("GET", "/api/v1/jobs", None),
        (200, json!({ "items": [] }))
    );
    // A valid one is taken.
    let (status, body) = server.request("POST", "/api/v1/jobs?namespace=team-a", Some(JOB));
    assert_eq!(
        (status, &body["jobs"][0]["namespace"]),
        (201, &json!("team-a")),
        "{body}"
    );
}
