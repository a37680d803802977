//! One manifest size limit (`MAX_MANIFEST_BYTES`, 16 MiB), everywhere: `validate`, `run` and
//! `submit` read no more than the limit and one byte, from a file, a device or standard input
//! (an endless input is refused at once, a finite one too large without being read whole), and
//! the server takes every manifest the CLI takes.

use std::io::Write;
use std::path::Path;
use std::process::{ChildStdin, Command, Stdio};

use trainctl_api::manifest::MAX_MANIFEST_BYTES;
use trainctl_cli_harness::server::Server;
use trainctl_cli_harness::{Run, into_run, trainctl};

const MIB: usize = 1024 * 1024;

/// What the CLI prints for standard input past the limit.
const STDIN_TOO_LARGE: &str = "-: standard input holds more than 16 MiB; manifests are limited \
     to 16 MiB (the Kubernetes API server accepts at most 3 MiB per object)\n1 error\n";

/// Runs `trainctl args` with its standard input fed by `feed` (given the pipe, it says how many
/// bytes went in before the pipe closed), under a 4 GiB address-space limit: a trainctl that
/// read without bound fails for want of memory rather than take the machine's.
fn fed(
    args: &[&str],
    feed: impl FnOnce(&mut ChildStdin) -> usize + Send + 'static,
) -> (Run, usize) {
    let mut child = Command::new("sh")
        .args(["-c", r#"ulimit -v 4194304 && exec "$0" "$@""#])
        .arg(trainctl_cli_harness::binary())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("trainctl runs");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let feeder = std::thread::spawn(move || feed(&mut stdin));
    let output = child.wait_with_output().expect("trainctl finishes");
    let written = feeder.join().expect("the feeder");
    (into_run(&output), written)
}

/// Writes comment lines until the pipe closes, or `total` bytes; how many went in.
fn comments(stdin: &mut ChildStdin, total: usize) -> usize {
    let chunk = "# padding\n".repeat(6554).into_bytes();
    let mut written = 0;
    while written < total {
        let piece = &chunk[..chunk.len().min(total - written)];
        if stdin.write_all(piece).is_err() {
            break;
        }
        written += piece.len();
    }
    written
}

/// How much a pipe may hold past what trainctl read (the kernel's buffer, and the piece being
/// written when it stopped).
const SLACK: usize = 2 * MIB;

#[test]
fn endless_standard_input_is_refused_once_past_the_limit() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let state = scratch.path().join("state");
    let state = state.to_str().expect("UTF-8 path");
    for args in [
        vec!["validate", "-f", "-"],
        vec!["--state-dir", state, "run", "-f", "-"],
        // Checked before any server is looked for: there is none.
        vec!["--state-dir", state, "submit", "-f", "-"],
    ] {
        let (run, written) = fed(&args, |stdin| comments(stdin, usize::MAX));
        assert_eq!(
            (run.code, run.stderr.as_str(), run.stdout.as_str()),
            (Some(2), STDIN_TOO_LARGE, ""),
            "{args:?}"
        );
        assert!(
            written <= MAX_MANIFEST_BYTES + SLACK,
            "{args:?}: {written} bytes went in"
        );
    }
}

#[test]
fn a_finite_input_past_the_limit_is_not_read_whole() {
    let (run, written) = fed(&["validate", "-f", "-"], |stdin| comments(stdin, 32 * MIB));
    assert_eq!((run.code, run.stderr.as_str()), (Some(2), STDIN_TOO_LARGE));
    assert!(
        written <= MAX_MANIFEST_BYTES + SLACK,
        "{written} bytes of 32 MiB went in"
    );
}

#[test]
fn a_device_without_end_is_refused_naming_it() {
    let (run, _) = fed(&["validate", "-f", "/dev/zero"], |_| 0);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            Some(2),
            "/dev/zero: the file holds more than 16 MiB; manifests are limited to 16 MiB (the \
             Kubernetes API server accepts at most 3 MiB per object)\n1 error\n"
        )
    );
}

/// A valid TFJob `name` (it runs `true`), padded with comments to `size` bytes.
fn padded_job(name: &str, size: usize) -> String {
    let job = format!(
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: {name}
spec:
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          containers: [{{name: tensorflow, image: busybox, command: ['true']}}]
"
    );
    let line = "# padding padding padding padding padding padding padding padding padding\n";
    let mut text = job;
    while text.len() + line.len() < size {
        text.push_str(line);
    }
    text.push_str(&"#".repeat(size - text.len() - 1));
    text.push('\n');
    assert_eq!(text.len(), size);
    text
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the manifest");
    path.to_str().expect("UTF-8 path").to_owned()
}

#[test]
fn the_server_takes_every_manifest_the_cli_takes_and_the_cli_sends_none_past_the_limit() {
    let server = Server::start(&[]);
    let state = server.state_dir().to_str().expect("UTF-8 path").to_owned();
    let files = tempfile::tempdir().expect("tempdir");
    for (name, size) in [("two-and-a-half", 5 * MIB / 2), ("ten", 10 * MIB)] {
        let manifest = write(files.path(), "job.yaml", &padded_job(name, size));
        let run = trainctl(&["--state-dir", &state, "submit", "-f", &manifest]);
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (
                Some(0),
                format!("tfjob.kubeflow.org/{name} submitted (Pending)\n").as_str(),
                ""
            ),
            "{size} bytes"
        );
    }
    // Right at the limit, sent by another client: taken too.
    let (status, body) = server.request(
        "POST",
        "/api/v1/jobs",
        Some(&padded_job("at-the-limit", MAX_MANIFEST_BYTES)),
    );
    assert_eq!(status, 201, "{body}");
    // Past it: refused here, naming the file and the limit, and never sent.
    let manifest = write(files.path(), "huge.yaml", &padded_job("huge", 17 * MIB));
    let run = trainctl(&["--state-dir", &state, "submit", "-f", &manifest]);
    assert_eq!(
        (run.code, run.stderr),
        (
            Some(2),
            format!(
                "{manifest}: the file is 17.0 MiB; manifests are limited to 16 MiB (the \
                 Kubernetes API server accepts at most 3 MiB per object)\n1 error\n"
            )
        )
    );
    let (_, list) = server.request("GET", "/api/v1/jobs", None);
    let names: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|job| job["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["two-and-a-half", "ten", "at-the-limit"]);
}
