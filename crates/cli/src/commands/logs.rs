//! `trainctl logs`: a job's replica logs from the state directory, printed once or followed as
//! the replicas write; selected as `kubectl logs` selects (`--tail`, `--since`, `--previous`),
//! with times (`--timestamps`) and a separator line where a replica restarted. The job may be
//! named by one of its pods' names, as `kubectl logs` takes it (`mnist-worker-0`).

mod pod;
mod tail;

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use trainctl_api::TrainingJob;
use trainctl_engine::ReplicaSlot;
use trainctl_local::process::logs::{LogSelection, NoPreviousRun, previous_run};
use trainctl_local::store::{JobRecord, ReplicaRecord, ReplicaState, Store};

use crate::cli::LogsArgs;
use crate::cluster::{self, Cluster, LogRequest};
use crate::state::state_dir;
use crate::target::{DEFAULT_NAMESPACE, Target};
use pod::job_of_pod;
use tail::{Style, Tail};

/// How often `--follow` looks at the job and its log files again.
const POLL: Duration = Duration::from_millis(100);

/// Prints one replica's log, or every replica's with prefixes, once or until the job ends;
/// exit 1 when the job or the replica does not exist, or `--previous` finds no previous run.
pub fn run(args: &LogsArgs, state: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    let target = Target::parse(&args.job, DEFAULT_NAMESPACE)?;
    let store = Store::open(&state_dir(state)?)?;
    let (record, replica) = find(&target, &store, args)?;
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
    let mut out = BufWriter::new(io::stdout().lock());
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
        for tail in tails.values_mut() {
            tail.copy_new(&mut out, at_end)?;
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
    if let Some(record) = target.find(store, "logs")? {
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

/// The replica of the pod `pod` (`replica`), checked against `--replica` and `--all`.
fn replica_of_pod(pod: &str, replica: &str, args: &LogsArgs) -> anyhow::Result<String> {
    if args.all {
        anyhow::bail!(
            "{pod} is one replica's pod ({replica}): --all prints every replica, name the job \
             instead"
        );
    }
    match &args.replica {
        Some(asked) if !asked.eq_ignore_ascii_case(replica) => anyhow::bail!(
            "{pod} is the pod of replica {replica}, not of --replica {asked}: give one or the \
             other"
        ),
        _ => Ok(replica.to_owned()),
    }
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

/// Prints the logs of a job of the cluster: its pods' framework containers; exit 1 when the
/// job or the replica does not exist. A pod's name names its job and replica.
pub async fn in_cluster(
    args: &LogsArgs,
    cluster: &Cluster,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let target = Target::parse(&args.job, &cluster.namespace)?;
    let mut jobs = cluster.find_jobs(&target).await?;
    let (found, replica) = match jobs.len() {
        1 => (jobs.remove(0), args.replica.clone()),
        0 => {
            let not_found = || target.not_found_by("trainctl --kube get");
            let pod = cluster
                .pod_replica(target.namespace, target.name, target.kind)
                .await?
                .ok_or_else(not_found)?;
            let replica = replica_of_pod(target.name, &pod.slot.to_string(), args)?;
            let job = cluster
                .get_job(pod.kind, target.namespace, &pod.job)
                .await?
                .ok_or_else(not_found)?;
            (job, Some(replica))
        }
        _ => {
            let kinds: Vec<_> = jobs.iter().map(|job| job.kind).collect();
            return Err(target.ambiguous(&kinds, "--kube logs"));
        }
    };
    let pods = cluster.pods_of(&found).await?;
    let slots = ReplicaSlot::all_of(&found.job, pods.iter().filter_map(cluster::slot_of));
    let wanted = wanted(&found.job, &slots, replica.as_deref())?;
    let request = LogRequest {
        job: &found,
        replica: wanted.as_ref(),
        width: width(&slots),
        follow: args.follow && !args.previous,
        tail_lines: args.tail_lines(),
        since: args.since,
        timestamps: args.timestamps,
        previous: args.previous,
    };
    cluster.print_logs(request, &pods, out).await?;
    Ok(ExitCode::SUCCESS)
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

/// The prefix of a slot's lines: `worker-1 | `, names padded to `width`, as `run` prints them.
fn prefix(slot: &ReplicaSlot, width: usize) -> String {
    format!("{:<width$} | ", slot.to_string())
}

/// The width of the longest slot name.
fn width(slots: &[ReplicaSlot]) -> usize {
    slots
        .iter()
        .map(|slot| slot.to_string().len())
        .max()
        .unwrap_or(0)
}

/// The slot `--replica` names (`None` without it); an error listing the job's slots when it
/// names none of them.
fn wanted(
    job: &TrainingJob,
    slots: &[ReplicaSlot],
    wanted: Option<&str>,
) -> anyhow::Result<Option<ReplicaSlot>> {
    let Some(wanted) = wanted else {
        return Ok(None);
    };
    if let Some(slot) = slots.iter().find(|slot| is_named(slot, wanted)) {
        return Ok(Some(slot.clone()));
    }
    let known: Vec<String> = slots.iter().map(ToString::to_string).collect();
    anyhow::bail!(
        "{}/{} has no replica \"{wanted}\" (it has: {})",
        job.kind().singular(),
        job.name(),
        known.join(", ")
    )
}

/// Whether `wanted` names `slot` (`worker-1`; a lone `launcher` or `chief` means index 0).
fn is_named(slot: &ReplicaSlot, wanted: &str) -> bool {
    slot.to_string().eq_ignore_ascii_case(wanted)
        || (slot.index == 0 && slot.replica_type.as_str().eq_ignore_ascii_case(wanted))
}
