//! PyTorch for real, with torch from the Python Package Index (`scripts/python-env torch`, whose `bin` directory
//! `TRAINCTL_TORCH_PATH` names): our users' PyTorchJob (a Master and 3 Workers, one GPU each,
//! each started with `python -m torch.distributed.launch /workspace/train.py`, `nprocPerNode`
//! left to its default) through `trainctl run` and through the server, an elastic job under
//! torchrun that loses a Worker mid-run, and `examples/pytorchjob-ddp.yaml`.

use std::collections::BTreeMap;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{
    Sandbox, Venv, assert_accuracy, conditions, epoch, ran_then, replica_line, replica_lines,
    repo_root, signal, summary,
};

/// Our users' PyTorchJob, as their document has it.
const USERS_JOB: &str = "testdata/fixtures/seeds/distributed-pytorch-training.yaml";
/// Its name, and its replicas in rank order (node rank 0 is the master).
const USERS_JOB_NAME: &str = "distributed-pytorch-training";
const USERS_REPLICAS: [&str; 4] = ["master-0", "worker-0", "worker-1", "worker-2"];
/// The epochs `examples/python/pytorch_ddp.py` trains by default.
const DDP_EPOCHS: u32 = 20;

/// The PyTorch virtualenv: torch and scikit-learn.
const TORCH_VENV: Venv = Venv {
    variable: "TRAINCTL_TORCH_PATH",
    script: "scripts/python-env torch",
};

/// A sandbox with the PyTorch virtualenv.
fn torch_sandbox(name: &str) -> Sandbox {
    Sandbox::in_venv(name, &TORCH_VENV)
}

/// Our users' job, unchanged but for what this machine needs to have `/workspace/train.py`:
/// every replica mounts the sandbox's `workspace` directory (holding
/// `examples/python/pytorch_ddp.py` as `train.py`) there, as a `hostPath` volume. Written as
/// JSON (which is YAML) to the sandbox; its path.
fn users_job(sandbox: &Sandbox) -> String {
    let workspace = sandbox.dir.join("workspace");
    std::fs::create_dir_all(&workspace).expect("the workspace directory");
    std::fs::copy(
        repo_root().join("examples/python/pytorch_ddp.py"),
        workspace.join("train.py"),
    )
    .expect("train.py in the workspace");
    let text = std::fs::read_to_string(repo_root().join(USERS_JOB)).expect("the users' job");
    let mut job: Value = serde_saphyr::from_str(&text).expect("the users' job is YAML");
    let specs = job["spec"]["pytorchReplicaSpecs"]
        .as_object_mut()
        .expect("replica specs");
    for spec in specs.values_mut() {
        let pod = &mut spec["template"]["spec"];
        pod["volumes"] = json!([{"name": "workspace", "hostPath": {"path": workspace}}]);
        pod["containers"][0]["volumeMounts"] =
            json!([{"name": "workspace", "mountPath": "/workspace"}]);
    }
    let path = sandbox.dir.join("job.yaml");
    std::fs::write(&path, job.to_string()).expect("write the job");
    path.to_string_lossy().into_owned()
}

/// What our users' job must have done, from each replica's log: every process that
/// `torch.distributed.launch` started joined one process group whose ranks are the replicas'
/// (`nprocPerNode` processes each, in node-rank order), trained every epoch with a falling
/// loss, and the master reported the held-out accuracy.
fn assert_users_job_trained(logs: &BTreeMap<&str, String>) {
    let ranks: BTreeMap<&str, Vec<(u32, u32)>> = USERS_REPLICAS
        .iter()
        .map(|replica| {
            let mut joined: Vec<(u32, u32)> = logs[replica]
                .lines()
                .filter_map(|line| {
                    let rest = line.strip_prefix("rank ")?;
                    let (rank, world) = rest.split_once(':')?.0.split_once('/')?;
                    Some((rank.parse().ok()?, world.parse().ok()?))
                })
                .collect();
            joined.sort_unstable();
            (*replica, joined)
        })
        .collect();
    let per_node = ranks["master-0"].len();
    assert!(per_node >= 1, "the master's processes joined: {ranks:?}");
    let world = u32::try_from(per_node * USERS_REPLICAS.len()).expect("a small world");
    for (node, replica) in USERS_REPLICAS.iter().enumerate() {
        let first = u32::try_from(node * per_node).expect("a small rank");
        let expected: Vec<(u32, u32)> = (first..first + world / 4)
            .map(|rank| (rank, world))
            .collect();
        assert_eq!(ranks[replica], expected, "{replica}'s ranks: {ranks:?}");
        let losses: Vec<f64> = logs[replica]
            .lines()
            .filter(|line| epoch(line).is_some())
            .filter_map(|line| line.split("loss=").nth(1)?.split(' ').next()?.parse().ok())
            .collect();
        assert_eq!(
            losses.len(),
            per_node * DDP_EPOCHS as usize,
            "{replica}: every process trains every epoch:\n{}",
            logs[replica]
        );
        assert!(
            losses[losses.len() - 1] < losses[0] / 4.0,
            "{replica}'s loss falls: {losses:?}"
        );
    }
    assert_accuracy(&logs["master-0"]);
}

/// Our users' job through `trainctl run --gpus 4`: Succeeded, one GPU each, every rank trained.
#[test]
#[ignore = "needs torch: run through ./scripts/test"]
fn users_pytorch_job_runs_with_torch_distributed_launch() {
    let sandbox = torch_sandbox("pytorch-users");
    let job = users_job(&sandbox);
    let run = sandbox.run_with(&job, &["--gpus", "4"]).finish();

    assert_eq!(run.code, Some(0), "the users' job succeeds:\n{run}");
    assert_eq!(
        conditions(&run.json()),
        ran_then(
            "PyTorchJob",
            &format!("PyTorchJob {USERS_JOB_NAME} is created."),
            &format!("PyTorchJob {USERS_JOB_NAME} is running."),
            (
                "Succeeded",
                &format!("PyTorchJob {USERS_JOB_NAME} is successfully completed."),
            ),
        ),
        "{run}"
    );
    let rows = summary(&run.stderr);
    let gpus: Vec<(&str, &str)> = USERS_REPLICAS
        .iter()
        .map(|replica| (*replica, rows[*replica].gpus.as_str()))
        .collect();
    assert_eq!(
        gpus,
        [
            ("master-0", "0"),
            ("worker-0", "1"),
            ("worker-1", "2"),
            ("worker-2", "3")
        ],
        "{run}"
    );
    let logs = USERS_REPLICAS
        .iter()
        .map(|replica| (*replica, sandbox.logs(USERS_JOB_NAME, replica)))
        .collect();
    assert_users_job_trained(&logs);
    sandbox.assert_no_process_left();
}

/// Our users' job submitted to `trainctl server --gpus 4` and waited for: the same training.
#[test]
#[ignore = "needs torch: run through ./scripts/test"]
fn users_pytorch_job_runs_through_the_server() {
    let sandbox = torch_sandbox("pytorch-server");
    let job = users_job(&sandbox);
    let mut server = sandbox.start_server(&["--gpus", "4"], &[]);
    let submitted = sandbox.output(&["submit", "-f", &job, "--wait"]);

    assert_eq!(submitted.code, Some(0), "submit --wait:\n{submitted}");
    assert!(
        submitted
            .stdout
            .lines()
            .chain(submitted.stderr.lines())
            .any(|line| line.contains(USERS_JOB_NAME) && line.contains("Succeeded")),
        "submit --wait says the job succeeded:\n{submitted}"
    );
    let logs = USERS_REPLICAS
        .iter()
        .map(|replica| (*replica, sandbox.logs(USERS_JOB_NAME, replica)))
        .collect();
    assert_users_job_trained(&logs);
    stop_server(&mut server);
    sandbox.assert_no_process_left_once_the_shim_ends();
}

/// `examples/pytorchjob-ddp.yaml`, as its comment says to run it: the master and the worker
/// train every epoch together and the master reports the accuracy.
#[test]
#[ignore = "needs torch: run through ./scripts/test"]
fn ddp_example_succeeds() {
    let sandbox = torch_sandbox("pytorch-ddp");
    let run = sandbox.run("examples/pytorchjob-ddp.yaml").finish();

    assert_eq!(run.code, Some(0), "the DDP job succeeds:\n{run}");
    assert_eq!(
        conditions(&run.json()),
        ran_then(
            "PyTorchJob",
            "PyTorchJob digits-ddp is created.",
            "PyTorchJob digits-ddp is running.",
            (
                "Succeeded",
                "PyTorchJob digits-ddp is successfully completed."
            ),
        ),
        "{run}"
    );
    for replica in ["master-0", "worker-0"] {
        let last = format!("epoch {DDP_EPOCHS}/{DDP_EPOCHS} ");
        assert!(
            replica_lines(&run.stderr, replica).any(|text| text.starts_with(&last)),
            "{replica} trained every epoch:\n{run}"
        );
    }
    assert_accuracy(&sandbox.logs("digits-ddp", "master-0"));
    sandbox.assert_no_process_left();
}

/// `examples/pytorchjob-ddp.yaml` submitted to the server and waited for: the same training.
#[test]
#[ignore = "needs torch: run through ./scripts/test"]
fn ddp_example_succeeds_through_the_server() {
    let sandbox = torch_sandbox("pytorch-ddp-server");
    let mut server = sandbox.start_server(&[], &[]);
    let submitted = sandbox.output(&["submit", "-f", "examples/pytorchjob-ddp.yaml", "--wait"]);

    assert_eq!(submitted.code, Some(0), "submit --wait:\n{submitted}");
    for replica in ["master-0", "worker-0"] {
        let log = sandbox.logs("digits-ddp", replica);
        let last = format!("epoch {DDP_EPOCHS}/{DDP_EPOCHS} ");
        assert!(
            log.lines().any(|line| line.starts_with(&last)),
            "{replica} trained every epoch:\n{log}"
        );
    }
    assert_accuracy(&sandbox.logs("digits-ddp", "master-0"));
    stop_server(&mut server);
    sandbox.assert_no_process_left_once_the_shim_ends();
}

/// The epochs the elastic tests train: enough that worker-2 is killed mid-run.
const ELASTIC_EPOCHS: u32 = 60;
/// The elastic example's Workers.
const ELASTIC_REPLICAS: [&str; 3] = ["worker-0", "worker-1", "worker-2"];

/// `examples/pytorchjob-elastic.yaml` (three Workers under torchrun, `elasticPolicy` 2:3,
/// `maxRestarts` 0) with worker-2 killed (its torchrun, `kill -9`) after its fifth epoch: the
/// survivors' training fails, their torchrun gives up, trainctl restarts every Worker
/// (`OnFailure`), they meet in a fresh rendezvous and resume from the checkpoint, no earlier
/// than the epoch the kill interrupted; the job succeeds with the accuracy the example promises.
#[test]
#[ignore = "needs torch: run through ./scripts/test"]
fn elastic_example_survives_a_killed_worker() {
    let sandbox = torch_sandbox("pytorch-elastic");
    let mut job = sandbox.run_elastic();

    let killed_after = job.wait_for_line("worker-2 to finish its fifth epoch", |line| {
        let (replica, text) = replica_line(line)?;
        let (done, _) = epoch(text)?;
        (replica == "worker-2" && done >= 5).then_some(done)
    });
    signal(sandbox.torchrun_of("digits-elastic-worker-2"), "KILL");
    let run = job.finish();

    assert_eq!(
        run.code,
        Some(0),
        "the elastic job recovers and succeeds:\n{run}"
    );
    let first_restart = run
        .stderr
        .lines()
        .find(|line| line.starts_with("trainctl: ") && line.contains("; restarting it"));
    assert_eq!(
        first_restart,
        Some(
            "trainctl: worker-2 was ended by SIGKILL (exit code 137); restarting it in 1s \
             (restartPolicy OnFailure, restart 1)"
        ),
        "{run}"
    );
    let rows = summary(&run.stderr);
    for replica in ELASTIC_REPLICAS {
        assert!(
            rows[replica].restarts >= 1,
            "{replica} is restarted:\n{run}"
        );
    }
    sandbox.assert_elastic_recovered(killed_after);
}

/// The elastic example submitted to the server, worker-2 killed the same way: the job recovers
/// and succeeds the same way (`trainctl wait` for `Succeeded`).
#[test]
#[ignore = "needs torch: run through ./scripts/test"]
fn elastic_example_survives_a_killed_worker_through_the_server() {
    let sandbox = torch_sandbox("pytorch-elastic-server");
    let checkpoints = sandbox
        .dir
        .join("checkpoint")
        .to_string_lossy()
        .into_owned();
    let epochs = ELASTIC_EPOCHS.to_string();
    let mut server = sandbox.start_server(
        &["--restart-backoff", "1s"],
        &[("EPOCHS", &epochs), ("CHECKPOINT_DIR", &checkpoints)],
    );
    let submitted = sandbox.output(&["submit", "-f", "examples/pytorchjob-elastic.yaml"]);
    assert_eq!(submitted.code, Some(0), "submit:\n{submitted}");

    let started = Instant::now();
    let killed_after = loop {
        let log = sandbox.output(&["logs", "digits-elastic", "--replica", "worker-2"]);
        if let Some(done) = log
            .stdout
            .lines()
            .filter_map(epoch)
            .map(|(done, _)| done)
            .max()
            && done >= 5
        {
            break done;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "worker-2 finishes its fifth epoch within 120 s:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    signal(sandbox.torchrun_of("digits-elastic-worker-2"), "KILL");
    let waited = sandbox.output(&[
        "wait",
        "pytorchjob/digits-elastic",
        "--for",
        "condition=Succeeded",
        "--timeout",
        "240s",
    ]);

    assert_eq!(waited.code, Some(0), "the job succeeds:\n{waited}");
    sandbox.assert_elastic_recovered(killed_after);
    stop_server(&mut server);
    sandbox.assert_no_process_left_once_the_shim_ends();
}

/// Stops `server` (`SIGTERM`) and waits for it: it exits 0.
fn stop_server(server: &mut Child) {
    signal(server.id(), "TERM");
    let status = server.wait().expect("the server exits");
    assert!(status.success(), "the server stops cleanly: {status}");
}

impl Sandbox {
    /// Starts `trainctl server EXTRA...` on this sandbox's state directory, with `env` besides
    /// (its replicas inherit it, and the virtualenv on `PATH`), and waits until it serves.
    fn start_server(&self, extra: &[&str], env: &[(&str, &str)]) -> Child {
        let mut args = vec!["server"];
        args.extend_from_slice(extra);
        let log = std::fs::File::create(self.dir.join("server.log")).expect("the server's log");
        let mut command = self.command(&args);
        command.envs(env.iter().copied());
        let server = command
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("the server starts");
        let address = self.dir.join("state/server.json");
        let started = Instant::now();
        while !address.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the server writes {} within 30 s",
                address.display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    /// Starts `examples/pytorchjob-elastic.yaml` for [`ELASTIC_EPOCHS`], its checkpoints in
    /// this sandbox.
    fn run_elastic(&self) -> super::JobRun {
        let mut command = self.run_command("examples/pytorchjob-elastic.yaml", &[]);
        command
            .env("EPOCHS", ELASTIC_EPOCHS.to_string())
            .env("CHECKPOINT_DIR", self.dir.join("checkpoint"));
        super::JobRun::start(command)
    }

    /// Asserts, from the logs of the elastic example's Workers, that each started at epoch 1,
    /// resumed at the same epoch, no earlier than `killed_after`, and trained to the end; and
    /// that rank 0 of the last round, whichever Worker it was, reported the accuracy.
    fn assert_elastic_recovered(&self, killed_after: u32) {
        let logs: Vec<String> = ELASTIC_REPLICAS
            .iter()
            .map(|replica| self.logs("digits-elastic", replica))
            .collect();
        let mut resumed_at = Vec::new();
        for (replica, log) in ELASTIC_REPLICAS.iter().zip(&logs) {
            // Each start's first line: `round R: world W, resuming at epoch E`.
            let starts: Vec<u32> = log
                .lines()
                .filter_map(|line| line.split("resuming at epoch ").nth(1)?.parse().ok())
                .collect();
            let [1, .., last] = starts[..] else {
                panic!("{replica} starts at epoch 1 and resumes: {starts:?}\n{log}");
            };
            resumed_at.push(last);
            let last_epoch = format!("epoch {ELASTIC_EPOCHS}/{ELASTIC_EPOCHS} ");
            assert!(
                log.lines().any(|line| line.starts_with(&last_epoch)),
                "{replica} trained to the end:\n{log}"
            );
        }
        assert!(
            resumed_at.iter().all(|&epoch| epoch == resumed_at[0])
                && (killed_after..=ELASTIC_EPOCHS).contains(&resumed_at[0]),
            "killed after epoch {killed_after}, the Workers resumed at {resumed_at:?}"
        );
        assert_accuracy(&logs.concat());
    }

    /// The pid of the torchrun agent of the pod `pod` (its `POD_NAME`): the replica's main
    /// process, which torchrun renames `pt_elastic`.
    fn torchrun_of(&self, pod: &str) -> u32 {
        let agents: Vec<u32> = self
            .processes()
            .iter()
            .filter(|process| process.comm == "pt_elastic" && process.var("POD_NAME") == Some(pod))
            .map(|process| process.pid)
            .collect();
        let [agent] = agents[..] else {
            panic!("one torchrun agent of {pod}, found {agents:?}");
        };
        agent
    }
}
