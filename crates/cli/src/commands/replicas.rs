//! `trainctl get replicas [JOB]`: the replicas of the jobs in the state directory, as
//! `kubectl get pods` lists pods, selected by job and by their pods' labels (`-l`).

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::bail;
use jiff::Timestamp;
use trainctl_local::store::{JobRecord, ReplicaRecord, Store};

use crate::backend::Local;
use crate::backend::local::records;
use crate::cli::{JobName, ReplicasArgs, ReplicasFormat};
use crate::paint;
use crate::target::{DEFAULT_NAMESPACE, Target};
use crate::view::replicas::{JobReplica, table};

/// The words that make `get` list replicas rather than jobs (`get replicas`, `get pods`...).
pub const RESOURCE_NAMES: [&str; 5] = ["replicas", "replica", "pods", "pod", "po"];

/// The jobs `job` names in `namespace` (every namespace when `None`): one, else an error that
/// says it was not found (or, in one namespace, that several kinds have a job of that name and
/// which to say). `command` is the subcommand, for the hint.
pub fn named_jobs(
    store: &Store,
    job: &JobName,
    namespace: Option<&str>,
    command: &str,
) -> anyhow::Result<Vec<JobRecord>> {
    if let Some(namespace) = namespace {
        let target = Target {
            kind: job.kind,
            name: &job.name,
            namespace,
        };
        return Ok(vec![records::get(store, &target, command)?]);
    }
    let mut jobs = store.jobs(None, job.kind)?;
    jobs.retain(|record| record.name == job.name);
    if jobs.is_empty() {
        bail!(
            "{} \"{}\" not found in any namespace (see `trainctl get -A`)",
            job.kind.map_or("job", |kind| kind.singular()),
            job.name
        );
    }
    Ok(jobs)
}

/// Lists the replicas; an error when the job named does not exist. No replica is no error
/// (exit 0), as kubectl says of an empty list.
pub fn run(args: &ReplicasArgs, local: &Local) -> anyhow::Result<ExitCode> {
    match listing(args, local.store()?, Timestamp::now())? {
        Listing::Table(table) => io::stdout().lock().write_all(table.as_bytes())?,
        Listing::Empty(message) => eprintln!("{message}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// What `get replicas` prints.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Listing {
    /// The table, on stdout.
    Table(String),
    /// That no replica was found, on stderr.
    Empty(String),
}

/// The replicas `args` select in `store`, ages counted up to `now`.
fn listing(args: &ReplicasArgs, store: &Store, now: Timestamp) -> anyhow::Result<Listing> {
    let namespace = args.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
    let scope = (!args.all_namespaces).then_some(namespace);
    let jobs: Vec<JobRecord> = match &args.job {
        Some(job) => named_jobs(store, job, scope, "get replicas")?,
        None => store.jobs(scope, None)?,
    };
    let replicas: Vec<(&JobRecord, Vec<ReplicaRecord>)> = jobs
        .iter()
        .map(|job| Ok((job, store.replicas(&job.uid)?)))
        .collect::<anyhow::Result<_>>()?;
    let selected: Vec<JobReplica<'_>> = replicas
        .iter()
        .flat_map(|(job, replicas)| {
            replicas
                .iter()
                .map(move |replica| JobReplica { job, replica })
        })
        .filter(|replica| {
            args.selector
                .as_ref()
                .is_none_or(|selector| selector.matches(&replica.labels()))
        })
        .collect();
    if selected.is_empty() {
        return Ok(Listing::Empty(match scope {
            Some(namespace) => format!("No resources found in {namespace} namespace."),
            None => "No resources found".to_owned(),
        }));
    }
    let wide = args.output == Some(ReplicasFormat::Wide);
    let table = table(&selected, args.all_namespaces, wide, now);
    Ok(Listing::Table(if paint::stdout_takes_colour() {
        table.render_painted(paint::state_colour)
    } else {
        table.render()
    }))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use jiff::SignedDuration;
    use trainctl_api::{ReplicaType, manifest};
    use trainctl_local::store::ReplicaState;

    use clap::Parser as _;

    use super::*;

    /// A TFJob `name` in `namespace` with a chief and two workers, recorded with its replicas:
    /// the chief succeeded, the workers run.
    fn record(store: &mut Store, namespace: &str, name: &str, now: Timestamp) {
        let yaml = format!(
            "apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  tfReplicaSpecs:
    Chief:
      template: {{spec: {{containers: [{{name: tensorflow, image: tf}}]}}}}
    Worker:
      replicas: 2
      template:
        metadata: {{labels: {{team: vision}}}}
        spec: {{containers: [{{name: tensorflow, image: tf}}]}}
"
        );
        let mut loaded = manifest::load_str("job.yaml", &yaml);
        assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
        let job = loaded.jobs.remove(0).job;
        let uid = format!("{namespace}-{name}");
        let created = now - SignedDuration::from_secs(90);
        let _ = store
            .insert_job(&JobRecord {
                uid: uid.clone(),
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                kind: job.kind(),
                job,
                retired_restarts: 0,
                owner: None,
                created_at: created,
                updated_at: created,
                finished: false,
                companions: Vec::new(),
            })
            .expect("record the job");
        for (replica_type, index, state) in [
            (ReplicaType::Chief, 0, ReplicaState::Succeeded),
            (ReplicaType::Worker, 0, ReplicaState::Running),
            (ReplicaType::Worker, 1, ReplicaState::Running),
        ] {
            store
                .upsert_replica(&ReplicaRecord {
                    job_uid: uid.clone(),
                    replica_type,
                    index,
                    state,
                    pid: None,
                    port: None,
                    gpus: Vec::new(),
                    restarts: 0,
                    pod_restarts: 0,
                    exit_code: None,
                    reason: None,
                    started_at: Some(created),
                    finished_at: None,
                    log_path: PathBuf::from("/nowhere.log"),
                })
                .expect("record a replica");
        }
    }

    /// `get replicas` as clap reads it.
    #[derive(Debug, clap::Parser)]
    struct GetReplicas {
        #[command(flatten)]
        args: ReplicasArgs,
    }

    fn args(words: &[&str]) -> ReplicasArgs {
        let command_line = std::iter::once("get-replicas").chain(words.iter().copied());
        GetReplicas::try_parse_from(command_line)
            .unwrap_or_else(|error| panic!("{words:?}: {error}"))
            .args
    }

    /// The first cell of each line of the table `args` list, or the message that none is.
    fn names(store: &Store, words: &[&str]) -> Result<Vec<String>, String> {
        let now = Timestamp::now();
        match listing(&args(words), store, now).map_err(|error| error.to_string())? {
            Listing::Table(table) => Ok(table
                .lines()
                .skip(1)
                .map(|line| {
                    line.split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()),
            Listing::Empty(message) => Err(message),
        }
    }

    #[test]
    fn replicas_are_selected_by_namespace_job_and_labels() {
        let state = tempfile::tempdir().expect("tempdir");
        let mut store = Store::open(state.path()).expect("open");
        let now = Timestamp::now();
        record(&mut store, "default", "mnist", now);
        record(&mut store, "default", "cifar", now);
        record(&mut store, "team-a", "mnist", now);

        // Jobs recorded at the same time come by name.
        let every_default = ["cifar", "mnist"]
            .iter()
            .flat_map(|job| ["chief-0", "worker-0", "worker-1"].map(|r| format!("{job}-{r}")))
            .collect::<Vec<_>>();
        assert_eq!(names(&store, &[]), Ok(every_default));
        assert_eq!(
            names(&store, &["tfjob/cifar", "-l", "team=vision"]),
            Ok(vec![
                "cifar-worker-0".to_owned(),
                "cifar-worker-1".to_owned()
            ])
        );
        assert_eq!(
            names(
                &store,
                &[
                    "-n",
                    "team-a",
                    "-l",
                    "training.kubeflow.org/replica-index in (1)"
                ]
            ),
            Ok(vec!["mnist-worker-1".to_owned()])
        );
        assert_eq!(
            names(
                &store,
                &["mnist", "-A", "-l", "training.kubeflow.org/job-role"]
            ),
            Ok(vec!["default".to_owned(), "team-a".to_owned()]),
            "NAMESPACE comes first with -A"
        );
        assert_eq!(
            names(&store, &["-l", "team=audio"]),
            Err("No resources found in default namespace.".to_owned())
        );
        assert_eq!(
            names(&store, &["-A", "-l", "team=audio"]),
            Err("No resources found".to_owned())
        );
        assert_eq!(
            names(&store, &["-n", "team-b"]),
            Err("No resources found in team-b namespace.".to_owned())
        );
        assert_eq!(
            names(&store, &["pytorchjob/mnist"]),
            Err(
                "pytorchjob \"mnist\" not found in namespace \"default\" (see `trainctl get`)"
                    .to_owned()
            )
        );
        assert_eq!(
            names(&store, &["nope", "-A"]),
            Err("job \"nope\" not found in any namespace (see `trainctl get -A`)".to_owned())
        );
    }
}
