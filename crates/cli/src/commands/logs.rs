//! `trainctl logs`: a job's replica logs from the state directory.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::process::ExitCode;

use anyhow::Context;
use trainctl_api::JobKind;
use trainctl_local::store::{ReplicaRecord, Store};

use crate::cli::LogsArgs;
use crate::state::state_dir;

/// Prints one replica's log, or every replica's with prefixes; exit 1 when the job or the
/// replica does not exist.
pub fn run(args: &LogsArgs, state: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    let (kind, name) = match args.target.as_slice() {
        [name] => (None, name.as_str()),
        [kind, name] => (
            Some(kind.parse::<JobKind>().context("KIND")?),
            name.as_str(),
        ),
        _ => unreachable!("clap takes one or two values"),
    };
    let store = Store::open(&state_dir(state)?)?;
    let mut records = store.job(&args.namespace, kind, name)?;
    let record = match records.len() {
        0 => {
            eprintln!(
                "error: job \"{name}\" not found in namespace \"{}\" (see `trainctl get`)",
                args.namespace
            );
            return Ok(ExitCode::FAILURE);
        }
        1 => records.remove(0),
        _ => {
            let kinds: Vec<&str> = records.iter().map(|r| r.kind.singular()).collect();
            eprintln!(
                "error: several jobs are named \"{name}\" ({}); say which: `trainctl logs KIND {name}`",
                kinds.join(", ")
            );
            return Ok(ExitCode::FAILURE);
        }
    };
    let replicas = store.replicas(&record.uid)?;
    let mut out = BufWriter::new(io::stdout().lock());
    if let Some(wanted) = &args.replica {
        let Some(replica) = replicas.iter().find(|r| matches(r, wanted)) else {
            let known: Vec<String> = replicas.iter().map(slot_name).collect();
            eprintln!(
                "error: {}/{name} has no replica \"{wanted}\" (it has: {})",
                record.kind.singular(),
                known.join(", ")
            );
            return Ok(ExitCode::FAILURE);
        };
        copy_log(replica, None, &mut out)?;
    } else {
        let width = replicas
            .iter()
            .map(|r| slot_name(r).len())
            .max()
            .unwrap_or(0);
        for replica in &replicas {
            let prefix = format!("{:<width$} | ", slot_name(replica));
            copy_log(replica, Some(&prefix), &mut out)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `worker-1`, as `run` prefixes its lines.
fn slot_name(replica: &ReplicaRecord) -> String {
    format!("{}-{}", replica.replica_type.lowercase(), replica.index)
}

/// Whether `wanted` names this replica (`worker-1`; a lone `launcher` or `chief` means index 0).
fn matches(replica: &ReplicaRecord, wanted: &str) -> bool {
    let name = slot_name(replica);
    name.eq_ignore_ascii_case(wanted)
        || (replica.index == 0 && replica.replica_type.as_str().eq_ignore_ascii_case(wanted))
}

/// Copies a replica's log file to `out`, each line after `prefix` when given. A replica that
/// never started has no file, and no lines.
fn copy_log(
    replica: &ReplicaRecord,
    prefix: Option<&str>,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let file = match File::open(&replica.log_path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => {
            return Err(error)
                .with_context(|| format!("cannot read {}", replica.log_path.display()));
        }
    };
    let mut reader = BufReader::new(file);
    match prefix {
        None => {
            io::copy(&mut reader, out)?;
        }
        Some(prefix) => {
            let mut line = Vec::new();
            while reader.read_until(b'\n', &mut line)? > 0 {
                out.write_all(prefix.as_bytes())?;
                out.write_all(&line)?;
                if !line.ends_with(b"\n") {
                    out.write_all(b"\n")?;
                }
                line.clear();
            }
        }
    }
    Ok(())
}
