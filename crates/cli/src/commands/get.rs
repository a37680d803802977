//! `trainctl get`: the jobs in the state directory or in a cluster, as a kubectl-like table or
//! as objects.

use std::collections::HashMap;
use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Context;
use jiff::Timestamp;
use serde::Serialize;
use trainctl_api::{JobKind, TrainingJob};
use trainctl_local::store::{JobRecord, Store};

use crate::cli::{Format, GetArgs, GetFormat};
use crate::cluster::{Cluster, ClusterJob, restarts_by_job};
use crate::output;
use crate::state::state_dir;
use crate::target::{DEFAULT_NAMESPACE, Target};
use crate::view::jobs::{JobRow, table};

/// Lists or shows jobs; exit 1 when a named job does not exist.
pub fn run(args: &GetArgs, state: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    let kind = kind(args)?;
    let store = Store::open(&state_dir(state)?)?;
    let namespace = args.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
    let scope = (!args.all_namespaces).then_some(namespace);
    let mut records = match (scope, &args.name) {
        // One job: looked up by its key, not found among all.
        (Some(namespace), Some(name)) => store.job(namespace, kind, name)?,
        _ => store.jobs(scope, kind)?,
    };
    if let Some(name) = &args.name {
        records.retain(|record| &record.name == name);
        if records.is_empty() {
            return Ok(not_found(kind, name, namespace));
        }
    }
    let mut stdout = io::stdout().lock();
    match args.output {
        Some(GetFormat::Json) => {
            let jobs: Vec<&TrainingJob> = records.iter().map(|record| &record.job).collect();
            print_objects(&jobs, args.name.is_some(), Format::Json, &mut stdout)?;
        }
        Some(GetFormat::Yaml) => {
            let jobs: Vec<&TrainingJob> = records.iter().map(|record| &record.job).collect();
            print_objects(&jobs, args.name.is_some(), Format::Yaml, &mut stdout)?;
        }
        wide => {
            if records.is_empty() {
                no_jobs(scope);
                return Ok(ExitCode::SUCCESS);
            }
            let restarts = if wide.is_some() {
                restarts(&store, &records)?
            } else {
                Vec::new()
            };
            let rows: Vec<JobRow<'_>> = records
                .iter()
                .enumerate()
                .map(|(i, record)| JobRow {
                    namespace: &record.namespace,
                    name: &record.name,
                    kind: record.kind,
                    state: record.state(),
                    created: Some(record.created_at),
                    job: &record.job,
                    restarts: restarts.get(i).copied(),
                })
                .collect();
            let table = table(
                &rows,
                kind.is_none(),
                args.all_namespaces,
                wide.is_some(),
                Timestamp::now(),
            );
            stdout.write_all(table.render().as_bytes())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Lists or shows the jobs of a cluster, as [`run`] does those of this machine.
pub async fn in_cluster(
    args: &GetArgs,
    cluster: &Cluster,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let kind = kind(args)?;
    let namespace = args.namespace.as_deref().unwrap_or(&cluster.namespace);
    let scope = (!args.all_namespaces).then_some(namespace);
    let mut jobs = if let (Some(namespace), Some(name)) = (scope, &args.name) {
        let target = Target {
            kind,
            name,
            namespace,
        };
        cluster.find_jobs(&target).await?
    } else {
        let listed = cluster.list_jobs(kind, scope).await?;
        for unreadable in &listed.unreadable {
            eprintln!("warning: {unreadable}");
        }
        listed.jobs
    };
    if let Some(name) = &args.name {
        jobs.retain(|job| job.name() == name);
        if jobs.is_empty() {
            return Ok(not_found(kind, name, namespace));
        }
    }
    match args.output {
        Some(GetFormat::Json) => {
            let objects: Vec<_> = jobs.iter().map(ClusterJob::shown).collect();
            print_objects(&objects, args.name.is_some(), Format::Json, out)?;
        }
        Some(GetFormat::Yaml) => {
            let objects: Vec<_> = jobs.iter().map(ClusterJob::shown).collect();
            print_objects(&objects, args.name.is_some(), Format::Yaml, out)?;
        }
        wide => {
            if jobs.is_empty() {
                no_jobs(scope);
                return Ok(ExitCode::SUCCESS);
            }
            let restarts = if wide.is_some() {
                let pods = cluster.training_pods(scope).await?;
                restarts_by_job(&jobs, &pods)
            } else {
                HashMap::new()
            };
            let rows: Vec<JobRow<'_>> = jobs
                .iter()
                .map(|job| JobRow {
                    namespace: job.namespace(),
                    name: job.name(),
                    kind: job.kind,
                    state: job.state(),
                    created: job.created(),
                    job: &job.job,
                    restarts: restarts.get(job.uid()).copied(),
                })
                .collect();
            let table = table(
                &rows,
                kind.is_none(),
                args.all_namespaces,
                wide.is_some(),
                Timestamp::now(),
            );
            out.write_all(table.render().as_bytes())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The kind asked for, if any.
fn kind(args: &GetArgs) -> anyhow::Result<Option<JobKind>> {
    args.kind
        .as_deref()
        .map(str::parse::<JobKind>)
        .transpose()
        .context("KIND")
}

/// Says that the job named does not exist; exit 1.
fn not_found(kind: Option<JobKind>, name: &str, namespace: &str) -> ExitCode {
    let what = kind.map_or("job", JobKind::singular);
    eprintln!("error: {what} \"{name}\" not found in namespace \"{namespace}\"");
    ExitCode::FAILURE
}

/// Says that there are no jobs, as kubectl does.
fn no_jobs(scope: Option<&str>) {
    match scope {
        Some(namespace) => eprintln!("No jobs found in {namespace} namespace."),
        None => eprintln!("No jobs found."),
    }
}

/// One job as an object, or several as a v1 `List`.
fn print_objects<T: Serialize>(
    items: &[T],
    single: bool,
    format: Format,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct List<'a, T> {
        api_version: &'static str,
        kind: &'static str,
        items: &'a [T],
    }
    if single && items.len() == 1 {
        output::write(out, &items[0], format)?;
    } else {
        output::write(
            out,
            &List {
                api_version: "v1",
                kind: "List",
                items,
            },
            format,
        )?;
    }
    out.flush()?;
    Ok(())
}

/// Each job's restarts: every restart of every replica, in place or by re-creation.
fn restarts(store: &Store, records: &[JobRecord]) -> anyhow::Result<Vec<i64>> {
    records
        .iter()
        .map(|record| {
            let replicas = store.replicas(&record.uid)?;
            Ok(replicas.iter().map(|r| i64::from(r.restarts)).sum())
        })
        .collect()
}
