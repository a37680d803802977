//! Gang admission against the machine, shared with every other trainctl process through the
//! store: what other running jobs hold is not free. On a server, a job first waits for its turn
//! in the admission queue. An admitted job has its ports reserved and every replica prepared;
//! one that can never run here (too large, or a replica that cannot run as written) fails at
//! once.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use trainctl_api::JobConditionType;
use trainctl_engine::reconcile::{Shortfall, WaitingFact};

use super::launch::{LaunchContext, Unrunnable, prepare};
use super::report::duration_words;
use super::{RunEnd, RunError, Runner};
use crate::kubelet::admission::{Admission, Allocation, FreeResources, admit};
use crate::kubelet::ports::PortReservation;
use crate::kubelet::resources::{NodeCapacity, ReplicaNeeds};
use crate::store::{Store, StoreError};

/// What an admitted job holds while it runs, as the store keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceHold {
    /// CPU in millicores.
    pub cpu_millis: u64,
    /// Memory in bytes.
    pub memory_bytes: u64,
    /// GPU indices.
    pub gpus: Vec<u32>,
}

/// The outcome of one admission attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// Admitted with these GPUs; the store now records the hold.
    Admitted(Allocation),
    /// Not enough is free now.
    Wait(Vec<Shortfall>),
    /// The machine is too small for the job.
    NeverFits(String),
}

/// Tries to admit the job `uid` with `needs` on a machine of `capacity`.
pub fn try_admit(
    store: &mut Store,
    uid: &str,
    needs: &[ReplicaNeeds],
    capacity: &NodeCapacity,
) -> Result<Attempt, StoreError> {
    let mut attempt = None;
    store.reserve(uid, |holds: Vec<ResourceHold>| {
        let mut free = FreeResources::all_of(capacity);
        for hold in &holds {
            free.cpu_millis = free.cpu_millis.saturating_sub(hold.cpu_millis);
            free.memory_bytes = free.memory_bytes.saturating_sub(hold.memory_bytes);
            for gpu in &hold.gpus {
                free.gpus.remove(gpu);
            }
        }
        match admit(needs, &free, capacity) {
            Admission::Admitted(allocation) => {
                let hold = ResourceHold {
                    cpu_millis: needs.iter().map(|n| n.cpu_millis).sum(),
                    memory_bytes: needs
                        .iter()
                        .fold(0_u64, |sum, n| sum.saturating_add(n.memory_bytes)),
                    gpus: allocation.gpus.values().flatten().copied().collect(),
                };
                attempt = Some(Attempt::Admitted(allocation));
                Some(hold)
            }
            Admission::Wait(shortfalls) => {
                attempt = Some(Attempt::Wait(shortfalls));
                None
            }
            Admission::NeverFits(message) => {
                attempt = Some(Attempt::NeverFits(message));
                None
            }
        }
    })?;
    Ok(attempt.expect("reserve calls decide exactly once"))
}

impl Runner<'_> {
    /// One admission attempt of a job not admitted yet: its place in the queue, then the
    /// machine. `Some` when the job ended instead: it can never run here.
    pub(super) fn seek_admission(
        &mut self,
        store: &mut Store,
        needs: &[ReplicaNeeds],
    ) -> Result<Option<RunEnd>, RunError> {
        let ahead = self
            .oversight
            .coordinator
            .map_or(0, |coordinator| coordinator.ahead(&self.uid));
        if ahead > 0 {
            self.waiting = vec![WaitingFact::Queued];
            return Ok(None);
        }
        let message = match try_admit(store, &self.uid, needs, &self.settings.capacity)? {
            Attempt::Admitted(allocation) => {
                if let Some(coordinator) = self.oversight.coordinator {
                    coordinator.leave(&self.uid);
                }
                match self.admit(&allocation)? {
                    Ok(()) => return Ok(None),
                    Err(message) => message,
                }
            }
            Attempt::Wait(shortfalls) => {
                self.waiting = vec![WaitingFact::InsufficientResources(shortfalls)];
                return Ok(None);
            }
            Attempt::NeverFits(message) => message,
        };
        self.fail_at_once(store, &message)?;
        Ok(Some(RunEnd::Failed))
    }

    /// Checks that every replica can run here as written (env references, commands, working
    /// directories), as [`Runner::admit`] does, for a job that is not admitted yet.
    pub(super) fn check_runnable(&self) -> Result<(), String> {
        let context = self.launch_context();
        let ports = BTreeMap::new();
        prepare(&self.job, &ports, &Allocation::default(), &context)
            .map(drop)
            .map_err(|errors| cannot_run(&errors))
    }

    /// Where and with what the job's replicas are prepared.
    pub(super) fn launch_context(&self) -> LaunchContext<'_> {
        LaunchContext {
            companions: &self.companions,
            capacity: &self.settings.capacity,
            node_name: &self.settings.node_name,
            logs_dir: &self.logs_dir,
            console: self.console,
            log_limit: self.settings.log_limit,
        }
    }

    /// Takes the admitted GPUs, reserves a port per slot and prepares every replica; says why
    /// when a replica cannot run here as written.
    fn admit(&mut self, allocation: &Allocation) -> Result<Result<(), String>, RunError> {
        let slots = trainctl_engine::objects::replica_slots(&self.job);
        let ports = PortReservation::reserve(slots)
            .map_err(|source| RunError::Io {
                operation: "cannot reserve loopback ports for the replicas",
                source,
            })?
            .release();
        let prepared = match prepare(&self.job, &ports, allocation, &self.launch_context()) {
            Ok(prepared) => prepared,
            Err(errors) => return Ok(Err(cannot_run(&errors))),
        };
        self.changes.replicas(prepared.keys().cloned());
        self.prepared = prepared;
        if !self.waiting.is_empty() {
            self.say_admitted(allocation);
        }
        self.waiting.clear();
        self.admitted = true;
        Ok(Ok(()))
    }

    /// Says that a job that waited is admitted, after how long and with which GPUs.
    fn say_admitted(&self, allocation: &Allocation) {
        let created = self
            .job
            .status()
            .and_then(|status| status.condition(JobConditionType::Created))
            .and_then(|created| created.last_transition_time.as_ref())
            .map(|time| time.0);
        let waited = created
            .and_then(|created| Timestamp::now().duration_since(created).try_into().ok())
            .map_or_else(String::new, |waited| {
                format!(" after {}", duration_words(waited))
            });
        let mut gpus: Vec<u32> = allocation.gpus.values().flatten().copied().collect();
        gpus.sort_unstable();
        let held = if gpus.is_empty() {
            String::new()
        } else {
            let gpus: Vec<String> = gpus.iter().map(u32::to_string).collect();
            format!(": GPUs {}", gpus.join(","))
        };
        self.console.say(&format!("admitted{waited}{held}"));
    }
}

/// The message of a job whose replicas cannot run here as written.
fn cannot_run(unrunnable: &Unrunnable) -> String {
    format!("cannot run on this machine: {unrunnable}")
}
