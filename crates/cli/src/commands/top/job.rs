//! `trainctl top job [JOB]`: the CPU, memory and GPUs of the running jobs' processes, measured
//! now ([`super::usage`]), one line per job or per replica.

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;
use trainctl_engine::naming::replica_name;
use trainctl_local::store::{JobRecord, ReplicaRecord, ReplicaState, Store};

use crate::cli::TopJobArgs;
use crate::commands::replicas::named_jobs;
use crate::state::state_dir;
use crate::target::DEFAULT_NAMESPACE;
use crate::view::top::{UsageRow, usage_table};
use trainctl_local::process::usage::{Measured, Usage, sample};

/// How long CPU use is measured over.
const INTERVAL: Duration = Duration::from_millis(500);

/// Prints what the running jobs use; an error when the job named does not exist or does not run.
/// No running job is no error (exit 0), as kubectl says of an empty list.
pub fn run(args: &TopJobArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    let store = Store::open(&state_dir(state)?)?;
    let namespace = args.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
    let scope = (!args.all_namespaces).then_some(namespace);
    let jobs: Vec<JobRecord> = match &args.job {
        Some(job) => named_jobs(&store, job, scope, "top job")?,
        None => store.jobs(scope, None)?,
    };
    let mut running: Vec<(&JobRecord, Vec<ReplicaRecord>)> = Vec::new();
    for job in jobs.iter().filter(|job| !job.finished) {
        let replicas: Vec<ReplicaRecord> = store
            .replicas(&job.uid)?
            .into_iter()
            .filter(|replica| {
                replica.state == ReplicaState::Running
                    && replica.pid.is_some_and(|pid| pid.is_alive())
            })
            .collect();
        if !replicas.is_empty() {
            running.push((job, replicas));
        }
    }
    if running.is_empty() {
        if let [job] = jobs.as_slice()
            && args.job.is_some()
        {
            bail!(
                "{} \"{}\" in namespace \"{}\" has no running replica: it is {}",
                job.kind.singular(),
                job.name,
                job.namespace,
                job.state()
            );
        }
        match scope {
            Some(namespace) => eprintln!("No running jobs found in {namespace} namespace."),
            None => eprintln!("No running jobs found."),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let measured: Vec<Measured<'_>> = running
        .iter()
        .flat_map(|(job, replicas)| {
            replicas.iter().filter_map(|replica| {
                Some(Measured {
                    pid: replica.pid?.pid,
                    job_uid: &job.uid,
                })
            })
        })
        .collect();
    let mut usages = sample(&measured, INTERVAL).into_iter();
    let mut rows = Vec::new();
    for (job, replicas) in &running {
        let replica_rows: Vec<UsageRow> = replicas
            .iter()
            .map(|replica| {
                let usage = usages.next().unwrap_or_default();
                UsageRow {
                    namespace: job.namespace.clone(),
                    name: replica_name(&job.name, &replica.replica_type, replica.index),
                    cores: usage.cores,
                    memory_bytes: usage.memory_bytes,
                    gpus: replica.gpus.clone(),
                }
            })
            .collect();
        if args.replicas {
            rows.extend(replica_rows);
        } else {
            rows.push(job_row(job, &replica_rows));
        }
    }
    let rendered = usage_table(&rows, args.all_namespaces).render();
    io::stdout().lock().write_all(rendered.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// A job's line: its replicas' use added up, and their GPUs.
fn job_row(job: &JobRecord, replicas: &[UsageRow]) -> UsageRow {
    let total = replicas.iter().fold(Usage::default(), |sum, row| Usage {
        cores: sum.cores + row.cores,
        memory_bytes: sum.memory_bytes.saturating_add(row.memory_bytes),
    });
    let mut gpus: Vec<u32> = replicas.iter().flat_map(|row| row.gpus.clone()).collect();
    gpus.sort_unstable();
    UsageRow {
        namespace: job.namespace.clone(),
        name: format!("{}/{}", job.kind.singular(), job.name),
        cores: total.cores,
        memory_bytes: total.memory_bytes,
        gpus,
    }
}
