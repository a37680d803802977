//! The claims as users handle them: `--volume CLAIM=PATH` on `run`, `server` and `submit` binds a
//! claim to a directory of theirs (a job writes there), `--no-volumes` leaves the volumes out,
//! `trainctl volumes` lists the claims with their paths, sizes and users, `volumes delete`
//! removes a claim's own directory and only unbinds a bound one, and a claim that a job which has
//! not finished mounts is neither rebound nor deleted under it.
//!
//! Each test has its own state directory and data directories (and its own server, on loopback),
//! so they run in parallel. Jobs that must still run when the test acts wait for a file the test
//! writes into their claim.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;
use trainctl_cli_harness::manifest::{Replicas, tfjob};
use trainctl_cli_harness::server::{Server, state};
use trainctl_cli_harness::{Run, trainctl};

/// How long a test waits for what takes well under a second when all is well.
const SOON: Duration = Duration::from_secs(30);

/// A TFJob `name` whose one worker mounts the claim `claim` at `mount_path` and runs
/// `sh -c script`, without restarts.
fn job(name: &str, claim: &str, mount_path: &str, script: &str) -> String {
    let volume = format!("{{name: data, persistentVolumeClaim: {{claimName: {claim}}}}}");
    let mount = format!("{{name: data, mountPath: {mount_path}}}");
    tfjob(
        name,
        "",
        &[Replicas::workers(1, script).with(&[&volume], &[&mount])],
    )
}

/// A job that writes `hello` into `/data/x` of the claim `claim`.
fn writer(name: &str, claim: &str) -> String {
    job(name, claim, "/data", "echo hello > /data/x")
}

/// A job that says it is up in its claim `claim` (`/data/up`), then waits until the test writes
/// `/data/release` there.
fn holder(name: &str, claim: &str) -> String {
    job(
        name,
        claim,
        "/data",
        "echo up > /data/up; while [ ! -e /data/release ]; do sleep 0.05; done",
    )
}

/// The error of a `run` or `submit` that would bind the claim `data`, which `tfjob/holder`
/// mounts from `was` and has not finished, to `to`.
fn in_use(to: &Path, was: &Path) -> String {
    format!(
        "error: claim default/data is used by tfjob/holder (Running), which has not finished: \
         binding it to {} would change the directory the job sees ({}); wait until the job has \
         finished, or delete the job first\n",
        to.display(),
        was.display()
    )
}

/// The line that says the claim `data`, bound to `was`, is now bound to `to`.
fn rebound_to(to: &Path, was: &Path) -> String {
    format!(
        "claim default/data: bound to {} (was {})",
        to.display(),
        was.display()
    )
}

/// A test's own directories: the state directory, the manifests, and the user's data
/// directories (canonical, as bindings are recorded).
struct Scratch {
    root: TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            root: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn state(&self) -> String {
        self.root.path().join("state").display().to_string()
    }

    /// A directory of the user's, made.
    fn dir(&self, name: &str) -> PathBuf {
        let dir = self.root.path().join(name);
        std::fs::create_dir_all(&dir).expect("make the directory");
        std::fs::canonicalize(dir).expect("canonical")
    }

    /// Writes a manifest; its path.
    fn manifest(&self, name: &str, yaml: &str) -> String {
        let path = self.root.path().join(name);
        std::fs::write(&path, yaml).expect("write the manifest");
        path.display().to_string()
    }

    /// The claim's own directory in the state directory.
    fn own(&self, claim: &str) -> PathBuf {
        std::fs::canonicalize(self.root.path())
            .expect("canonical")
            .join("state/volumes/default")
            .join(claim)
    }

    /// Runs `trainctl --state-dir STATE args...`.
    fn trainctl(&self, args: &[&str]) -> Run {
        let state = self.state();
        let mut all = vec!["--state-dir", &state];
        all.extend_from_slice(args);
        trainctl(&all)
    }

    /// Starts `trainctl --state-dir STATE args...` in the background, its output discarded.
    fn spawn(&self, args: &[&str]) -> Background {
        Background(
            Command::new(trainctl_cli_harness::binary())
                .arg("--state-dir")
                .arg(self.state())
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start trainctl"),
        )
    }
}

/// A `trainctl` in the background, stopped (`SIGTERM`) when dropped.
struct Background(Child);

impl Background {
    /// Waits for it to exit; its exit code.
    fn wait(mut self) -> Option<i32> {
        let status = self.0.wait().expect("wait for trainctl");
        status.code()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = Command::new("kill").arg(self.0.id().to_string()).status();
            let _ = self.0.wait();
        }
    }
}

/// Polls until `file` exists.
fn wait_for_file(file: &Path) {
    let started = Instant::now();
    while !file.exists() {
        assert!(
            started.elapsed() < SOON,
            "{} never appeared",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `trainctl get NAME` until the job's state is `Running`.
fn wait_until_running(scratch: &Scratch, name: &str) {
    let started = Instant::now();
    loop {
        let get = scratch.trainctl(&["get", name]);
        if get
            .stdout
            .lines()
            .nth(1)
            .is_some_and(|row| row.contains(" Running "))
        {
            return;
        }
        assert!(started.elapsed() < SOON, "{name} never ran: {}", get.stdout);
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn run_with_a_volume_writes_into_the_users_directory() {
    let scratch = Scratch::new();
    let data = scratch.dir("dataset");
    let manifest = scratch.manifest("job.yaml", &writer("writer", "training-data"));
    let volume = format!("training-data={}", data.display());
    let run = scratch.trainctl(&["run", "-q", "-f", &manifest, "--volume", &volume]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(data.join("x")).expect("the job's file in the dataset"),
        "hello\n"
    );
    assert!(
        !scratch.own("training-data").exists(),
        "a bound claim has no directory of its own"
    );
    let volumes = scratch.trainctl(&["volumes"]);
    assert_eq!(volumes.code, Some(0), "{}", volumes.stderr);
    let path = data.display().to_string();
    let pad = " ".repeat(path.len() - 4);
    assert_eq!(
        volumes.stdout,
        format!(
            "NAME            PATH{pad}   SIZE   SOURCE   USED BY\n\
             training-data   {path}   6      bound    tfjob/writer (Succeeded)\n"
        )
    );
    let describe = scratch.trainctl(&["describe", "writer"]);
    assert!(
        describe.stdout.contains(&format!(
            "    Volumes:         data: PersistentVolumeClaim training-data (bound to {path})\n"
        )),
        "{}",
        describe.stdout
    );
}

#[test]
fn volumes_lists_own_and_bound_claims_and_delete_keeps_the_users_data() {
    let scratch = Scratch::new();
    let data = scratch.dir("dataset");
    std::fs::write(data.join("images.bin"), vec![0_u8; 3 * 1024]).expect("a dataset file");
    let own = scratch.manifest("own.yaml", &writer("checkpointer", "checkpoints"));
    let bound = scratch.manifest("bound.yaml", &writer("reader", "training-data"));
    let volume = format!("training-data={}", data.display());
    assert_eq!(scratch.trainctl(&["run", "-q", "-f", &own]).code, Some(0));
    let run = scratch.trainctl(&["run", "-q", "-f", &bound, "--volume", &volume]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let own_dir = scratch.own("checkpoints");
    assert!(own_dir.join("x").is_file(), "the claim's own directory");

    let volumes = scratch.trainctl(&["volumes", "-o", "json"]);
    assert_eq!(volumes.code, Some(0), "{}", volumes.stderr);
    let listed: serde_json::Value = serde_json::from_str(&volumes.stdout).expect("JSON");
    let rows: Vec<(&str, &str, &str, u64, &str)> = listed["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| {
            (
                item["name"].as_str().expect("name"),
                item["path"].as_str().expect("path"),
                item["source"].as_str().expect("source"),
                item["sizeBytes"].as_u64().expect("size"),
                item["usedBy"][0]["name"].as_str().expect("a user"),
            )
        })
        .collect();
    let (own_path, data_path) = (own_dir.display().to_string(), data.display().to_string());
    assert_eq!(
        rows,
        [
            (
                "checkpoints",
                own_path.as_str(),
                "trainctl",
                6,
                "checkpointer"
            ),
            (
                "training-data",
                data_path.as_str(),
                "bound",
                3 * 1024 + 6,
                "reader"
            ),
        ]
    );
    let table = scratch.trainctl(&["volumes"]);
    let sizes: Vec<&str> = table
        .stdout
        .lines()
        .map(|line| line.split_whitespace().nth(2).unwrap_or_default())
        .collect();
    assert_eq!(sizes, ["SIZE", "6", "3Ki"], "{}", table.stdout);

    let delete = scratch.trainctl(&["volumes", "delete", "checkpoints", "nope", "training-data"]);
    assert_eq!(delete.code, Some(1), "{}", delete.stderr);
    assert_eq!(
        delete.stdout,
        format!(
            "persistentvolumeclaim \"checkpoints\" deleted (its directory {own_path} was \
             removed)\n\
             persistentvolumeclaim \"training-data\" deleted (unbound; its directory \
             {data_path} was left as it is)\n"
        )
    );
    assert_eq!(
        delete.stderr,
        "error: persistentvolumeclaim \"nope\" not found in namespace \"default\"\n"
    );
    assert!(!own_dir.exists(), "the claim's own directory is removed");
    assert!(
        data.join("images.bin").is_file() && data.join("x").is_file(),
        "the user's directory is left as it is"
    );
    let again = scratch.trainctl(&["volumes", "delete", "training-data"]);
    assert_eq!(
        (again.code, again.stderr.as_str()),
        (
            Some(1),
            "error: persistentvolumeclaim \"training-data\" not found in namespace \"default\"\n"
        )
    );
}

#[test]
fn a_claim_a_running_job_mounts_is_neither_rebound_nor_deleted() {
    let scratch = Scratch::new();
    let (first, second) = (scratch.dir("first"), scratch.dir("second"));
    let holding = scratch.manifest("holder.yaml", &holder("holder", "data"));
    let volume = format!("data={}", first.display());
    let background = scratch.spawn(&["run", "-q", "-f", &holding, "--volume", &volume]);
    wait_for_file(&first.join("up"));
    wait_until_running(&scratch, "holder");

    let other = scratch.manifest("writer.yaml", &writer("writer", "data"));
    let rebind = format!("data={}", second.display());
    let refused = scratch.trainctl(&["run", "-q", "-f", &other, "--volume", &rebind]);
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    assert_eq!(refused.stderr, in_use(&second, &first));
    assert!(!second.join("x").exists(), "the refused job did not run");
    let delete = scratch.trainctl(&["volumes", "delete", "data"]);
    assert_eq!(
        (delete.code, delete.stderr.as_str()),
        (
            Some(1),
            "error: persistentvolumeclaim \"data\" is used by tfjob/holder (Running), which has \
             not finished; wait until it has, or delete it first\n"
        )
    );
    // The same directory again is no change: allowed while the job runs.
    let same = scratch.trainctl(&["run", "-q", "-f", &other, "--volume", &volume]);
    assert_eq!(same.code, Some(0), "{}", same.stderr);
    assert!(first.join("x").is_file());

    std::fs::write(first.join("release"), "").expect("release the holder");
    assert_eq!(background.wait(), Some(0));
    let rebound = scratch.trainctl(&["run", "-q", "-f", &other, "--volume", &rebind]);
    assert_eq!(rebound.code, Some(0), "{}", rebound.stderr);
    assert!(
        rebound
            .stderr
            .lines()
            .any(|line| line == rebound_to(&second, &first)),
        "{}",
        rebound.stderr
    );
    assert!(second.join("x").is_file());
}

#[test]
fn no_volumes_runs_the_replicas_on_this_machines_files() {
    let scratch = Scratch::new();
    let host = scratch.dir("host");
    let manifest = scratch.manifest(
        "job.yaml",
        &job(
            "plain",
            "data",
            &host.display().to_string(),
            &format!("echo plain > {}/x", host.display()),
        ),
    );
    let run = scratch.trainctl(&["run", "-q", "-f", &manifest, "--no-volumes"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        host.join("x").is_file(),
        "the replica wrote on this machine's path"
    );
    assert!(!scratch.own("data").exists(), "no claim directory was made");
}

#[test]
fn submit_and_server_bind_claims_for_the_servers_jobs() {
    let data = tempfile::tempdir().expect("tempdir");
    let data = std::fs::canonicalize(data.path()).expect("canonical");
    let at_start = format!("boot={}", data.display());
    let server = Server::start(&["--volume", &at_start]);
    let state_dir = server.state_dir().display().to_string();
    let scratch = Scratch::new();
    let submit = |manifest: &str, extra: &[&str]| {
        let mut args = vec!["--state-dir", &state_dir, "submit", "-f", manifest];
        args.extend_from_slice(extra);
        trainctl(&args)
    };

    // Bound when the server started.
    let boot = scratch.manifest(
        "boot.yaml",
        &job("boot", "boot", "/data", "echo boot > /data/boot"),
    );
    assert_eq!(submit(&boot, &[]).code, Some(0));
    server.wait_for("boot", "Succeeded", |view| state(view) == "Succeeded");
    assert!(data.join("boot").is_file(), "the server's --volume");

    // Bound by the submit.
    let first = scratch.dir("first");
    let holding = scratch.manifest("holder.yaml", &holder("holder", "data"));
    let volume = format!("data={}", first.display());
    let submitted = submit(&holding, &["--volume", &volume]);
    assert_eq!(submitted.code, Some(0), "{}", submitted.stderr);
    assert_eq!(
        submitted.stdout,
        "tfjob.kubeflow.org/holder submitted (Pending)\n"
    );
    wait_for_file(&first.join("up"));
    server.wait_for("holder", "Running", |view| state(view) == "Running");

    let second = scratch.dir("second");
    let writing = scratch.manifest("writer.yaml", &writer("writer", "data"));
    let rebind = format!("data={}", second.display());
    let refused = submit(&writing, &["--volume", &rebind]);
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    assert_eq!(refused.stderr, in_use(&second, &first));
    assert_eq!(server.job("writer").0, 404, "nothing is recorded");

    std::fs::write(first.join("release"), "").expect("release the holder");
    server.wait_for("holder", "Succeeded", |view| state(view) == "Succeeded");
    let rebound = submit(&writing, &["--volume", &rebind]);
    assert_eq!(rebound.code, Some(0), "{}", rebound.stderr);
    assert_eq!(rebound.stderr, format!("{}\n", rebound_to(&second, &first)));
    server.wait_for("writer", "Succeeded", |view| state(view) == "Succeeded");
    assert_eq!(
        std::fs::read_to_string(second.join("x")).expect("the job's file"),
        "hello\n"
    );

    let (status, answer) = server.request(
        "POST",
        "/api/v1/jobs?volume=data%3D%2Fnope%2Fnever",
        Some(&writer("api", "data")),
    );
    assert_eq!(
        (status, &answer["error"]),
        (
            400,
            &serde_json::json!(
                "the query parameter `volume` (data=/nope/never): /nope/never is not a directory \
                 (it does not exist)"
            )
        )
    );

    let volumes = trainctl(&["--state-dir", &state_dir, "volumes"]);
    let rows: Vec<String> = volumes
        .stdout
        .lines()
        .skip(1)
        .map(|line| {
            let cells: Vec<&str> = line
                .split("   ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect();
            format!("{} {} {}", cells[0], cells[3], cells[4])
        })
        .collect();
    assert_eq!(
        rows,
        [
            "boot bound tfjob/boot (Succeeded)",
            "data bound tfjob/holder (Succeeded), tfjob/writer (Succeeded)",
        ],
        "{}",
        volumes.stdout
    );
}

#[test]
fn a_volume_that_is_no_directory_is_a_usage_error() {
    let scratch = Scratch::new();
    let manifest = scratch.manifest("job.yaml", &writer("writer", "data"));
    let refused = scratch.trainctl(&["run", "-f", &manifest, "--volume", "data=/nope/never"]);
    assert_eq!(refused.code, Some(2));
    assert_eq!(
        refused.stderr.lines().next(),
        Some(
            "error: invalid value 'data=/nope/never' for '--volume <CLAIM=PATH>': /nope/never \
             is not a directory (it does not exist)"
        )
    );
    let kube = scratch.trainctl(&[
        "--kube",
        "submit",
        "-f",
        &manifest,
        "--volume",
        &format!("data={}", scratch.dir("d").display()),
    ]);
    assert_eq!(kube.code, Some(1));
    assert_eq!(
        kube.stderr,
        "error: --volume binds a claim to a directory of this machine; on a cluster, a claim is \
         a PersistentVolumeClaim: create it there (kubectl apply -f claim.yaml)\n"
    );
}
