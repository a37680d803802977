//! `trainctl logs`: a job's replica logs from the state directory, printed once or followed as
//! the replicas write.

mod tail;

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
use std::time::Duration;

use trainctl_api::{ReplicaType, TrainingJob};
use trainctl_local::store::{JobRecord, ReplicaRecord, ReplicaState, Store};

use crate::cli::LogsArgs;
use crate::commands::target::Target;
use crate::state::state_dir;
use tail::Tail;

/// How often `--follow` looks at the job and its log files again.
const POLL: Duration = Duration::from_millis(100);

/// Prints one replica's log, or every replica's with prefixes, once or until the job ends;
/// exit 1 when the job or the replica does not exist.
pub fn run(args: &LogsArgs, state: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    let target = Target::parse(&args.job)?;
    let store = Store::open(&state_dir(state)?)?;
    let record = target.get(&store, "logs")?;
    let mut replicas = store.replicas(&record.uid)?;
    let slots = slots(&record.job, &replicas);
    let wanted = match &args.replica {
        Some(wanted) => {
            let Some(slot) = slots.iter().find(|slot| slot.is_named(wanted)) else {
                let known: Vec<String> = slots.iter().map(Slot::name).collect();
                anyhow::bail!(
                    "{}/{} has no replica \"{wanted}\" (it has: {})",
                    record.kind.singular(),
                    record.name,
                    known.join(", ")
                );
            };
            Some(slot.clone())
        }
        None => None,
    };
    let width = slots
        .iter()
        .map(|slot| slot.name().len())
        .max()
        .unwrap_or(0);
    let uid = record.uid.clone();
    let mut record = Some(record);
    let mut tails: BTreeMap<Slot, Tail> = BTreeMap::new();
    let mut out = BufWriter::new(io::stdout().lock());
    loop {
        // Decided before reading: what was written before the writers were done is read below.
        let at_end = !args.follow || writers_done(record.as_ref(), &replicas);
        for replica in &replicas {
            let slot = Slot::of(replica);
            if wanted.as_ref().is_some_and(|wanted| *wanted != slot) {
                continue;
            }
            let prefix = wanted
                .is_none()
                .then(|| format!("{:<width$} | ", slot.name()));
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

/// A replica slot: its type and index.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Slot {
    replica_type: ReplicaType,
    index: i32,
}

impl Slot {
    fn of(replica: &ReplicaRecord) -> Slot {
        Slot {
            replica_type: replica.replica_type.clone(),
            index: replica.index,
        }
    }

    /// `worker-1`, as `run` prefixes its lines.
    fn name(&self) -> String {
        format!("{}-{}", self.replica_type.lowercase(), self.index)
    }

    /// Whether `wanted` names this slot (`worker-1`; a lone `launcher` or `chief` means index 0).
    fn is_named(&self, wanted: &str) -> bool {
        self.name().eq_ignore_ascii_case(wanted)
            || (self.index == 0 && self.replica_type.as_str().eq_ignore_ascii_case(wanted))
    }
}

/// The job's slots: those of its spec, and any recorded beyond them, in order.
fn slots(job: &TrainingJob, replicas: &[ReplicaRecord]) -> Vec<Slot> {
    let mut slots: Vec<Slot> = job
        .replica_specs()
        .iter()
        .flat_map(|(replica_type, spec)| {
            (0..spec.replicas_or_default()).map(|index| Slot {
                replica_type: replica_type.clone(),
                index,
            })
        })
        .chain(replicas.iter().map(Slot::of))
        .collect();
    slots.sort();
    slots.dedup();
    slots
}
