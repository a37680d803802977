//! The job's replica slots matched with the pods observed in them, and the
//! `replicaStatuses` counted afresh from those pods (docs/semantics.md §5.4).

use std::collections::BTreeMap;

use trainctl_api::validation::MAX_REPLICAS_PER_TYPE;
use trainctl_api::{ReplicaStatus, ReplicaType, RestartPolicy, TrainingJob};

use super::observed::{Observed, ObservedReplica, PodPhase, ReplicaSlot};
use crate::naming;

/// One replica type of the job and the pod observed in each of its slots.
pub(crate) struct TypeView<'a> {
    /// The replica type.
    pub(crate) replica_type: &'a ReplicaType,
    /// Its restart policy (defaulted per kind when unset).
    pub(crate) policy: RestartPolicy,
    /// The pod of slot `i` at position `i`, `None` where there is none.
    pub(crate) pods: Vec<Option<&'a ObservedReplica>>,
}

impl<'a> TypeView<'a> {
    /// How many replicas this type asks for.
    pub(crate) fn replicas(&self) -> usize {
        self.pods.len()
    }

    /// The slot `index` of this type.
    pub(crate) fn slot(&self, index: usize) -> ReplicaSlot {
        ReplicaSlot::new(self.replica_type.clone(), slot_index(index))
    }

    /// The pods observed in this type's slots.
    pub(crate) fn observed(&self) -> impl Iterator<Item = (usize, &'a ObservedReplica)> + '_ {
        self.pods
            .iter()
            .enumerate()
            .filter_map(|(index, pod)| pod.map(|pod| (index, pod)))
    }

    /// Whether every replica of this type succeeded (and there is at least one).
    pub(crate) fn all_succeeded(&self) -> bool {
        !self.pods.is_empty()
            && self
                .pods
                .iter()
                .all(|pod| pod.is_some_and(|pod| pod.phase == PodPhase::Succeeded))
    }

    /// Whether some replica of this type succeeded.
    pub(crate) fn any_succeeded(&self) -> bool {
        self.pods
            .iter()
            .any(|pod| pod.is_some_and(|pod| pod.phase == PodPhase::Succeeded))
    }

    /// Whether some replica of this type runs (and is not being deleted).
    pub(crate) fn any_running(&self) -> bool {
        self.pods
            .iter()
            .any(|pod| pod.is_some_and(|pod| pod.phase == PodPhase::Running && !pod.deleting))
    }

    /// The counts of `replicaStatuses[<Type>]`, as upstream counts them: running pods are
    /// active (a pending pod is in no count), a running pod being deleted counts as failed.
    fn counts(&self) -> ReplicaStatus {
        let mut counts = ReplicaStatus::default();
        for pod in self.pods.iter().flatten() {
            match (pod.phase, pod.deleting) {
                (PodPhase::Running, false) => counts.active += 1,
                (PodPhase::Running, true) | (PodPhase::Failed, _) => counts.failed += 1,
                (PodPhase::Succeeded, _) => counts.succeeded += 1,
                (PodPhase::Pending, _) => {}
            }
        }
        counts
    }
}

/// Converts a slot position (bounded by [`MAX_REPLICAS_PER_TYPE`]) back to an index.
fn slot_index(index: usize) -> i32 {
    i32::try_from(index).expect("slot positions are bounded by MAX_REPLICAS_PER_TYPE")
}

/// Every slot of the job with its observed pod, and the pods in no slot of the job.
pub(crate) struct ReplicaView<'a> {
    /// The job's replica types, in canonical order.
    pub(crate) types: Vec<TypeView<'a>>,
    /// Pods beyond their type's `replicas`, or of types the job does not have.
    pub(crate) strays: Vec<(&'a ReplicaSlot, &'a ObservedReplica)>,
}

impl<'a> ReplicaView<'a> {
    /// Matches `observed` pods with the slots of `job`.
    ///
    /// A type asking for more than [`MAX_REPLICAS_PER_TYPE`] replicas (validation rejects such
    /// jobs) is treated as asking for that many.
    pub(crate) fn new(job: &'a TrainingJob, observed: &'a Observed) -> Self {
        let kind = job.kind();
        let mut types: Vec<TypeView<'a>> = job
            .replica_specs()
            .iter()
            .map(|(replica_type, spec)| {
                let replicas = spec.replicas_or_default().clamp(0, MAX_REPLICAS_PER_TYPE);
                TypeView {
                    replica_type,
                    policy: spec
                        .restart_policy
                        .unwrap_or_else(|| kind.default_restart_policy()),
                    pods: vec![None; replicas as usize],
                }
            })
            .collect();
        let mut strays = Vec::new();
        for (slot, pod) in &observed.pods {
            let position = usize::try_from(slot.index).ok();
            let cell = types
                .iter_mut()
                .find(|view| *view.replica_type == slot.replica_type)
                .zip(position)
                .and_then(|(view, position)| view.pods.get_mut(position));
            match cell {
                Some(cell) => *cell = Some(pod),
                None => strays.push((slot, pod)),
            }
        }
        ReplicaView { types, strays }
    }

    /// The view of one replica type, if the job has it.
    pub(crate) fn of(&self, replica_type: &ReplicaType) -> Option<&TypeView<'a>> {
        self.types
            .iter()
            .find(|view| view.replica_type == replica_type)
    }

    /// `replicaStatuses`, counted afresh: one entry per replica type of the job.
    pub(crate) fn replica_statuses(
        &self,
        job: &TrainingJob,
    ) -> BTreeMap<ReplicaType, ReplicaStatus> {
        self.types
            .iter()
            .map(|view| {
                let counts = ReplicaStatus {
                    selector: naming::replica_selector(job, view.replica_type),
                    ..view.counts()
                };
                (view.replica_type.clone(), counts)
            })
            .collect()
    }

    /// Whether some slot of the job is not up yet: empty, its pod pending or being deleted.
    pub(crate) fn any_slot_coming_up(&self) -> bool {
        self.types.iter().any(|view| {
            view.pods
                .iter()
                .any(|pod| pod.is_none_or(|pod| pod.deleting || pod.phase == PodPhase::Pending))
        })
    }
}
