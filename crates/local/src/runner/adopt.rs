//! Taking a job over from a server that died: its replicas, as the store and the process table
//! show them.
//!
//! A job that holds resources was admitted: its replica records name each slot's port and GPUs,
//! so the replicas are prepared again exactly as they were. Then, slot by slot, as the record
//! left it:
//!
//! - a process that still runs (the same pid *and* start time, never a recycled pid) is adopted:
//!   the run waits for it as for its own;
//! - a process that died meanwhile exits now, with the code the shim recorded, and the pod's
//!   `restartPolicy` decides what follows, as if the server had seen it happen; when the shim
//!   died too, no code was recorded: the exit code is unknown, and the pod is treated as one
//!   whose node vanished (deleted, then created again by the engine), never given a made-up
//!   code;
//! - a pod that was waiting to restart starts again; a finished pod stays finished; a slot
//!   without a pod is left to the engine.
//!
//! A process of the job that the records do not know (started just before the server died, before
//! its record was written) is killed, so that no replica runs twice.

use std::collections::{BTreeMap, BTreeSet};

use trainctl_engine::reconcile::ReplicaSlot;

use super::launch::prepare;
use super::pod::LocalPod;
use super::{Exit, RunError, Runner};
use crate::kubelet::admission::Allocation;
use crate::process::marker::kill_marked_where;
use crate::process::shim::{self, adopted_exit};
use crate::store::{ReplicaRecord, ReplicaState, Store};

impl Runner<'_> {
    /// Takes the job over from the process that ran it before, if it was admitted; a job that
    /// was not starts afresh.
    pub(super) fn take_over(&mut self, store: &mut Store) -> Result<(), RunError> {
        let records = if store.holds_resources(&self.uid)? {
            store.replicas(&self.uid)?
        } else {
            Vec::new()
        };
        let adopted = self.prepare_as_recorded(&records);
        if adopted {
            self.adopt(&records);
        }
        let groups: BTreeSet<i32> = if adopted {
            self.pods
                .values()
                .filter_map(|pod| pod.running.map(|running| running.pid))
                .collect()
        } else {
            BTreeSet::new()
        };
        kill_marked_where(&self.uid, |group| {
            group.is_none_or(|group| !groups.contains(&group))
        });
        self.adopted = adopted;
        Ok(())
    }

    /// Prepares every slot with the port and GPUs its record names; `false` when the records do
    /// not cover every slot or the job cannot be prepared (it is then admitted afresh).
    fn prepare_as_recorded(&mut self, records: &[ReplicaRecord]) -> bool {
        let slots = trainctl_engine::objects::replica_slots(&self.job);
        let mut ports = BTreeMap::new();
        let mut allocation = Allocation::default();
        for record in records {
            let key = (record.replica_type.clone(), record.index);
            if let Some(port) = record.port {
                ports.insert(key.clone(), port);
            }
            allocation.gpus.insert(key, record.gpus.clone());
        }
        let recorded: BTreeSet<_> = records
            .iter()
            .map(|record| (record.replica_type.clone(), record.index))
            .collect();
        if records.is_empty() || slots.iter().any(|slot| !recorded.contains(slot)) {
            return false;
        }
        match prepare(&self.job, &ports, &allocation, &self.launch_context()) {
            Ok(prepared) => {
                self.services.extend(prepared.keys().cloned());
                self.prepared = prepared;
                self.admitted = true;
                true
            }
            Err(_) => false,
        }
    }

    /// Rebuilds each slot's pod from its record.
    fn adopt(&mut self, records: &[ReplicaRecord]) {
        for record in records {
            let slot = ReplicaSlot::new(record.replica_type.clone(), record.index);
            let Some(prepared) = self.prepared.get(&slot) else {
                continue;
            };
            if record.started_at.is_some() {
                self.starts.insert(slot.clone(), record.restarts + 1);
            }
            if matches!(
                record.state,
                ReplicaState::Pending | ReplicaState::Stopped | ReplicaState::Suspended
            ) {
                continue;
            }
            let mut pod = LocalPod::taken_over(prepared.policy, record);
            if record.state == ReplicaState::Running
                && let Some(replica) = record.pid
            {
                let started_at = record.started_at.unwrap_or_else(jiff::Timestamp::now);
                let generation = pod.started(replica.pid, started_at);
                let exit_file = shim::exit_file(&prepared.launch.log_path);
                let uid = self.uid.clone();
                let slot = slot.clone();
                // A replica that is gone is seen at once; one that runs is waited for.
                self.exits.spawn(async move {
                    let ended = adopted_exit(replica, exit_file, uid).await;
                    Exit {
                        slot,
                        generation,
                        pid: replica.pid,
                        ended,
                    }
                });
            }
            self.pods.insert(slot.clone(), pod);
            self.changes.replica(slot);
        }
    }
}
