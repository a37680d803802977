//! `trainctl logs`: a job's replica logs from the state directory, printed once or followed as
//! the replicas write.

mod tail;

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
use std::time::Duration;

use trainctl_api::TrainingJob;
use trainctl_engine::ReplicaSlot;
use trainctl_local::store::{JobRecord, ReplicaRecord, ReplicaState, Store};

use crate::cli::LogsArgs;
use crate::cluster::{self, Cluster, LogRequest};
use crate::state::state_dir;
use crate::target::{DEFAULT_NAMESPACE, Target};
use tail::Tail;

/// How often `--follow` looks at the job and its log files again.
const POLL: Duration = Duration::from_millis(100);

/// Prints one replica's log, or every replica's with prefixes, once or until the job ends;
/// exit 1 when the job or the replica does not exist.
pub fn run(args: &LogsArgs, state: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    let target = Target::parse(&args.job, DEFAULT_NAMESPACE)?;
    let store = Store::open(&state_dir(state)?)?;
    let record = target.get(&store, "logs")?;
    let mut replicas = store.replicas(&record.uid)?;
    let slots = slots(&record.job, replicas.iter().map(slot_of));
    let wanted = wanted(&record.job, &slots, args.replica.as_deref())?;
    let width = width(&slots);
    let uid = record.uid.clone();
    let mut record = Some(record);
    let mut tails: BTreeMap<ReplicaSlot, Tail> = BTreeMap::new();
    let mut out = BufWriter::new(io::stdout().lock());
    let mut said_waiting: Option<String> = None;
    loop {
        if args.follow {
            say_why_it_waits(record.as_ref(), &mut said_waiting);
        }
        // Decided before reading: what was written before the writers were done is read below.
        let at_end = !args.follow || writers_done(record.as_ref(), &replicas);
        for replica in &replicas {
            let slot = slot_of(replica);
            if wanted.as_ref().is_some_and(|wanted| *wanted != slot) {
                continue;
            }
            let prefix = wanted.is_none().then(|| prefix(&slot, width));
            tails
                .entry(slot)
                .or_insert_with(|| Tail::new(replica.log_path.clone(), prefix));
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
/// job or the replica does not exist.
pub async fn in_cluster(
    args: &LogsArgs,
    cluster: &Cluster,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let target = Target::parse(&args.job, &cluster.namespace)?;
    let found = cluster.job(&target, "logs").await?;
    let pods = cluster.pods_of(&found).await?;
    let slots = slots(&found.job, pods.iter().filter_map(cluster::slot_of));
    let wanted = wanted(&found.job, &slots, args.replica.as_deref())?;
    let request = LogRequest {
        job: &found,
        replica: wanted.as_ref(),
        width: width(&slots),
        follow: args.follow,
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

/// The job's slots: those of its spec, and any `seen` beyond them, in order.
fn slots(job: &TrainingJob, seen: impl IntoIterator<Item = ReplicaSlot>) -> Vec<ReplicaSlot> {
    let mut slots: Vec<ReplicaSlot> = job
        .replica_specs()
        .iter()
        .flat_map(|(replica_type, spec)| {
            (0..spec.replicas_or_default())
                .map(|index| ReplicaSlot::new(replica_type.clone(), index))
        })
        .chain(seen)
        .collect();
    slots.sort();
    slots.dedup();
    slots
}
