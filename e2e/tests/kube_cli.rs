//! `trainctl --kube` against the real control plane: submit, get, describe, logs, wait,
//! suspend, resume and delete, through the admin kubeconfig as a user's kubectl would, with the
//! output of this machine's commands: the same job is first run here (`trainctl run`, in a
//! state directory of its own), and the cluster's tables, sections, log lines, `wait` lines
//! and exit codes are compared with the local ones, where the two can agree (docs/cluster-mode.md:
//! NODE for PID, the pods' port, the cluster's own events). Run by `scripts/e2e`.

use std::path::Path;
use std::process::{Command, Output};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::wait::await_condition;
use serde_json::json;
use trainctl_api::JobKind;
use trainctl_e2e::{
    EXIT_CODE_ANNOTATION, IMAGE, RUN_SECONDS_ANNOTATION, in_namespace, jobs, within,
};

/// The job, run here and on the cluster: two workers, each printing the two lines kwok's
/// containers print (scripts/cluster), done when both succeeded.
fn manifest() -> String {
    format!(
        "\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {{name: cli}}
spec:
  successPolicy: AllWorkers
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - name: tensorflow
            image: {IMAGE}
            command: [sh, -c, 'echo trainctl e2e log line 1; echo trainctl e2e log line 2']
"
    )
}

/// Runs `trainctl ARGS -n NAMESPACE` (the binary `scripts/e2e` built): on the cluster when
/// `state` is `None` (`--kube`), else on this machine with that state directory.
fn trainctl(state: Option<&Path>, namespace: &str, args: &[&str]) -> Output {
    let binary = std::env::var("TRAINCTL_E2E_TRAINCTL")
        .expect("TRAINCTL_E2E_TRAINCTL: the trainctl binary (scripts/e2e sets it)");
    let mut command = Command::new(binary);
    match state {
        None => command.arg("--kube"),
        Some(state) => command.arg("--state-dir").arg(state),
    };
    command
        .args(args)
        .args(["-n", namespace])
        .env("NO_COLOR", "1")
        .env_remove("TRAINCTL_KUBE")
        .output()
        .expect("trainctl runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `trainctl ARGS` and asserts it exits 0 and prints nothing on stderr; its stdout.
fn ok(state: Option<&Path>, namespace: &str, args: &[&str]) -> String {
    let output = trainctl(state, namespace, args);
    assert!(
        output.status.success() && output.stderr.is_empty(),
        "trainctl {}: {}\n{}{}",
        args.join(" "),
        output.status,
        text(&output.stdout),
        text(&output.stderr)
    );
    text(&output.stdout)
}

/// Runs `trainctl ARGS` and asserts it exits 1 with nothing on stdout; its stderr.
fn fails(state: Option<&Path>, namespace: &str, args: &[&str]) -> String {
    let output = trainctl(state, namespace, args);
    assert_eq!(output.status.code(), Some(1), "trainctl {}", args.join(" "));
    assert_eq!(text(&output.stdout), "", "trainctl {}", args.join(" "));
    text(&output.stderr)
}

/// A table as kubectl prints it, cut into cells at the header's columns. Fails unless each
/// column is as wide as its widest cell plus three spaces and every cell starts at its column.
fn cells(table: &str) -> Vec<Vec<String>> {
    let lines: Vec<Vec<char>> = table.lines().map(|line| line.chars().collect()).collect();
    let header = lines
        .first()
        .unwrap_or_else(|| panic!("no header in {table:?}"));
    // A column starts after two spaces at least (`LAST TRANSITION` holds one).
    let starts: Vec<usize> = (0..header.len())
        .filter(|&i| {
            header[i] != ' ' && (i == 0 || (i >= 2 && header[i - 1] == ' ' && header[i - 2] == ' '))
        })
        .collect();
    let rows: Vec<Vec<String>> = lines
        .iter()
        .map(|line| {
            let cut = |i: usize| starts.get(i).map_or(line.len(), |&at| at.min(line.len()));
            (0..starts.len())
                .map(|i| line[cut(i)..cut(i + 1)].iter().collect::<String>())
                .map(|cell| cell.trim_end().to_owned())
                .collect()
        })
        .collect();
    for (column, pair) in starts.windows(2).enumerate() {
        let widest = rows.iter().map(|row| row[column].len()).max().unwrap_or(0);
        assert_eq!(pair[1] - pair[0], widest + 3, "column {column} of\n{table}");
    }
    for (line, row) in lines.iter().zip(&rows) {
        for (&at, cell) in starts.iter().zip(row) {
            assert!(
                !cell.is_empty() && !cell.starts_with(' ') && (at == 0 || line[at - 1] == ' '),
                "a cell out of its column in\n{table}"
            );
        }
    }
    rows
}

/// A line of `describe` at the left margin (`Name:       cli`, `Spec:`) with the indented lines
/// under it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Block {
    /// `Name:`.
    label: String,
    /// What follows the label on its line, trimmed.
    value: String,
    /// The lines under it, their two-space indent removed.
    lines: Vec<String>,
}

/// `describe`'s output as blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Described(Vec<Block>);

impl Described {
    fn parse(described: &str) -> Described {
        let mut blocks: Vec<Block> = Vec::new();
        for line in described.lines() {
            if let Some(inner) = line.strip_prefix("  ") {
                let block = blocks.last_mut().unwrap_or_else(|| panic!("{described}"));
                block.lines.push(inner.to_owned());
            } else {
                let (label, value) = line.split_once(':').unwrap_or_else(|| panic!("{line}"));
                blocks.push(Block {
                    label: format!("{label}:"),
                    value: value.trim().to_owned(),
                    lines: Vec::new(),
                });
            }
        }
        Described(blocks)
    }

    /// The block labelled `label`.
    fn block(&self, label: &str) -> &Block {
        self.0
            .iter()
            .find(|block| block.label == label)
            .unwrap_or_else(|| panic!("no {label} in {self:?}"))
    }

    /// The labels of the blocks, but `except`.
    fn labels(&self, except: &[&str]) -> Vec<&str> {
        let labels = self.0.iter().map(|block| block.label.as_str());
        labels.filter(|label| !except.contains(label)).collect()
    }

    /// The cells of a section's table (Replicas, Conditions, Events).
    fn section(&self, label: &str) -> Vec<Vec<String>> {
        cells(&(self.block(label).lines.join("\n") + "\n"))
    }

    /// The events as `(type, reason, message)`, without their age.
    fn events(&self) -> Vec<Vec<String>> {
        let table = self.section("Events:");
        table[1..].iter().map(|row| row[1..].to_vec()).collect()
    }

    /// The conditions of the types `types` as `(type, status, reason, message)`.
    fn conditions(&self, types: &[&str]) -> Vec<Vec<String>> {
        let table = self.section("Conditions:");
        let rows = table[1..].iter();
        let rows = rows.filter(|row| types.contains(&row[0].as_str()));
        rows.map(|row| row[..4].to_vec()).collect()
    }
}

/// Holds when `text` matches the shape of `shape`: digits for `9`, anything else as it is.
fn shaped(text: &str, shape: &str) -> bool {
    text.len() == shape.len()
        && text
            .chars()
            .zip(shape.chars())
            .all(|(t, s)| if s == '9' { t.is_ascii_digit() } else { t == s })
}

/// An age or a duration: `5s`, `3m`.
fn is_age(cell: &str) -> bool {
    let digits = cell.trim_end_matches(['s', 'm', 'h', 'd']);
    cell.len() == digits.len() + 1
        && !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit())
}

/// A time as describe shows it.
const TIME: &str = "9999-99-99T99:99:99Z";

/// What `wait` prints when the condition is met.
const MET: &str = "tfjob.kubeflow.org/cli condition met\n";

/// What this machine printed of the job, run to its end.
struct Local {
    /// `get`.
    get: Vec<Vec<String>>,
    /// `get -o wide`.
    wide: Vec<Vec<String>>,
    /// `describe cli`.
    described: Described,
    /// `logs cli`.
    logs: String,
    /// `wait cli --for condition=Failed`'s error.
    never: String,
}

/// `wait` for a condition the finished job will never have.
const NEVER: [&str; 6] = [
    "wait",
    "cli",
    "--for",
    "condition=Failed",
    "--timeout",
    "5s",
];

/// Runs the job here to its end (with the state directory `state`) and reads what the
/// commands print of it.
fn run_here(state: &Path, namespace: &str, file: &str) -> Local {
    let here = Some(state);
    let ran = trainctl(here, namespace, &["run", "-q", "-f", file]);
    assert!(ran.status.success(), "trainctl run: {ran:?}");
    let succeeded = ["wait", "cli", "--for", "condition=Succeeded"];
    assert_eq!(ok(here, namespace, &succeeded), MET);
    let local = Local {
        get: cells(&ok(here, namespace, &["get"])),
        wide: cells(&ok(here, namespace, &["get", "-o", "wide"])),
        described: Described::parse(&ok(here, namespace, &["describe", "cli"])),
        logs: ok(here, namespace, &["logs", "cli"]),
        never: fails(here, namespace, &NEVER),
    };
    assert_eq!(
        local.never,
        format!(
            "error: tfjobs/cli finished with condition Succeeded (TFJob {namespace}/cli \
             successfully completed.), so condition=Failed will never be met\n"
        )
    );
    assert_eq!(
        local.logs,
        "worker-0 | trainctl e2e log line 1\nworker-0 | trainctl e2e log line 2\n\
         worker-1 | trainctl e2e log line 1\nworker-1 | trainctl e2e log line 2\n"
    );
    assert_eq!(
        fails(here, namespace, &["get", "tfjob", "gone"]),
        format!("error: tfjob \"gone\" not found in namespace \"{namespace}\"\n")
    );
    local
}

/// `get` and `get -o wide` on the cluster: the headers, the row of the job in `state` (ages
/// aside) and, when `local` is given, the same cells as its.
fn assert_get(namespace: &str, state: &str, local: Option<&Local>) {
    let table = cells(&ok(None, namespace, &["get"]));
    assert_eq!(table[0], ["NAME", "STATE", "AGE"]);
    assert_eq!(table[1][..2], ["tfjob/cli", state]);
    assert!(is_age(&table[1][2]), "{table:?}");
    assert_eq!(table.len(), 2);
    let wide = cells(&ok(None, namespace, &["get", "-o", "wide"]));
    let header = [
        "NAME", "STATE", "AGE", "REPLICAS", "RESTARTS", "DURATION", "REASON", "PROGRESS",
    ];
    assert_eq!(wide[0], header);
    assert_eq!(wide[1][..2], ["tfjob/cli", state]);
    assert_eq!(wide[1][3..5], ["Worker:2", "0"]);
    assert_eq!(wide[1][6], "-", "it does not wait: {wide:?}");
    assert_eq!(
        wide[1][7], "-",
        "a cluster's event files are not read: {wide:?}"
    );
    assert!(is_age(&wide[1][2]) && is_age(&wide[1][5]), "{wide:?}");
    let named = cells(&ok(None, namespace, &["get", "tfjob", "cli"]));
    assert_eq!(named[1][..2], ["cli", state]);
    // kubectl's habits, on the cluster as here: KIND/NAME, `-o name`, a JSONPath template, a
    // job looked for in another namespace.
    assert_eq!(
        ok(None, namespace, &["get", "tfjob/cli", "-o", "name"]),
        "tfjob.kubeflow.org/cli
"
    );
    assert_eq!(
        ok(
            None,
            namespace,
            &["get", "-o", "jsonpath={.items[*].metadata.name}"]
        ),
        "cli"
    );
    assert_eq!(
        fails(None, "default", &["get", "cli"]),
        format!(
            "error: job \"cli\" not found in namespace \"default\" (found in namespace \
             {namespace}: add -n {namespace}, or -A)\n"
        )
    );
    if let Some(local) = local {
        assert_eq!(table[0], local.get[0]);
        assert_eq!(table[1][..2], local.get[1][..2]);
        assert_eq!(wide[0], local.wide[0]);
        assert_eq!(wide[1][..2], local.wide[1][..2]);
        assert_eq!(wide[1][3..5], local.wide[1][3..5]);
    }
}

/// The block of a local `describe` that a cluster's has not: where the job's TensorBoard event
/// files are on this machine (a cluster's are in its pods' volumes, not read).
const LOCAL_ONLY: &str = "TensorBoard:";

/// While the job runs on the cluster: `get`, `describe` (the local blocks but those of a
/// finished job, the same spec, the pods as replicas), `logs` as here, and a `wait` that times
/// out.
fn assert_running(namespace: &str, local: &Local) {
    assert_get(namespace, "Running", None);
    let described = Described::parse(&ok(None, namespace, &["describe", "cli"]));
    let unfinished = ["Completed:", "Duration:", "Events:", LOCAL_ONLY];
    assert_eq!(
        described.labels(&["Events:"]),
        local.described.labels(&unfinished)
    );
    assert_eq!(described.block("State:").value, "Running");
    assert_eq!(described.block("Spec:"), local.described.block("Spec:"));
    let replicas = described.section("Replicas:");
    assert_eq!(replicas.len(), 3, "{replicas:?}");
    for (index, row) in replicas[1..].iter().enumerate() {
        let name = format!("worker-{index}");
        assert_eq!(row[..4], [name.as_str(), "Running", "-", "0"]);
        assert_eq!(row[4..7], ["kwok-node-0", "2222", "-"]);
        assert!(shaped(&row[7], TIME), "{row:?}");
    }
    let header = &described.section("Conditions:")[0];
    assert_eq!(header, &local.described.section("Conditions:")[0]);
    let running = format!("TFJob {namespace}/cli is running.");
    assert_eq!(
        described.conditions(&["Created", "Running"]),
        [
            ["Created", "True", "TFJobCreated", "TFJob cli is created."],
            ["Running", "True", "TFJobRunning", &running],
        ]
    );
    assert_eq!(ok(None, namespace, &["logs", "cli"]), local.logs);
    let not_yet = [
        "wait",
        "cli",
        "--for",
        "condition=Succeeded",
        "--timeout",
        "1s",
    ];
    assert_eq!(
        fails(None, namespace, &not_yet),
        "error: timed out waiting for the condition on tfjobs/cli\n"
    );
}

/// Once the job succeeded on the cluster: the same output as here, where the two can agree.
async fn assert_succeeded(namespace: &str, local: &Local) {
    assert_eq!(fails(None, namespace, &NEVER), local.never);
    assert_get(namespace, "Succeeded", Some(local));
    // Events are written after the status: described again until the local ones are there.
    let local_events = local.described.events();
    let described = within("the cluster's events", async {
        loop {
            let described = Described::parse(&ok(None, namespace, &["describe", "cli"]));
            let events = described.events();
            if local_events.iter().all(|event| events.contains(event)) {
                break described;
            }
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
    })
    .await;
    assert_eq!(described.labels(&[]), local.described.labels(&[LOCAL_ONLY]));
    for label in ["Name:", "Namespace:", "Kind:", "State:", "Spec:"] {
        assert_eq!(described.block(label), local.described.block(label));
    }
    let replicas = described.section("Replicas:");
    let local_replicas = local.described.section("Replicas:");
    let mut header = local_replicas[0].clone();
    "NODE".clone_into(&mut header[4]);
    assert_eq!(replicas[0], header, "NODE for PID");
    assert_eq!(replicas.len(), local_replicas.len());
    for (row, local_row) in replicas[1..].iter().zip(&local_replicas[1..]) {
        assert_eq!(row[..4], local_row[..4], "REPLICA STATE EXIT RESTARTS");
        assert_eq!(row[4..7], ["kwok-node-0", "2222", "-"]);
        assert_eq!(row[6], local_row[6], "GPUS");
        assert!(shaped(&row[7], TIME) && shaped(&local_row[7], TIME));
    }
    let header = &described.section("Conditions:")[0];
    assert_eq!(header, &local.described.section("Conditions:")[0]);
    // The cluster's job has a Suspended condition besides.
    let local_conditions = local
        .described
        .conditions(&["Created", "Running", "Succeeded"]);
    let types: Vec<&str> = local_conditions.iter().map(|row| row[0].as_str()).collect();
    assert_eq!(types, ["Created", "Running", "Succeeded"]);
    assert_eq!(described.conditions(&types), local_conditions);
    let header = &described.section("Events:")[0];
    assert_eq!(header, &local.described.section("Events:")[0]);
    assert_eq!(ok(None, namespace, &["logs", "cli"]), local.logs);
    // A pod's name is its job and replica, as `kubectl logs` takes it.
    assert_eq!(
        ok(None, namespace, &["logs", "cli-worker-1"]),
        "trainctl e2e log line 1\ntrainctl e2e log line 2\n"
    );
}

/// Waits until the pod's phase is `phase`, or (`None`) the pod is gone.
async fn await_pod(pods: &Api<Pod>, name: &str, phase: Option<&'static str>) {
    let reached = move |pod: Option<&Pod>| match phase {
        None => pod.is_none(),
        Some(phase) => pod.and_then(|pod| pod.status.as_ref()?.phase.as_deref()) == Some(phase),
    };
    let what = format!("{name} to be {}", phase.unwrap_or("gone"));
    within(&what, await_condition(pods.clone(), name, reached))
        .await
        .expect("the watch works");
}

/// A job's whole life through `trainctl --kube`, next to the same job run on this machine:
/// submitted, running with its pods, listed, described, its logs prefixed by replica, waited
/// on, suspended (its pods go) and resumed, succeeded, deleted, then not found.
#[tokio::test]
#[ignore = "needs the e2e control plane: scripts/e2e"]
async fn trainctl_kube_drives_a_job_through_its_life() {
    in_namespace("kube-cli", |client, namespace| async move {
        let folder = std::env::temp_dir().join(&namespace);
        std::fs::create_dir_all(&folder).expect("a temporary folder");
        let file = folder.join("cli.yaml");
        std::fs::write(&file, manifest()).expect("a manifest");
        let file = file.to_str().expect("a UTF-8 path").to_owned();
        let ns = namespace.as_str();
        let local = run_here(&folder.join("state"), ns, &file);

        let submitted = ok(None, ns, &["submit", "-f", &file]);
        assert_eq!(submitted, "tfjob.kubeflow.org/cli submitted (Pending)\n");
        let running = [
            "wait",
            "cli",
            "--for",
            "condition=Running",
            "--timeout",
            "60s",
        ];
        assert_eq!(ok(None, ns, &running), MET);
        let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
        for pod in ["cli-worker-0", "cli-worker-1"] {
            await_pod(&pods, pod, Some("Running")).await;
        }
        assert_running(ns, &local);

        // Suspended, its pods go; while suspended, its workers are told to exit 0 after 5 s.
        let suspended = ok(None, ns, &["suspend", "cli"]);
        assert_eq!(suspended, "tfjob.kubeflow.org/cli suspended\n");
        let suspended = [
            "wait",
            "cli",
            "--for",
            "condition=Suspended",
            "--timeout",
            "60s",
        ];
        assert_eq!(ok(None, ns, &suspended), MET);
        for pod in ["cli-worker-0", "cli-worker-1"] {
            await_pod(&pods, pod, None).await;
        }
        assert_get(ns, "Suspended", None);
        let annotations = json!({EXIT_CODE_ANNOTATION: "0", RUN_SECONDS_ANNOTATION: "5"});
        let template = json!({"metadata": {"annotations": annotations}});
        let exit = json!({"spec": {"tfReplicaSpecs": {"Worker": {"template": template}}}});
        jobs(&client, ns, JobKind::TFJob)
            .patch("cli", &PatchParams::default(), &Patch::Merge(&exit))
            .await
            .expect("the template patched");
        let resumed = ok(None, ns, &["resume", "cli"]);
        assert_eq!(resumed, "tfjob.kubeflow.org/cli resumed\n");
        let succeeded = [
            "wait",
            "cli",
            "--for",
            "condition=Succeeded",
            "--timeout",
            "90s",
        ];
        assert_eq!(ok(None, ns, &succeeded), MET);
        assert_succeeded(ns, &local).await;

        let deleted = ok(None, ns, &["delete", "cli"]);
        assert_eq!(deleted, "tfjob.kubeflow.org/cli deleted\n");
        // Deleted in the background (no finalizer): gone at once, so there is nothing to wait
        // for and nothing to say, as on this machine.
        let gone = ["wait", "cli", "--for", "delete", "--timeout", "60s"];
        assert_eq!(ok(None, ns, &gone), "");
        assert_eq!(
            fails(None, ns, &["get", "tfjob", "cli"]),
            format!("error: tfjob \"cli\" not found in namespace \"{ns}\"\n")
        );
        let listed = trainctl(None, ns, &["get"]);
        assert!(
            listed.status.success() && listed.stdout.is_empty(),
            "{listed:?}"
        );
        let none = format!("No jobs found in {ns} namespace.\n");
        assert_eq!(text(&listed.stderr), none);
        std::fs::remove_dir_all(&folder).expect("the temporary folder removed");
    })
    .await;
}
