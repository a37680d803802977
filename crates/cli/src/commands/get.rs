//! `trainctl get`: the jobs in the state directory, as a kubectl-like table or as objects.

use std::process::ExitCode;

use anyhow::Context;
use jiff::Timestamp;
use serde::Serialize;
use trainctl_api::{JobKind, TrainingJob};
use trainctl_local::store::{JobRecord, Store};

use crate::cli::{Format, GetArgs, GetFormat};
use crate::output;
use crate::state::state_dir;
use crate::table::Table;

/// Lists or shows jobs; exit 1 when a named job does not exist.
pub fn run(args: &GetArgs, state: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    let kind = args
        .kind
        .as_deref()
        .map(str::parse::<JobKind>)
        .transpose()
        .context("KIND")?;
    let store = Store::open(&state_dir(state)?)?;
    let namespace = (!args.all_namespaces).then_some(args.namespace.as_str());
    let mut records = match (namespace, &args.name) {
        // One job: looked up by its key, not found among all.
        (Some(namespace), Some(name)) => store.job(namespace, kind, name)?,
        _ => store.jobs(namespace, kind)?,
    };
    if let Some(name) = &args.name {
        records.retain(|record| &record.name == name);
        if records.is_empty() {
            let what = kind.map_or("job", JobKind::singular);
            eprintln!(
                "error: {what} \"{name}\" not found in namespace \"{}\"",
                args.namespace
            );
            return Ok(ExitCode::FAILURE);
        }
    }
    match args.output {
        Some(GetFormat::Json) => print_objects(&records, args.name.is_some(), Format::Json)?,
        Some(GetFormat::Yaml) => print_objects(&records, args.name.is_some(), Format::Yaml)?,
        wide => {
            if records.is_empty() {
                match namespace {
                    Some(namespace) => eprintln!("No jobs found in {namespace} namespace."),
                    None => eprintln!("No jobs found."),
                }
                return Ok(ExitCode::SUCCESS);
            }
            let restarts = if wide.is_some() {
                restarts(&store, &records)?
            } else {
                Vec::new()
            };
            let table = table(
                &records,
                &restarts,
                kind.is_none(),
                args.all_namespaces,
                wide.is_some(),
            );
            print!("{}", table.render());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One job as an object, or several as a v1 `List`.
fn print_objects(records: &[JobRecord], single: bool, format: Format) -> anyhow::Result<()> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct List<'a> {
        api_version: &'static str,
        kind: &'static str,
        items: Vec<&'a TrainingJob>,
    }
    if single && records.len() == 1 {
        return output::print(&records[0].job, format);
    }
    output::print(
        &List {
            api_version: "v1",
            kind: "List",
            items: records.iter().map(|record| &record.job).collect(),
        },
        format,
    )
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

fn table(
    records: &[JobRecord],
    restarts: &[i64],
    with_kind: bool,
    with_namespace: bool,
    wide: bool,
) -> Table {
    let now = Timestamp::now();
    let mut table = Table::new([
        "NAMESPACE",
        "NAME",
        "STATE",
        "AGE",
        "REPLICAS",
        "RESTARTS",
        "DURATION",
    ]);
    for (i, record) in records.iter().enumerate() {
        let name = if with_kind {
            format!("{}/{}", record.kind.singular(), record.name)
        } else {
            record.name.clone()
        };
        let status = record.job.status();
        let started = status.and_then(|s| s.start_time.as_ref()).map(|t| t.0);
        let ended = status.and_then(|s| s.completion_time.as_ref()).map(|t| t.0);
        let duration = started.map(|start| ended.unwrap_or(now).duration_since(start));
        table.row([
            record.namespace.clone(),
            name,
            record.state().to_owned(),
            age(now.duration_since(record.created_at)),
            replicas(&record.job),
            restarts.get(i).map_or_else(String::new, i64::to_string),
            duration.map_or_else(|| "-".to_owned(), age),
        ]);
    }
    let mut keep = vec![with_namespace, true, true, true];
    keep.extend([wide; 3]);
    table.keep_columns(&keep);
    table
}

/// `Worker:2 PS:1`.
fn replicas(job: &TrainingJob) -> String {
    job.replica_specs()
        .iter()
        .map(|(replica_type, spec)| format!("{replica_type}:{}", spec.replicas_or_default()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// kubectl's age: `45s`, `3m`, `2h`, `5d`.
pub fn age(duration: jiff::SignedDuration) -> String {
    let seconds = duration.as_secs().max(0);
    match seconds {
        0..120 => format!("{seconds}s"),
        120..7_200 => format!("{}m", seconds / 60),
        7_200..172_800 => format!("{}h", seconds / 3_600),
        _ => format!("{}d", seconds / 86_400),
    }
}
