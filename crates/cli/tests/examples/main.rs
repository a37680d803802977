//! The examples (`examples/*.yaml`) end to end, with real TensorFlow, XGBoost, PyTorch and
//! MXNet: each TensorFlow and XGBoost job trains its digits classifier through `trainctl run` and
//! must succeed with the accuracy the examples' README promises; the MWMS job must also survive a
//! `kill -9` of one worker; the PyTorch jobs run through `run` and the server (`pytorch.rs`); the
//! MXNet job's parameter server must make its loss fall (`mxnet.rs`).
//!
//! Every test is ignored by a plain `cargo test`: they need the examples' Python packages, which
//! `./scripts/test` installs (`scripts/python-env`, `scripts/python-env torch` and
//! `scripts/python-env mxnet`, which needs Python 3.9) before running them one at a time, with
//! `TRAINCTL_EXAMPLES_PATH`, `TRAINCTL_TORCH_PATH` and `TRAINCTL_MXNET_PATH` set to the
//! virtualenvs' `bin` directories. Run by hand:
//!
//! ```sh
//! TRAINCTL_EXAMPLES_PATH=$(scripts/python-env) TRAINCTL_TORCH_PATH=$(scripts/python-env torch) \
//!     TRAINCTL_MXNET_PATH=$(scripts/python-env mxnet) \
//!     cargo nextest run -p trainctl --test examples --run-ignored only -j 1
//! ```
//!
//! Each test has its own directory (state dir, and a fresh `BACKUP_DIR` for the MWMS
//! checkpoints) and runs `trainctl` from the repository root, where the manifests' relative
//! `examples/python/...` paths resolve. `BACKUP_DIR` is set on that `trainctl` only, so it also
//! marks the test's processes (replicas inherit trainctl's environment): that is how the kill
//! test finds worker-1's Python process, and how every test checks that nothing outlives its
//! job. Nothing sleeps to wait: a test waits for a line on trainctl's stderr, with a deadline.

use trainctl_cli_harness as harness;
mod job_run;
mod mxnet;
mod pytorch;
mod quick_start;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use job_run::JobRun;
use trainctl_cli_harness::{Process, processes_with_env};
use trainctl_cli_harness::{Run, conditions, into_run, ran_then, signal, summary};

/// A virtualenv the examples run in: the variable naming its `bin` directory (set by
/// `scripts/test`) and the script that makes it and prints that directory.
struct Venv {
    variable: &'static str,
    script: &'static str,
}

/// The examples' virtualenv: TensorFlow, XGBoost, scikit-learn.
const EXAMPLES_VENV: Venv = Venv {
    variable: "TRAINCTL_EXAMPLES_PATH",
    script: "scripts/python-env",
};
/// Settings of the caller's environment that would change what `trainctl` does.
const SCRUBBED_ENV: [&str; 7] = [
    "TRAINCTL_HOME",
    "TRAINCTL_CPUS",
    "TRAINCTL_MEMORY",
    "TRAINCTL_RESTART_BACKOFF",
    "TRAINCTL_RESTART_BACKOFF_MAX",
    "CUSTOM_CLUSTER_DOMAIN",
    "RUST_LOG",
];
/// The least held-out accuracy a trained example may report (README: 0.9556 to 0.98).
const MIN_ACCURACY: f64 = 0.9;

#[test]
#[ignore = "needs the examples' Python packages: run through ./scripts/test"]
fn mwms_example_succeeds() {
    let sandbox = Sandbox::new("mwms");
    let run = sandbox.run("examples/tfjob-mwms.yaml").finish();

    assert_eq!(run.code, Some(0), "the MWMS job succeeds:\n{run}");
    assert_eq!(conditions(&run.json()), tfjob_succeeded("digits-mwms"));
    assert_accuracy(&sandbox.logs("digits-mwms", "chief-0"));
    for replica in ["chief-0", "worker-0", "worker-1"] {
        assert!(
            replica_lines(&run.stderr, replica).any(|text| text.starts_with("epoch 15/15 ")),
            "{replica} trained all 15 epochs:\n{run}"
        );
    }
    // The chief's curves, in TRAINCTL_TENSORBOARD_DIR: the last epoch's loss, as its log says.
    let last_loss = replica_lines(&run.stderr, "chief-0")
        .find_map(|text| text.strip_prefix("epoch 15/15 loss=")?.split(' ').next())
        .expect("the chief's last epoch")
        .to_owned();
    assert_eq!(
        sandbox.progress("digits-mwms"),
        format!("epoch 15 epoch_loss={last_loss}"),
        "{run}"
    );
    sandbox.assert_no_process_left();
}

#[test]
#[ignore = "needs the examples' Python packages: run through ./scripts/test"]
fn ps_example_succeeds() {
    let sandbox = Sandbox::new("ps");
    let run = sandbox.run("examples/tfjob-ps.yaml").finish();

    assert_eq!(run.code, Some(0), "the PS job succeeds:\n{run}");
    assert_eq!(conditions(&run.json()), tfjob_succeeded("digits-ps"));
    // The workers and the ps serve until they are told to stop: the chief's success ends the
    // job, and the runtime then stops them.
    let states: Vec<(String, String)> = summary(&run.stderr)
        .into_iter()
        .map(|(replica, row)| (replica, row.state))
        .collect();
    assert_eq!(
        states,
        [
            ("chief-0", "Succeeded"),
            ("ps-0", "Stopped"),
            ("worker-0", "Stopped"),
            ("worker-1", "Stopped"),
        ]
        .map(|(replica, state)| (replica.to_owned(), state.to_owned())),
        "{run}"
    );
    assert_accuracy(&sandbox.logs("digits-ps", "chief-0"));
    sandbox.assert_no_process_left();
}

#[test]
#[ignore = "needs the examples' Python packages: run through ./scripts/test"]
fn xgboost_example_succeeds() {
    let sandbox = Sandbox::new("xgboost");
    let run = sandbox.run("examples/xgboostjob.yaml").finish();

    assert_eq!(run.code, Some(0), "the XGBoost job succeeds:\n{run}");
    assert_eq!(
        conditions(&run.json()),
        ran_then(
            "XGBoostJob",
            "XGBoostJob digits-xgboost is created.",
            "XGBoostJob digits-xgboost is running.",
            (
                "Succeeded",
                "XGBoostJob digits-xgboost is successfully completed."
            ),
        )
    );
    assert_accuracy(&sandbox.logs("digits-xgboost", "master-0"));
    sandbox.assert_no_process_left();
}

/// The job whose settings, data and outputs are volumes: it reads the ConfigMap's epochs at
/// `/etc/config`, puts the digits in the data claim, and leaves its model and `TensorBoard`
/// event files in the claims' directories, which outlive it.
#[test]
#[ignore = "needs the examples' Python packages: run through ./scripts/test"]
fn volumes_example_keeps_its_outputs_in_claims() {
    let sandbox = Sandbox::new("volumes");
    let run = sandbox.run("examples/tfjob-volumes.yaml").finish();

    assert_eq!(run.code, Some(0), "the volumes job succeeds:\n{run}");
    assert_eq!(conditions(&run.json()), tfjob_succeeded("digits-volumes"));
    let chief_log = sandbox.logs("digits-volumes", "chief-0");
    assert_accuracy(&chief_log);
    assert!(
        chief_log.contains(
            "chief-0: epochs=8 batch_size=32 learning_rate=0.001 (from /etc/config/config.yaml)"
        ),
        "the settings come from the ConfigMap:\n{chief_log}"
    );
    assert!(
        chief_log.lines().any(|line| line.starts_with("epoch 8/8 ")),
        "{chief_log}"
    );
    // The curves in the logs claim (in the job's own directory there): the last epoch's loss.
    let last_loss = chief_log
        .lines()
        .find_map(|line| line.strip_prefix("epoch 8/8 loss=")?.split(' ').next())
        .expect("the chief's last epoch");
    assert_eq!(
        sandbox.progress("digits-volumes"),
        format!("epoch 8 epoch_loss={last_loss}")
    );
    let claims = sandbox.dir.join("state/volumes/default");
    assert!(
        claims.join("digits-data/digits.npz").is_file(),
        "the data is in its claim"
    );
    assert!(
        claims.join("digits-model/digits.keras").is_file(),
        "the model is in its claim"
    );
    for run_dir in ["train", "validation"] {
        let dir = claims.join("digits-logs/digits-volumes").join(run_dir);
        let events = std::fs::read_dir(&dir)
            .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
            .flatten()
            .filter(|entry| {
                entry
                    .file_name()
                    .to_string_lossy()
                    .starts_with("events.out.tfevents.")
            })
            .count();
        assert_eq!(events, 1, "one TensorBoard event file in {}", dir.display());
    }
    sandbox.assert_no_process_left();
}

/// `examples/python/tf_mwms.py`'s header, checked: when worker-1 dies, the chief and worker-0
/// fail on their own (their ring all-reduce loses the peer: `UnavailableError`, exit 1), the
/// runtime restarts all three in place (`OnFailure`), and they resume from the backup together
/// and finish. In practice the survivors fail within ~2 s, long before the restarted worker-1
/// has imported TensorFlow, so each replica restarts exactly once.
#[test]
#[ignore = "needs the examples' Python packages: run through ./scripts/test"]
fn mwms_survives_a_killed_worker() {
    let sandbox = Sandbox::new("mwms-kill");
    let mut job = sandbox.run("examples/tfjob-mwms.yaml");

    let killed_after = job.wait_for_line("worker-1 to finish its third epoch", |line| {
        let (replica, text) = replica_line(line)?;
        let (epoch, _) = epoch(text)?;
        (replica == "worker-1" && epoch >= 3).then_some(epoch)
    });
    let worker_1 = sandbox.training_process("worker", 1);
    signal(worker_1.pid, "KILL");
    let run = job.finish();

    assert_eq!(run.code, Some(0), "the job recovers and succeeds:\n{run}");
    assert_eq!(conditions(&run.json()), tfjob_succeeded("digits-mwms"));
    for (replica, death) in [
        ("worker-1", "was ended by SIGKILL (exit code 137)"),
        ("chief-0", "exited with code 1"),
        ("worker-0", "exited with code 1"),
    ] {
        let prefix = format!("trainctl: {replica} ");
        let restarts: Vec<&str> = run
            .stderr
            .lines()
            .filter(|line| line.starts_with(&prefix) && line.contains("; restarting it"))
            .collect();
        assert_eq!(
            restarts,
            [format!(
                "{prefix}{death}; restarting it in 1s (restartPolicy OnFailure, restart 1)"
            )],
            "{replica} fails once and is restarted in place:\n{run}"
        );
    }
    let rows = summary(&run.stderr);
    assert_eq!(rows["chief-0"].state, "Succeeded", "{run}");
    for replica in ["chief-0", "worker-0", "worker-1"] {
        assert_eq!(rows[replica].restarts, 1, "{replica}:\n{run}");
    }

    // BackupAndRestore writes at the end of every epoch, and no replica can finish epoch N
    // before the chief has saved epoch N - 1 (every step all-reduces with it): the restarted
    // replicas resume at `killed_after` or later, all at the same epoch.
    let chief_log = sandbox.logs("digits-mwms", "chief-0");
    let resumed_at = resume_epoch(&chief_log, "chief-0");
    assert!(
        (killed_after..=15).contains(&resumed_at),
        "killed after epoch {killed_after}, resumed at epoch {resumed_at}:\n{chief_log}"
    );
    for replica in ["worker-0", "worker-1"] {
        let log = sandbox.logs("digits-mwms", replica);
        assert_eq!(resume_epoch(&log, replica), resumed_at, "{log}");
        assert!(
            log.lines().any(|line| line.starts_with("epoch 15/15 ")),
            "{log}"
        );
    }
    assert_accuracy(&chief_log);
    sandbox.assert_no_process_left();
}

/// The conditions of a TFJob `name` that ran and succeeded (messages as upstream words them).
fn tfjob_succeeded(name: &str) -> Vec<harness::Condition> {
    ran_then(
        "TFJob",
        &format!("TFJob {name} is created."),
        &format!("TFJob default/{name} is running."),
        (
            "Succeeded",
            &format!("TFJob default/{name} successfully completed."),
        ),
    )
}

/// Asserts that `log` (the chief's or master's) ends training with `accuracy: 0.9…`.
fn assert_accuracy(log: &str) {
    let accuracies: Vec<f64> = log
        .lines()
        .filter_map(|line| line.strip_prefix("accuracy: "))
        .map(|value| {
            value
                .trim()
                .parse()
                .unwrap_or_else(|error| panic!("accuracy `{value}` is no number ({error})"))
        })
        .collect();
    assert!(
        matches!(accuracies[..], [accuracy] if accuracy > MIN_ACCURACY),
        "one `accuracy:` line above {MIN_ACCURACY}, got {accuracies:?} in:\n{log}"
    );
}

/// The epoch at which `replica` resumed from the backup, from its log's one
/// `<replica>: resuming from backup at epoch N` line.
fn resume_epoch(log: &str, replica: &str) -> u32 {
    let prefix = format!("{replica}: resuming from backup at epoch ");
    let epochs: Vec<&str> = log
        .lines()
        .filter_map(|line| line.strip_prefix(&prefix))
        .collect();
    let [epoch] = epochs[..] else {
        panic!("{replica} resumes from the backup exactly once, got {epochs:?}:\n{log}");
    };
    epoch.trim().parse().expect("the epoch is a number")
}

/// `(replica, text)` of a replica's output line on `run`'s stderr (`worker-1 | text`).
fn replica_line(line: &str) -> Option<(&str, &str)> {
    let (replica, text) = line.split_once(" | ")?;
    Some((replica.trim_end(), text))
}

/// The texts of `replica`'s output lines on `run`'s stderr.
fn replica_lines<'a>(stderr: &'a str, replica: &'a str) -> impl Iterator<Item = &'a str> {
    stderr.lines().filter_map(move |line| {
        let (name, text) = replica_line(line)?;
        (name == replica).then_some(text)
    })
}

/// `(N, M)` of an `epoch N/M loss=…` line.
fn epoch(text: &str) -> Option<(u32, u32)> {
    let (done, total) = text
        .strip_prefix("epoch ")?
        .split_whitespace()
        .next()?
        .split_once('/')?;
    Some((done.parse().ok()?, total.parse().ok()?))
}

/// One test's directory (its state dir and `BACKUP_DIR`), and the environment its `trainctl`
/// runs in. Dropping it kills whatever of the test is still alive and removes the directory.
struct Sandbox {
    dir: PathBuf,
    /// The virtualenv's `bin` directory.
    venv_bin: PathBuf,
}

impl Sandbox {
    /// A fresh directory for the test `name`, whose replicas run in the examples' virtualenv.
    fn new(name: &str) -> Sandbox {
        Sandbox::in_venv(name, &EXAMPLES_VENV)
    }

    /// A fresh directory for the test `name`, whose replicas run in `venv`.
    fn in_venv(name: &str, venv: &Venv) -> Sandbox {
        let Venv { variable, script } = venv;
        let venv_bin = PathBuf::from(std::env::var_os(variable).unwrap_or_else(|| {
            panic!(
                "{variable} is not set: it names the bin directory of a virtualenv with the \
                 examples' packages. Run these tests through ./scripts/test, or as \
                 `{variable}=$({script}) cargo nextest run -p trainctl --test examples \
                 --run-ignored only -j 1`"
            )
        }));
        assert!(
            venv_bin.join("python").is_file(),
            "{variable}={} has no `python`: it must be the virtualenv's bin directory",
            venv_bin.display()
        );
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("the clock is after 1970")
            .subsec_nanos();
        let dir = std::env::temp_dir().join(format!(
            "trainctl-examples-{name}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("create the test's directory");
        Sandbox { dir, venv_bin }
    }

    /// The MWMS checkpoints' directory; not created, so every run starts training afresh.
    fn backup_dir(&self) -> PathBuf {
        self.dir.join("backup")
    }

    /// `BACKUP_DIR=<ours>`: the environment entry that marks this test's processes.
    fn mark(&self) -> String {
        format!("BACKUP_DIR={}", self.backup_dir().display())
    }

    /// `trainctl --state-dir <ours> ARGS`, from the repository root, with the virtualenv first
    /// on `PATH` and this test's `BACKUP_DIR`.
    fn command(&self, args: &[&str]) -> Command {
        let path = std::env::join_paths(std::iter::once(self.venv_bin.clone()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .expect("PATH entries hold no separator");
        let mut command = Command::new(trainctl_cli_harness::binary());
        command
            .arg("--state-dir")
            .arg(self.dir.join("state"))
            .args(args)
            .current_dir(repo_root())
            .env("PATH", path)
            .env("BACKUP_DIR", self.backup_dir())
            // The examples train on the CPU; no test depends on the machine's GPUs.
            .env("TRAINCTL_GPUS", "0")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        for name in SCRUBBED_ENV {
            command.env_remove(name);
        }
        command
    }

    /// Starts `trainctl run -f MANIFEST -o json --restart-backoff 1s`.
    fn run(&self, manifest: &str) -> JobRun {
        self.run_with(manifest, &[])
    }

    /// Starts `trainctl run -f MANIFEST -o json --restart-backoff 1s EXTRA...`.
    fn run_with(&self, manifest: &str, extra: &[&str]) -> JobRun {
        JobRun::start(self.run_command(manifest, extra))
    }

    /// The command `trainctl run -f MANIFEST -o json --restart-backoff 1s EXTRA...`.
    fn run_command(&self, manifest: &str, extra: &[&str]) -> Command {
        let mut args = vec![
            "run",
            "-f",
            manifest,
            "-o",
            "json",
            "--restart-backoff",
            "1s",
        ];
        args.extend_from_slice(extra);
        self.command(&args)
    }

    /// `trainctl ARGS` run to its end, as [`Sandbox::command`] sets it up.
    fn output(&self, args: &[&str]) -> Run {
        into_run(&self.command(args).output().expect("trainctl runs"))
    }

    /// `trainctl logs JOB --replica REPLICA`: everything the replica printed, over all its
    /// restarts.
    fn logs(&self, job: &str, replica: &str) -> String {
        let run = self.output(&["logs", job, "--replica", replica]);
        assert_eq!(
            run.code,
            Some(0),
            "trainctl logs {job} --replica {replica}:\n{run}"
        );
        run.stdout
    }

    /// The PROGRESS column of `trainctl get JOB -o wide`.
    fn progress(&self, job: &str) -> String {
        let output = self
            .command(&["get", job, "-o", "wide"])
            .output()
            .expect("trainctl get runs");
        let table = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "trainctl get {job} -o wide:\n{table}"
        );
        let mut lines = table.lines();
        let header = lines.next().expect("a header");
        let column = header.find("PROGRESS").expect("a PROGRESS column");
        lines
            .next()
            .and_then(|row| row.get(column..))
            .expect("the job's row")
            .trim()
            .to_owned()
    }

    /// This test's live processes (trainctl, the replicas' keepers, the replicas).
    fn processes(&self) -> Vec<Process> {
        processes_with_env(&self.mark())
    }

    /// The Python process training as `<task_type>-<index>` (by its `TF_CONFIG` task); there
    /// must be exactly one.
    fn training_process(&self, task_type: &str, index: u32) -> Process {
        let task = format!(r#""task":{{"type":"{task_type}","index":{index}}}"#);
        let processes = self.processes();
        let found: Vec<&Process> = processes
            .iter()
            .filter(|process| process.comm.starts_with("python"))
            .filter(|process| process.var("TF_CONFIG").is_some_and(|c| c.contains(&task)))
            .collect();
        let [process] = found[..] else {
            panic!("one Python process with the TF_CONFIG task {task}, found {found:#?}");
        };
        process.clone()
    }

    /// Asserts that no process of this test outlived its `trainctl run`.
    fn assert_no_process_left(&self) {
        let left: Vec<String> = self
            .processes()
            .iter()
            .map(|process| format!("{} ({})", process.pid, process.comm))
            .collect();
        assert!(left.is_empty(), "processes left after the job: {left:?}");
    }

    /// Asserts that no process of this test outlived its stopped server, once the server's shim
    /// had the moment it takes to end by itself (it ends when it has no replica left and no
    /// server connected, after the server has exited).
    fn assert_no_process_left_once_the_shim_ends(&self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !self.processes().is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        self.assert_no_process_left();
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        // A failed test must not leave TensorFlow processes eating the machine.
        for process in self.processes() {
            signal(process.pid, "KILL");
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The repository root: the manifests' `examples/python/...` paths are relative to it.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
