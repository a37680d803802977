//! Why replicas cannot start, in plain words **\[fix: Pending reasons are visible\]**.
//!
//! Runtimes supply facts ([`WaitingFact`], the gang's PodGroup phase, pending pods' reasons, the
//! creations the API server refused); the engine words them, e.g. `waiting for 2 GPUs, 1 free`. The words go into the `Created`
//! condition's message and a `<Kind>Pending` event.

use std::fmt::Write as _;

use trainctl_api::TrainingJob;

use super::observed::{
    Observed, ObservedGang, PodGroupPhase, PodPhase, Resource, Shortfall, WaitingFact,
};
use super::replicas::{ReplicaView, TypeView};
use crate::objects::podgroup::{GangScheduler, min_member};

/// How many pending pods are named before the rest are only counted.
const PENDING_PODS_NAMED: usize = 3;

/// Whether the runtime's facts or the gang keep the job's pods from being created now.
pub(crate) fn gated(observed: &Observed) -> bool {
    !observed.waiting.is_empty() || observed.gang.as_ref().is_some_and(gang_gates)
}

/// Whether the gang holds back the job's pods and services: upstream creates neither while
/// volcano has not admitted the PodGroup; under Kubernetes' own gang scheduling they follow the
/// PodGroup, as its enhancement proposal orders (Workload, PodGroup, then pods).
pub(crate) fn gang_gated(observed: &Observed) -> bool {
    observed.gang.as_ref().is_some_and(gang_gates)
}

/// Volcano creates no pods until the PodGroup exists and has left `Pending`; Kubernetes' own
/// gang scheduling until the PodGroup exists.
fn gang_gates(gang: &ObservedGang) -> bool {
    match gang.scheduler {
        GangScheduler::Volcano => gang
            .pod_group
            .is_none_or(|phase| phase == PodGroupPhase::Pending),
        GangScheduler::Kubernetes => gang.pod_group.is_none(),
        GangScheduler::SchedulerPlugins(_) => false,
    }
}

/// What the gang waits for: its PodGroup to exist, or volcano to admit it.
fn gang_words(job: &TrainingJob, gang: &ObservedGang) -> Option<String> {
    let name = job.name();
    match (&gang.scheduler, gang.pod_group) {
        (GangScheduler::Volcano | GangScheduler::Kubernetes, None) => {
            Some(format!("waiting for PodGroup {name} to be created"))
        }
        (GangScheduler::Volcano, Some(phase @ PodGroupPhase::Pending)) => Some(format!(
            "waiting for the gang scheduler to admit PodGroup {name} (phase {})",
            phase.as_str()
        )),
        _ => None,
    }
}

/// Why Kubernetes' scheduler cannot place the job's PodGroup, in its words, while it has not.
fn unplaced_words(
    job: &TrainingJob,
    gang: &ObservedGang,
    view: &ReplicaView<'_>,
) -> Option<String> {
    let why = gang.unplaced.as_ref()?;
    (gang.scheduler == GangScheduler::Kubernetes
        && gang.pod_group.is_some()
        && !group_placed(job, view))
    .then(|| format!("PodGroup {} cannot be placed whole ({why})", job.name()))
}

/// Whether `minAvailable` of the job's pods (every replica by default) were placed: they run or
/// ran. Kubernetes 1.36's scheduler writes `PodGroupScheduled` at each attempt, so a group placed
/// whole reads `False` again once a pod beyond `minCount` fails its own attempt; the group is not
/// what that pod waits for.
fn group_placed(job: &TrainingJob, view: &ReplicaView<'_>) -> bool {
    let placed = view
        .types
        .iter()
        .flat_map(TypeView::observed)
        .filter(|(_, pod)| {
            !pod.deleting
                && matches!(
                    pod.phase,
                    PodPhase::Running | PodPhase::Succeeded | PodPhase::Failed
                )
        })
        .count();
    i64::try_from(placed).unwrap_or(i64::MAX) >= i64::from(min_member(job))
}

/// Why the job's replicas cannot start, or `None` when nothing holds them back.
pub(crate) fn reasons(
    job: &TrainingJob,
    observed: &Observed,
    view: &ReplicaView<'_>,
) -> Option<String> {
    let mut words: Vec<String> = observed.waiting.iter().map(fact).collect();
    let unplaced = observed
        .gang
        .as_ref()
        .and_then(|gang| unplaced_words(job, gang, view));
    // When the scheduler says why for the whole group (in words as plain as `pod group is
    // unschedulable`), one pod's words say what it lacks; the others' would repeat them.
    let named = if unplaced.is_some() {
        1
    } else {
        PENDING_PODS_NAMED
    };
    words.extend(
        observed
            .gang
            .as_ref()
            .and_then(|gang| gang_words(job, gang)),
    );
    words.extend(unplaced);
    let mut pending = 0;
    for type_view in &view.types {
        for (index, pod) in type_view.observed() {
            let Some(reason) = pod.reason.as_deref() else {
                continue;
            };
            if pod.phase != PodPhase::Pending || pod.deleting {
                continue;
            }
            pending += 1;
            if pending <= named {
                let name = type_view.slot(index).name(job.name());
                words.push(match pod.message.as_deref().filter(|m| !m.is_empty()) {
                    Some(message) => format!("{name} is pending ({reason}: {message})"),
                    None => format!("{name} is pending ({reason})"),
                });
            }
        }
    }
    if pending > named {
        words.push(format!("{} more pending", pending - named));
    }
    words.extend(refusals(job, observed));
    (!words.is_empty()).then(|| words.join("; "))
}

/// The pods that could not be created and why: the first in full, the rest counted (a quota
/// refuses them all alike).
fn refusals(job: &TrainingJob, observed: &Observed) -> Vec<String> {
    let mut refused = observed
        .refused
        .iter()
        .filter(|(slot, _)| !observed.pods.contains_key(*slot));
    let Some((slot, why)) = refused.next() else {
        return Vec::new();
    };
    let mut words = vec![format!(
        "{} cannot be created ({why})",
        slot.name(job.name())
    )];
    let more = refused.count();
    if more > 0 {
        words.push(format!("{more} more cannot be created"));
    }
    words
}

fn fact(fact: &WaitingFact) -> String {
    match fact {
        WaitingFact::InsufficientResources(shortfalls) if shortfalls.is_empty() => {
            "waiting for resources".to_owned()
        }
        WaitingFact::InsufficientResources(shortfalls) => {
            let mut words = String::from("waiting for ");
            for (i, shortfall) in shortfalls.iter().enumerate() {
                if i > 0 {
                    words.push_str(" and ");
                }
                words.push_str(&shortfall_words(shortfall));
            }
            words
        }
        WaitingFact::Queued => "queued behind other jobs".to_owned(),
        WaitingFact::QuotaExceeded(message) => message.clone(),
    }
}

/// `2 GPUs, 1 free`; `4 CPUs, 2.5 free`; `16Gi memory, 1.5Gi free`.
fn shortfall_words(shortfall: &Shortfall) -> String {
    let Shortfall {
        resource,
        needed,
        free,
    } = *shortfall;
    match resource {
        Resource::Gpu => {
            let unit = if needed == 1 { "GPU" } else { "GPUs" };
            format!("{needed} {unit}, {free} free")
        }
        Resource::CpuMillis => {
            let unit = if needed == 1000 { "CPU" } else { "CPUs" };
            format!("{} {unit}, {} free", millis(needed), millis(free))
        }
        Resource::MemoryBytes => format!("{} memory, {} free", bytes(needed), bytes(free)),
    }
}

/// Millicores as cores: `2500` → `2.5`.
fn millis(value: u64) -> String {
    let mut words = (value / 1000).to_string();
    let fraction = value % 1000;
    if fraction > 0 {
        let digits = format!("{fraction:03}");
        write!(words, ".{}", digits.trim_end_matches('0'))
            .expect("writing to a String cannot fail");
    }
    words
}

/// Bytes in the largest binary unit that keeps one decimal: `1610612736` → `1.5Gi`.
fn bytes(value: u64) -> String {
    const UNITS: [&str; 5] = ["", "Ki", "Mi", "Gi", "Ti"];
    let mut unit = 0;
    let mut scaled = value;
    let mut tenths = 0;
    while scaled >= 1024 && unit + 1 < UNITS.len() {
        tenths = (scaled % 1024) * 10 / 1024;
        scaled /= 1024;
        unit += 1;
    }
    if tenths > 0 {
        format!("{scaled}.{tenths}{}", UNITS[unit])
    } else {
        format!("{scaled}{}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests;
