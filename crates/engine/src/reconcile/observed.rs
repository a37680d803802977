//! What a runtime saw of a job's replicas before asking for a plan: one [`ObservedReplica`] per
//! pod, which services exist, the gang's PodGroup, and the facts that keep pods from starting.
//!
//! The previous [`JobStatus`](trainctl_api::JobStatus) is not repeated here: it is read from the
//! job itself.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use jiff::{SignedDuration, Timestamp};
use trainctl_api::{ReplicaType, TrainingJob};

use crate::naming;
use crate::objects::podgroup::GangScheduler;

/// One replica slot of a job: a replica type and an index (`Worker` 3).
///
/// Slots order by replica type in canonical order (`Chief`, `Master`, `PS`, `Worker`,
/// `Evaluator`, `Launcher`), then by index: the order of every list in a [`Plan`](super::Plan).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReplicaSlot {
    /// The replica type.
    pub replica_type: ReplicaType,
    /// The index within the type, from 0.
    pub index: i32,
}

impl ReplicaSlot {
    /// The slot `(replica_type, index)`.
    #[must_use]
    pub fn new(replica_type: ReplicaType, index: i32) -> ReplicaSlot {
        ReplicaSlot {
            replica_type,
            index,
        }
    }

    /// Every slot of `job`'s spec, and the `seen` ones beyond them (replicas of a larger spec
    /// before a change), in order, each once.
    #[must_use]
    pub fn all_of(
        job: &TrainingJob,
        seen: impl IntoIterator<Item = ReplicaSlot>,
    ) -> Vec<ReplicaSlot> {
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

    /// The name of this slot's pod and service (`mnist-worker-3`, MPI: `pi-launcher`).
    #[must_use]
    pub fn name(&self, job_name: &str) -> String {
        naming::replica_name(job_name, &self.replica_type, self.index)
    }
}

impl fmt::Display for ReplicaSlot {
    /// `worker-3`: the lowercase type and the index, as in pod names without the job prefix.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.replica_type.lowercase(), self.index)
    }
}

/// The phase of a replica's pod (or process group), as Kubernetes reports pod phases.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PodPhase {
    /// Accepted but not started: scheduling, pulling the image, init containers.
    #[default]
    Pending,
    /// At least one container is running (or restarting in place).
    Running,
    /// Every container exited 0 and will not be restarted.
    Succeeded,
    /// A container failed and will not be restarted in place.
    Failed,
}

impl PodPhase {
    /// The phase as Kubernetes spells it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            PodPhase::Pending => "Pending",
            PodPhase::Running => "Running",
            PodPhase::Succeeded => "Succeeded",
            PodPhase::Failed => "Failed",
        }
    }
}

/// What was seen of one replica's pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObservedReplica {
    /// The pod phase.
    pub phase: PodPhase,
    /// The exit code of the framework container, once it terminated (a signal `n` reads
    /// `128 + n`).
    pub exit_code: Option<i32>,
    /// Why the pod is in its phase, when the runtime knows: `OOMKilled`, `Evicted`,
    /// `ImagePullBackOff`, `Unschedulable`. Shown in Pending reasons.
    pub reason: Option<String>,
    /// What Kubernetes said with the reason, when it said something: the scheduler's why
    /// (`persistentvolumeclaim "tfevent-volume" not found`), the kubelet's back-off message.
    pub message: Option<String>,
    /// In-place restarts of the pod's containers (the kubelet's `restartCount`).
    pub restart_count: i32,
    /// The pod is being deleted (Kubernetes: it has a `deletionTimestamp`).
    pub deleting: bool,
    /// When the pod started running.
    pub started_at: Option<Timestamp>,
    /// When the pod terminated (Succeeded or Failed).
    pub finished_at: Option<Timestamp>,
}

impl ObservedReplica {
    /// A pod in `phase` with nothing else known.
    #[must_use]
    pub fn new(phase: PodPhase) -> ObservedReplica {
        ObservedReplica {
            phase,
            ..ObservedReplica::default()
        }
    }

    /// Whether the pod is pending or running and not being deleted.
    #[must_use]
    pub fn is_active(&self) -> bool {
        !self.deleting && matches!(self.phase, PodPhase::Pending | PodPhase::Running)
    }
}

/// The phase of a gang's PodGroup (volcano's phases; an empty phase reads as `Pending`; a
/// `scheduling.k8s.io` PodGroup, which has no phase, is `Running` once scheduled, else
/// `Pending`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PodGroupPhase {
    /// Not yet admitted by the gang scheduler: volcano creates no pods until it leaves this phase.
    Pending,
    /// Admitted to its queue; pods may be created.
    Inqueue,
    /// Enough members run.
    Running,
    /// Some members were lost.
    Unknown,
    /// Every member finished.
    Completed,
}

impl PodGroupPhase {
    /// The phase as volcano spells it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            PodGroupPhase::Pending => "Pending",
            PodGroupPhase::Inqueue => "Inqueue",
            PodGroupPhase::Running => "Running",
            PodGroupPhase::Unknown => "Unknown",
            PodGroupPhase::Completed => "Completed",
        }
    }
}

/// The gang scheduling a runtime uses for the job and what it saw of the job's PodGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedGang {
    /// The gang scheduler (`--gang-scheduler-name`).
    pub scheduler: GangScheduler,
    /// The PodGroup's phase, or `None` when it does not exist (yet).
    pub pod_group: Option<PodGroupPhase>,
    /// Why the scheduler cannot place the group, in its words (Kubernetes' own gang scheduling:
    /// the PodGroup's `PodGroupScheduled=False` condition, `Unschedulable: ...`); `None` while
    /// nothing says so.
    pub unplaced: Option<String>,
}

/// A resource the local runtime's node has too little of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    /// GPUs, counted whole.
    Gpu,
    /// CPU, in millicores.
    CpuMillis,
    /// Memory, in bytes.
    MemoryBytes,
}

/// How much of a resource a job needs and how much is free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shortfall {
    /// The resource.
    pub resource: Resource,
    /// What all the job's replicas need together.
    pub needed: u64,
    /// What is free now.
    pub free: u64,
}

/// A fact the runtime supplies about why the job's pods cannot start now. The runtime states
/// facts; the engine words them (`waiting for 2 GPUs, 1 free`) and creates no pods meanwhile.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum WaitingFact {
    /// The node has too little of some resources for the whole job (gang admission).
    InsufficientResources(Vec<Shortfall>),
    /// Other jobs are ahead in the admission queue. How many is not part of the fact: it changes
    /// with every job admitted, and the job's status would be rewritten each time.
    Queued,
    /// The namespace's `ResourceQuota` cannot hold the job now, in Kubernetes' words
    /// (`exceeded quota: team-a, requested: ..., used: ..., limited: ...`).
    QuotaExceeded(String),
}

/// How long the engine waits before re-creating a failed replica, growing with each restart
/// (`initial · 2^restarts`, at most `max`). A runtime setting, passed with the observation.
///
/// The default waits not at all, as the Kubeflow operator did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RestartBackoff {
    /// The wait before the first re-creation; zero disables the back-off.
    pub initial: SignedDuration,
    /// The longest wait.
    pub max: SignedDuration,
}

impl RestartBackoff {
    /// No waiting: a failed replica is re-created at once.
    pub const NONE: RestartBackoff = RestartBackoff {
        initial: SignedDuration::ZERO,
        max: SignedDuration::ZERO,
    };

    /// The kubelet's back-off: 10 s, doubling, at most 5 min.
    pub const KUBELET: RestartBackoff = RestartBackoff {
        initial: SignedDuration::from_secs(10),
        max: SignedDuration::from_secs(300),
    };

    /// The wait before the re-creation that follows `restarts` earlier restarts.
    #[must_use]
    pub fn delay(&self, restarts: u32) -> SignedDuration {
        if self.initial <= SignedDuration::ZERO {
            return SignedDuration::ZERO;
        }
        let factor = 1_i32 << restarts.min(20);
        self.initial
            .checked_mul(factor)
            .map_or(self.max, |delay| delay.min(self.max))
            .max(SignedDuration::ZERO)
    }
}

/// Everything a runtime observed about a job's replicas.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observed {
    /// The pods, by slot. Slots beyond a type's `replicas` (after a scale-down) or of types the
    /// job no longer has may be present: the plan deletes them.
    pub pods: BTreeMap<ReplicaSlot, ObservedReplica>,
    /// The slots whose headless service exists.
    pub services: BTreeSet<ReplicaSlot>,
    /// The gang scheduling in use, if any.
    pub gang: Option<ObservedGang>,
    /// Why the runtime cannot start the job's pods now; empty when it can.
    pub waiting: Vec<WaitingFact>,
    /// The slots whose pod the runtime's last attempt could not create, with what refused it
    /// (a `ResourceQuota`, an admission webhook: `pods "mnist-worker-1" is forbidden: exceeded
    /// quota: ...`). Unlike [`Observed::waiting`] they hold nothing back: the plan creates them
    /// again, and the words say why they are missing.
    pub refused: BTreeMap<ReplicaSlot, String>,
    /// Restarts made by replicas whose pods no longer count: the [`Plan::retired_restarts`] of
    /// the previous plan, persisted by the runtime (0 for a new job).
    ///
    /// [`Plan::retired_restarts`]: super::Plan::retired_restarts
    pub retired_restarts: u32,
    /// The wait before re-creating a failed replica.
    pub restart_backoff: RestartBackoff,
}

impl Observed {
    /// An observation of the given pods, with no services.
    #[must_use]
    pub fn with_pods(pods: impl IntoIterator<Item = (ReplicaSlot, ObservedReplica)>) -> Observed {
        Observed {
            pods: pods.into_iter().collect(),
            ..Observed::default()
        }
    }

    /// In-place restarts of the pods that still count: every pod not being deleted.
    #[must_use]
    pub fn live_restarts(&self) -> u64 {
        self.pods
            .values()
            .filter(|pod| !pod.deleting)
            .map(|pod| u64::from(pod.restart_count.max(0).unsigned_abs()))
            .sum()
    }
}
