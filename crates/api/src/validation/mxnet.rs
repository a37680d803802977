//! MXJob's own rules (docs/semantics.md §2): a `jobMode`, replica types of that mode, one
//! scheduler that the parameter servers can meet at, and a `Tuner` in a tuning job.

use super::issue::{Issue, replica_path, replica_specs_path};
use crate::field_path::FieldPath;
use crate::job::TrainingJob;
use crate::kind::JobKind;
use crate::mxnet::{JobMode, MXJobSpec};
use crate::replica::ReplicaType;

/// What `spec.jobMode` may be, and which replica types go with each value.
const MODES: &str = "`MXTrain` (a Scheduler, Servers and Workers) or `MXTune` (a TunerTracker, \
                     TunerServers and a Tuner)";

/// Validates what is particular to an MXJob.
pub(super) fn validate_mxnet(job: &TrainingJob, spec: &MXJobSpec, issues: &mut Vec<Issue>) {
    let specs = job.replica_specs();
    let has = |replica_type: &ReplicaType| {
        specs
            .get(replica_type)
            .is_some_and(|spec| spec.replicas_or_default() > 0)
    };
    match spec.job_mode {
        None => issues.push(Issue::error(
            FieldPath::fields("spec.jobMode"),
            format!("is required: {MODES}"),
        )),
        Some(mode) => {
            for replica_type in specs.keys() {
                if let Some(other) = JobMode::ALL
                    .into_iter()
                    .find(|other| *other != mode && other.replica_types().contains(replica_type))
                {
                    issues.push(Issue::warning(
                        replica_path(JobKind::MXJob, replica_type),
                        format!(
                            "`{replica_type}` is an {other} replica type in an {mode} job: \
                             jobMode only describes the job (upstream ran it the same way \
                             whatever it said), so the replica types decide; is jobMode \
                             meant to be {other}?"
                        ),
                    ));
                }
            }
            if mode == JobMode::MXTune && !has(&ReplicaType::Tuner) {
                issues.push(Issue::error(
                    replica_specs_path(JobKind::MXJob),
                    "has no `Tuner`: an MXTune job needs one (the Tuner decides that the job \
                     succeeded; the tracker and tuner servers serve until stopped)",
                ));
            }
        }
    }
    if let Some(scheduler) = specs.get(&ReplicaType::Scheduler)
        && scheduler.replicas_or_default() > 1
    {
        issues.push(Issue::error(
            replica_path(JobKind::MXJob, &ReplicaType::Scheduler).field("replicas"),
            format!(
                "is {}: an MXJob has at most 1 Scheduler (every replica meets scheduler 0, \
                 named by DMLC_PS_ROOT_URI)",
                scheduler.replicas_or_default()
            ),
        ));
    }
    if has(&ReplicaType::Server) && !has(&ReplicaType::Scheduler) {
        issues.push(Issue::error(
            replica_specs_path(JobKind::MXJob),
            "has `Server` but no `Scheduler`: parameter servers and workers meet at the \
             Scheduler (DMLC_PS_ROOT_URI); add a Scheduler with 1 replica",
        ));
    }
}
