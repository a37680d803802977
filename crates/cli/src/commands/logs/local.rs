//! `logs` on this machine: the replicas' log files, read as they are written.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use trainctl_engine::ReplicaSlot;
use trainctl_local::process::logs::{LogSelection, NoPreviousRun, kept_log_files, previous_run};
use trainctl_local::store::{JobRecord, ReplicaRecord, ReplicaState, Store};

use super::pod::job_of_pod;
use super::tail::{Style, Tail, interleaved};
use super::{Logs, prefix, replica_of_pod, wanted, width};
use crate::backend::Local;
use crate::backend::local::records;
use crate::cli::LogsArgs;
use crate::target::Target;

/// How often `--follow` looks at the job and its log files again.
const POLL: Duration = Duration::from_millis(100);

/// The most log a job's replicas may hold together (their kept files) to be printed
/// interleaved by time, which holds them in memory; larger, each replica's log is printed in
/// turn.
const INTERLEAVED_AT_MOST: u64 = 256 << 20;

/// Whether the kept log files of `replicas` hold `limit` bytes or less together.
fn within(limit: u64, replicas: &[ReplicaRecord]) -> bool {
    let mut total = 0_u64;
    for replica in replicas {
        let files = kept_log_files(&replica.log_path).unwrap_or_default();
        for file in files {
            total = total.saturating_add(std::fs::metadata(&file).map_or(0, |meta| meta.len()));
        }
    }
    total <= limit
}

impl Logs for Local {
    /// Prints one replica's log, or every replica's with prefixes, from the files the replicas
    /// write, once or until the job ends.
    async fn print_logs(
        &self,
        target: &Target<'_>,
        args: &LogsArgs,
        out: &mut impl Write,
    ) -> anyhow::Result<ExitCode> {
        print(target, args, self.store()?, out)
    }
}

/// [`Local`]'s [`Logs::print_logs`], reading `store`.
fn print(
    target: &Target<'_>,
    args: &LogsArgs,
    store: &Store,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let (record, replica) = find(target, store, args)?;
    let mut replicas = store.replicas(&record.uid)?;
    let slots = ReplicaSlot::all_of(&record.job, replicas.iter().map(slot_of));
    let wanted = wanted(&record.job, &slots, replica.as_deref())?;
    let width = width(&slots);
    let selection = selection(args, SystemTime::now());
    let runs = if args.previous {
        Some(previous_runs(&record, &replicas, wanted.as_ref())?)
    } else {
        None
    };
    // The run before the last has ended: there is nothing to follow.
    let follow = args.follow && runs.is_none();
    let uid = record.uid.clone();
    let mut record = Some(record);
    let mut tails: BTreeMap<ReplicaSlot, Tail> = BTreeMap::new();
    let mut said_waiting: Option<String> = None;
    loop {
        if follow {
            say_why_it_waits(record.as_ref(), &mut said_waiting);
        }
        // Decided before reading: what was written before the writers were done is read below.
        let at_end = !follow || writers_done(record.as_ref(), &replicas);
        for replica in &replicas {
            let slot = slot_of(replica);
            if wanted.as_ref().is_some_and(|wanted| *wanted != slot) {
                continue;
            }
            let run = match &runs {
                Some(runs) => match runs.get(&slot) {
                    Some(&run) => Some(run),
                    None => continue,
                },
                None => None,
            };
            let style = Style {
                replica: slot.to_string(),
                prefix: wanted.is_none().then(|| prefix(&slot, width)),
                timestamps: args.timestamps,
            };
            let selection = LogSelection { run, ..selection };
            tails
                .entry(slot)
                .or_insert_with(|| Tail::new(replica.log_path.clone(), selection, style));
        }
        // Every replica's log of a job that wrote all it will: in the order it was written,
        // as `--follow` shows it live, when it is small enough to be held in memory.
        if !follow && wanted.is_none() && within(INTERLEAVED_AT_MOST, &replicas) {
            interleaved(tails.values_mut(), out)?;
            out.flush()?;
            return Ok(ExitCode::SUCCESS);
        }
        for tail in tails.values_mut() {
            tail.copy_new(out, at_end)?;
        }
        out.flush()?;
        if at_end {
            return Ok(ExitCode::SUCCESS);
        }
        std::thread::sleep(POLL);
        record = store.job_by_uid(&uid)?;
        replicas = store.replicas(&uid)?;
    }
}

/// The job `target` names and the replica asked for: `--replica`'s, or the one a pod's name
/// names (`mnist-worker-0`, when no job is named so).
fn find(
    target: &Target<'_>,
    store: &Store,
    args: &LogsArgs,
) -> anyhow::Result<(JobRecord, Option<String>)> {
    if let Some(record) = records::find(store, target, "logs")? {
        return Ok((record, args.replica.clone()));
    }
    let slots_of = |record: &JobRecord| -> anyhow::Result<Vec<ReplicaSlot>> {
        let replicas = store.replicas(&record.uid)?;
        Ok(ReplicaSlot::all_of(
            &record.job,
            replicas.iter().map(slot_of),
        ))
    };
    let Some(found) = job_of_pod(target, store, slots_of)? else {
        return Err(target.not_found());
    };
    let replica = replica_of_pod(target.name, &found.replica, args)?;
    Ok((found.record, Some(replica)))
}

/// The selection of `--tail` and `--since` (counted back from `now`).
fn selection(args: &LogsArgs, now: SystemTime) -> LogSelection {
    let since = args.since.and_then(|since| {
        let now = jiff::Timestamp::try_from(now).ok()?;
        let from = now.checked_sub(since).ok()?;
        i64::try_from(from.as_nanosecond()).ok()
    });
    LogSelection {
        tail: args.tail_lines(),
        since,
        run: None,
    }
}

/// The run before the last of each replica asked for (`wanted`, else all) that has one; an
/// error when the replica asked for has none, or no replica has.
fn previous_runs(
    record: &JobRecord,
    replicas: &[ReplicaRecord],
    wanted: Option<&ReplicaSlot>,
) -> anyhow::Result<BTreeMap<ReplicaSlot, u32>> {
    let job = format!("{}/{}", record.kind.singular(), record.name);
    let mut runs = BTreeMap::new();
    let mut missing: Vec<(ReplicaSlot, NoPreviousRun)> = Vec::new();
    for replica in replicas {
        let slot = slot_of(replica);
        if wanted.is_some_and(|wanted| *wanted != slot) {
            continue;
        }
        match previous_run(&replica.log_path) {
            Ok(run) => {
                runs.insert(slot, run);
            }
            Err(why) => missing.push((slot, why)),
        }
    }
    if !runs.is_empty() {
        return Ok(runs);
    }
    match (wanted, missing.as_slice()) {
        (Some(slot), [(_, why)]) => {
            anyhow::bail!("previous terminated run of replica \"{slot}\" of {job} not found: {why}")
        }
        (Some(slot), _) => anyhow::bail!(
            "previous terminated run of replica \"{slot}\" of {job} not found: it has not started"
        ),
        (None, []) => anyhow::bail!("{job} has no replica that ran: no previous run to print"),
        (None, missing) => {
            let why: Vec<String> = missing
                .iter()
                .map(|(slot, why)| format!("{slot}: {why}"))
                .collect();
            anyhow::bail!(
                "no replica of {job} has a previous terminated run ({})",
                why.join("; ")
            )
        }
    }
}

/// Says on stderr why a followed job waits, each time the reason changes: its logs follow
/// once it is admitted.
fn say_why_it_waits(record: Option<&JobRecord>, said: &mut Option<String>) {
    let Some(record) = record else { return };
    let why = record
        .job
        .status()
        .and_then(|status| status.waiting_reason())
        .map(str::to_owned);
    if why.is_some() && why != *said {
        eprintln!(
            "{}/{} is Pending: {}; its logs follow once it is admitted",
            record.kind.singular(),
            record.name,
            why.as_deref().unwrap_or_default()
        );
    }
    *said = why;
}

/// Whether nothing will be written to the job's logs any more: it has finished and its last
/// replica has stopped, no trainctl process runs it, or it was deleted (its replicas stopped
/// first; the files already open are read to their end).
fn writers_done(record: Option<&JobRecord>, replicas: &[ReplicaRecord]) -> bool {
    let Some(record) = record else {
        return true;
    };
    let owned = record.owner.is_some_and(|owner| owner.is_alive());
    !owned
        || (record.finished
            && replicas
                .iter()
                .all(|replica| replica.state != ReplicaState::Running))
}

/// A recorded replica's slot.
fn slot_of(replica: &ReplicaRecord) -> ReplicaSlot {
    ReplicaSlot::new(replica.replica_type.clone(), replica.index)
}
