//! Gang admission against the machine, shared with every other trainctl process through the
//! store: what other running jobs hold is not free. On a server, the admission queue has its
//! word too, inside the same reservation ([`Coordinator::admission`]): a job takes its resources
//! at the head of the queue, or behind it when it would delay no job ahead (backfill). An
//! admitted job has its ports reserved and every replica prepared; one that can never run here
//! (too large, or a replica that cannot run as written) fails at once, wherever it waits in the
//! queue.

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use trainctl_api::JobConditionType;
use trainctl_engine::reconcile::{EventType, JobEvent, ReplicaSlot, Shortfall, WaitingFact};

use super::control::Coordinator;
use super::launch::{LaunchContext, PreparedReplica, prepare};
use super::report::duration_words;
use super::volumes::{self, Bindings};
use super::{RunEnd, RunError, Runner};
use crate::kubelet::admission::{
    Admission, Allocation, Amounts, FreeResources, QueueVerdict, ResourceHold, admit,
};
use crate::kubelet::ports::PortReservation;
use crate::kubelet::resources::{NodeCapacity, ReplicaNeeds};
use crate::kubelet::volumes::Backing;
use crate::process::open_files;
use crate::store::{Store, StoreError};

/// The outcome of one admission attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// Admitted with these GPUs; the store now records the hold.
    Admitted(Allocation),
    /// Not enough is free now.
    Wait(Vec<Shortfall>),
    /// The admission queue holds the job back behind others.
    Queued,
    /// The namespace's quota holds the job back; the reason in Kubernetes' words.
    QuotaExceeded(String),
    /// The machine is too small for the job.
    NeverFits(String),
    /// The job asks for more than its namespace's quota allows in all.
    NeverFitsQuota(String),
}

/// Tries to admit the job `uid` with `needs` on a machine of `capacity`; on a server,
/// `coordinator` (the admission queue) decides too, inside the same reservation, so that no
/// other job takes resources between its word and the hold.
pub fn try_admit(
    store: &mut Store,
    uid: &str,
    needs: &[ReplicaNeeds],
    capacity: &NodeCapacity,
    coordinator: Option<&dyn Coordinator>,
) -> Result<Attempt, StoreError> {
    let mut attempt = None;
    store.reserve(uid, |holds: Vec<ResourceHold>| {
        let free = free_after(capacity, &holds);
        let request = Amounts::of(needs);
        let verdict = |hold: Option<&ResourceHold>| {
            coordinator.map_or(QueueVerdict::Take, |coordinator| {
                coordinator.admission(uid, &request, &Amounts::free(&free), hold)
            })
        };
        let (outcome, hold) = match admit(needs, &free, capacity) {
            Admission::Admitted(allocation) => {
                let hold = hold_of(needs, &allocation);
                match verdict(Some(&hold)) {
                    QueueVerdict::Take => (Attempt::Admitted(allocation), Some(hold)),
                    // A head that fits takes; were it ever told otherwise, it waits.
                    QueueVerdict::WaitForResources => (Attempt::Wait(Vec::new()), None),
                    QueueVerdict::WaitInQueue => (Attempt::Queued, None),
                    QueueVerdict::WaitForQuota(why) => (Attempt::QuotaExceeded(why), None),
                    QueueVerdict::NeverFitsQuota(why) => (Attempt::NeverFitsQuota(why), None),
                }
            }
            Admission::Wait(shortfalls) => match verdict(None) {
                QueueVerdict::WaitInQueue => (Attempt::Queued, None),
                QueueVerdict::WaitForQuota(why) => (Attempt::QuotaExceeded(why), None),
                QueueVerdict::NeverFitsQuota(why) => (Attempt::NeverFitsQuota(why), None),
                QueueVerdict::Take | QueueVerdict::WaitForResources => {
                    (Attempt::Wait(shortfalls), None)
                }
            },
            Admission::NeverFits(message) => (Attempt::NeverFits(message), None),
        };
        attempt = Some(outcome);
        hold
    })?;
    Ok(attempt.expect("reserve calls decide exactly once"))
}

/// What is free on a machine of `capacity` while other jobs hold `holds`.
fn free_after(capacity: &NodeCapacity, holds: &[ResourceHold]) -> FreeResources {
    let mut free = FreeResources::all_of(capacity);
    for hold in holds {
        free.cpu_millis = free.cpu_millis.saturating_sub(hold.cpu_millis);
        free.memory_bytes = free.memory_bytes.saturating_sub(hold.memory_bytes);
        for gpu in &hold.gpus {
            free.gpus.remove(gpu);
        }
    }
    free
}

/// What a job with `needs` holds once admitted with `allocation`.
fn hold_of(needs: &[ReplicaNeeds], allocation: &Allocation) -> ResourceHold {
    let total = Amounts::of(needs);
    let mut gpus: Vec<u32> = allocation.gpus.values().flatten().copied().collect();
    gpus.sort_unstable();
    ResourceHold {
        cpu_millis: total.cpu_millis,
        memory_bytes: total.memory_bytes,
        gpus,
    }
}

impl Runner<'_> {
    /// One admission attempt of a job not admitted yet: the machine and, on a server, the
    /// queue. `Some` when the job ended instead: it can never run here.
    pub(super) fn seek_admission(
        &mut self,
        store: &mut Store,
        needs: &[ReplicaNeeds],
    ) -> Result<Option<RunEnd>, RunError> {
        let coordinator = self.oversight.coordinator;
        if coordinator.is_some_and(|coordinator| !coordinator.may_try(&self.uid)) {
            // A job its quota holds is not asked to try until the quota lets it: why it waits
            // stays what the quota said at its last try.
            let held = matches!(self.waiting.as_slice(), [WaitingFact::QuotaExceeded(_)]);
            if !held {
                self.waiting = vec![WaitingFact::Queued];
            }
            return Ok(None);
        }
        let message = match try_admit(
            store,
            &self.uid,
            needs,
            &self.settings.capacity,
            coordinator,
        )? {
            Attempt::Admitted(allocation) => match self.admit(store, &allocation)? {
                Ok(()) => return Ok(None),
                Err(message) => message,
            },
            Attempt::Wait(shortfalls) => {
                self.waiting = vec![WaitingFact::InsufficientResources(shortfalls)];
                return Ok(None);
            }
            Attempt::Queued => {
                self.waiting = vec![WaitingFact::Queued];
                return Ok(None);
            }
            Attempt::QuotaExceeded(why) => {
                self.waiting = vec![WaitingFact::QuotaExceeded(why)];
                return Ok(None);
            }
            Attempt::NeverFits(message) => self.blocked_message(&message),
            Attempt::NeverFitsQuota(why) => self.blocked_beside(&why),
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
            .map_err(|errors| errors.to_string())
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
            volumes: self
                .settings
                .volumes
                .then(|| self.volume_paths.setup(&self.bindings)),
            tensorboard_dir: self.volume_paths.tensorboard(),
        }
    }

    /// Takes the admitted GPUs, reserves a port per slot and prepares every replica; says why
    /// when a replica cannot run here as written.
    fn admit(
        &mut self,
        store: &Store,
        allocation: &Allocation,
    ) -> Result<Result<(), String>, RunError> {
        // A claim bound since the job was submitted is seen.
        self.bindings = Bindings::read(store, self.job.namespace())?;
        let slots = trainctl_engine::objects::replica_slots(&self.job);
        let ports = PortReservation::reserve(slots)
            .map_err(|source| RunError::Io {
                operation: "cannot reserve loopback ports for the replicas",
                source,
            })?
            .release();
        let prepared = match prepare(&self.job, &ports, allocation, &self.launch_context()) {
            Ok(prepared) => prepared,
            Err(errors) => return Ok(Err(self.replicas_blocked_message(&errors.to_string()))),
        };
        if let Err(message) = open_files::fits(prepared.len() as u64) {
            return Ok(Err(self.blocked_message(&message)));
        }
        let replicas = prepared
            .iter()
            .map(|(slot, replica)| (slot.to_string(), replica));
        if let Err(message) = volumes::materialize(replicas, &self.volume_paths) {
            return Ok(Err(self.replicas_blocked_message(&message)));
        }
        self.say_volume_warnings(&prepared);
        self.changes.replicas(prepared.keys().cloned());
        self.prepared = prepared;
        if !self.waiting.is_empty() {
            self.say_admitted(allocation);
        }
        self.waiting.clear();
        self.admitted = true;
        Ok(Ok(()))
    }

    /// Says once, on the terminal and as an event, what is mounted in place of a volume this
    /// machine does not offer.
    fn say_volume_warnings(&mut self, prepared: &BTreeMap<ReplicaSlot, PreparedReplica>) {
        // Where each claim's files are, once: that is where the job's outputs will be.
        let claims: BTreeSet<(&str, &std::path::Path)> = prepared
            .values()
            .flat_map(|replica| &replica.volumes.backings)
            .filter_map(|(_, backing)| match backing {
                Backing::Claim { claim, path } => Some((claim.as_str(), path.as_path())),
                _ => None,
            })
            .collect();
        for (claim, path) in claims {
            self.console
                .say(&format!("claim {claim}: {}", path.display()));
        }
        let mut said = BTreeSet::new();
        for warning in prepared
            .values()
            .flat_map(|replica| &replica.volumes.warnings)
        {
            if said.insert(warning) {
                self.console.say(&format!("warning: {warning}"));
                self.store_event(&JobEvent::new(
                    EventType::Warning,
                    "VolumeNotSupported",
                    warning.clone(),
                ));
            }
        }
    }

    /// Says that a job that waited is admitted, after how long and with which GPUs: on the
    /// terminal and as the job's event `Admitted`.
    fn say_admitted(&mut self, allocation: &Allocation) {
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
        let message = format!("admitted{waited}{held}");
        self.console.say(&message);
        self.store_event(&JobEvent::new(EventType::Normal, "Admitted", message));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use tokio::sync::Notify;
    use trainctl_api::{ReplicaType, TrainingJob};
    use trainctl_engine::reconcile::Transition;

    use super::*;
    use crate::process::identity::ProcessIdentity;
    use crate::store::fixtures::{job_record, state_dir};

    /// A queue that answers `verdict` and remembers what it was asked.
    struct FixedQueue {
        verdict: QueueVerdict,
        asked: Mutex<Vec<(Amounts, Amounts, Option<ResourceHold>)>>,
    }

    impl FixedQueue {
        fn new(verdict: QueueVerdict) -> FixedQueue {
            FixedQueue {
                verdict,
                asked: Mutex::new(Vec::new()),
            }
        }
    }

    impl Coordinator for FixedQueue {
        fn may_try(&self, _uid: &str) -> bool {
            true
        }

        fn admission(
            &self,
            _uid: &str,
            request: &Amounts,
            free: &Amounts,
            hold: Option<&ResourceHold>,
        ) -> QueueVerdict {
            self.asked
                .lock()
                .expect("lock")
                .push((*request, *free, hold.cloned()));
            self.verdict.clone()
        }

        fn turn(&self, _uid: &str) -> Option<Arc<Notify>> {
            None
        }

        fn reconciled(&self, _job: &TrainingJob, _transitions: &[Transition], _took: Duration) {}
    }

    fn worker(index: i32, cpus: u64, gpus: u32) -> ReplicaNeeds {
        ReplicaNeeds {
            slot: (ReplicaType::Worker, index),
            cpu_millis: cpus * 1_000,
            memory_bytes: 0,
            gpus,
        }
    }

    /// 4 CPUs and 2 GPUs.
    fn machine() -> NodeCapacity {
        NodeCapacity {
            cpu_millis: 4_000,
            memory_bytes: 1 << 30,
            gpus: vec![0, 1],
        }
    }

    /// A store with one job, owned by this process.
    fn store_with_job() -> (tempfile::TempDir, Store, String) {
        let dir = state_dir();
        let mut store = Store::open(dir.path()).expect("open the store");
        let record = job_record("job", Some(ProcessIdentity::current()));
        assert_eq!(store.insert_job(&record).expect("insert").uid, None);
        (dir, store, record.uid)
    }

    #[test]
    fn the_queue_decides_inside_the_reservation_with_what_is_free() {
        let (_dir, mut store, uid) = store_with_job();
        let queue = FixedQueue::new(QueueVerdict::Take);
        let needs = [worker(0, 1, 1), worker(1, 1, 0)];
        let attempt = try_admit(&mut store, &uid, &needs, &machine(), Some(&queue))
            .expect("the store answers");
        assert!(matches!(attempt, Attempt::Admitted(_)), "{attempt:?}");
        let hold = ResourceHold {
            cpu_millis: 2_000,
            memory_bytes: 0,
            gpus: vec![0],
        };
        assert_eq!(
            *queue.asked.lock().expect("lock"),
            [(
                Amounts {
                    cpu_millis: 2_000,
                    memory_bytes: 0,
                    gpus: 1
                },
                Amounts::capacity(&machine()),
                Some(hold)
            )]
        );
        assert!(store.holds_resources(&uid).expect("read"));
    }

    #[test]
    fn a_job_the_queue_holds_back_takes_nothing() {
        let (_dir, mut store, uid) = store_with_job();
        let queue = FixedQueue::new(QueueVerdict::WaitInQueue);
        let attempt = try_admit(
            &mut store,
            &uid,
            &[worker(0, 1, 0)],
            &machine(),
            Some(&queue),
        )
        .expect("the store answers");
        assert_eq!(attempt, Attempt::Queued);
        assert!(!store.holds_resources(&uid).expect("read"));
    }

    #[test]
    fn a_job_that_can_never_fit_fails_before_the_queue_is_asked() {
        let (_dir, mut store, uid) = store_with_job();
        let queue = FixedQueue::new(QueueVerdict::WaitInQueue);
        let attempt = try_admit(
            &mut store,
            &uid,
            &[worker(0, 5, 0)],
            &machine(),
            Some(&queue),
        );
        assert!(
            matches!(&attempt, Ok(Attempt::NeverFits(message)) if message.contains("5 CPUs but this machine has 4 CPUs")),
            "{attempt:?}"
        );
        assert!(queue.asked.lock().expect("lock").is_empty());
    }

    #[test]
    fn a_head_that_does_not_fit_waits_with_its_shortfalls() {
        let (_dir, mut store, uid) = store_with_job();
        let other = job_record("other", Some(ProcessIdentity::current()));
        assert_eq!(store.insert_job(&other).expect("insert").uid, None);
        assert!(matches!(
            try_admit(&mut store, &other.uid, &[worker(0, 4, 2)], &machine(), None),
            Ok(Attempt::Admitted(_))
        ));
        let queue = FixedQueue::new(QueueVerdict::WaitForResources);
        let attempt = try_admit(
            &mut store,
            &uid,
            &[worker(0, 1, 0)],
            &machine(),
            Some(&queue),
        )
        .expect("the store answers");
        assert_eq!(
            attempt,
            Attempt::Wait(vec![Shortfall {
                resource: trainctl_engine::reconcile::Resource::CpuMillis,
                needed: 1_000,
                free: 0
            }])
        );
        let asked = queue.asked.lock().expect("lock");
        assert_eq!(
            asked[0].1,
            Amounts {
                cpu_millis: 0,
                memory_bytes: 1 << 30,
                gpus: 0
            },
            "the queue sees what is free"
        );
        assert_eq!(asked[0].2, None, "it does not fit");
        assert!(!store.holds_resources(&uid).expect("read"));
    }
}
