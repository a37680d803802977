//! Who decides that a job succeeded, and that it runs, kind by kind (docs/semantics.md §5.3).
//!
//! - TFJob: the Chief (or Master) if the job has one; else worker 0 (`successPolicy: ""`) or
//!   every worker (`AllWorkers`). PS and Evaluator never decide.
//! - PyTorchJob, PaddleJob, XGBoostJob: the Master if present, else every worker (elastic
//!   PyTorch: any worker).
//! - JAXJob: every worker. MPIJob: the launcher.
//! - MXJob: the Scheduler if present, else the Tuner, else every worker: the Scheduler of a
//!   training job (`MXTrain`), the Tuner of a tuning job (`MXTune`), which upstream could never
//!   see succeed, and the workers of one without parameter servers (docs/semantics.md §8).
//!
//! A type with zero replicas decides nothing (there is no replica to succeed).

use trainctl_api::tensorflow::SuccessPolicy;
use trainctl_api::{ReplicaType, TrainingJob};

use super::observed::PodPhase;
use super::replicas::{ReplicaView, TypeView};

/// The replicas whose success makes the job succeed.
enum SuccessRule {
    /// Every replica of the type succeeds.
    All(ReplicaType),
    /// Any replica of the type succeeds (elastic PyTorch).
    Any(ReplicaType),
    /// Worker 0 succeeds with exit code 0, or every worker does (TF's default policy).
    WorkerZero,
}

impl SuccessRule {
    /// The type whose replicas decide.
    fn replica_type(&self) -> &ReplicaType {
        match self {
            SuccessRule::All(replica_type) | SuccessRule::Any(replica_type) => replica_type,
            SuccessRule::WorkerZero => &ReplicaType::Worker,
        }
    }
}

/// Whether the job has `replica_type` with at least one replica.
fn has(view: &ReplicaView<'_>, replica_type: &ReplicaType) -> bool {
    view.of(replica_type).is_some_and(|t| t.replicas() > 0)
}

fn rule(job: &TrainingJob, view: &ReplicaView<'_>) -> Option<SuccessRule> {
    let master =
        || has(view, &ReplicaType::Master).then_some(SuccessRule::All(ReplicaType::Master));
    let all_workers =
        || has(view, &ReplicaType::Worker).then_some(SuccessRule::All(ReplicaType::Worker));
    match job {
        TrainingJob::TF(tf) => {
            if has(view, &ReplicaType::Chief) {
                Some(SuccessRule::All(ReplicaType::Chief))
            } else if let Some(master) = master() {
                Some(master)
            } else if tf.spec.success_policy == Some(SuccessPolicy::AllWorkers) {
                all_workers()
            } else {
                has(view, &ReplicaType::Worker).then_some(SuccessRule::WorkerZero)
            }
        }
        TrainingJob::PyTorch(pytorch) => master().or_else(|| {
            if pytorch.spec.elastic_policy.is_some() {
                has(view, &ReplicaType::Worker).then_some(SuccessRule::Any(ReplicaType::Worker))
            } else {
                all_workers()
            }
        }),
        TrainingJob::XGBoost(_) | TrainingJob::Paddle(_) => master().or_else(all_workers),
        TrainingJob::Jax(_) => all_workers(),
        TrainingJob::Mpi(_) => {
            has(view, &ReplicaType::Launcher).then_some(SuccessRule::All(ReplicaType::Launcher))
        }
        TrainingJob::MXNet(_) => [ReplicaType::Scheduler, ReplicaType::Tuner]
            .into_iter()
            .find(|decider| has(view, decider))
            .map(SuccessRule::All)
            .or_else(all_workers),
    }
}

fn worker_zero_succeeded(workers: &TypeView<'_>) -> bool {
    workers.pods.first().copied().flatten().is_some_and(|pod| {
        pod.phase == PodPhase::Succeeded && pod.exit_code.is_none_or(|code| code == 0)
    })
}

/// Whether the replicas that decide success have succeeded.
pub(crate) fn succeeded(job: &TrainingJob, view: &ReplicaView<'_>) -> bool {
    let Some(rule) = rule(job, view) else {
        return false;
    };
    let Some(deciders) = view.of(rule.replica_type()) else {
        return false;
    };
    match rule {
        SuccessRule::All(_) => deciders.all_succeeded(),
        SuccessRule::Any(_) => deciders.any_succeeded(),
        SuccessRule::WorkerZero => worker_zero_succeeded(deciders) || deciders.all_succeeded(),
    }
}

/// Whether the job runs: a replica of the type that decides success is running.
pub(crate) fn running(job: &TrainingJob, view: &ReplicaView<'_>) -> bool {
    rule(job, view)
        .and_then(|rule| view.of(rule.replica_type()))
        .is_some_and(TypeView::any_running)
}
