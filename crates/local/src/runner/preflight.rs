//! Every reason a valid job cannot run on this machine as written, found at once: too large for
//! the machine, volumes it cannot mount, a replica whose command, script, working directory or
//! env reference is not here, more replicas than open files allow.
//!
//! A run that meets one of them fails with all of them ([`Runner::blocked_message`]), rather
//! than one a try; `trainctl validate` reports them without running anything ([`check`]).

use std::collections::BTreeMap;
use std::path::Path;

use trainctl_api::field_path::FieldPath;
use trainctl_api::manifest::Companion;
use trainctl_api::{ReplicaType, TrainingJob};

use super::Runner;
use super::launch::{self, LaunchContext, prepare};
use super::volumes::{self, VolumePaths};
use crate::kubelet::admission::{Admission, Allocation, FreeResources, admit};
use crate::kubelet::resources::{ContainerLimits, NodeCapacity};
use crate::kubelet::volumes::ClaimPaths;
use crate::process::cgroup::{self, Limits};
use crate::process::logs::{Console, LogLimit};
use crate::process::{mounts, open_files};
use crate::store::Layout;

/// Something found about running a job on this machine: a reason it cannot, or a warning.
///
/// A failed job's message is `cannot run on this machine: ` and each blocker's message,
/// separated by `; also, `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The field concerned: a replica's container, or the replica specs as a whole.
    pub path: FieldPath,
    /// What is wrong here, in the words of the failed job's condition or of the run's warning.
    pub message: String,
}

/// What [`check`] finds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preflight {
    /// Every reason the job cannot run here; empty when it can.
    pub blockers: Vec<Finding>,
    /// What a run would warn of (a script that is not here, which a replica would fail to open).
    pub warnings: Vec<Finding>,
}

/// The machine a job is checked against, as `run` or the server would see it.
#[derive(Clone, Copy)]
pub struct Machine<'a> {
    /// What it offers replicas.
    pub capacity: &'a NodeCapacity,
    /// What `spec.nodeName` reports.
    pub node_name: &'a str,
    /// Whether replicas get their volumes (`false`: `--no-volumes`).
    pub volumes: bool,
    /// The state directory the job would run from (nothing in it is written).
    pub state_dir: &'a Path,
    /// The claims bound to a directory of the user's.
    pub bindings: &'a dyn ClaimPaths,
}

/// Every reason `job`, submitted with `companions`, cannot run on `machine`, and what a run
/// would warn of.
#[must_use]
pub fn check(job: &TrainingJob, companions: &[Companion], machine: &Machine<'_>) -> Preflight {
    let paths = VolumePaths::of(Layout(machine.state_dir), "preflight");
    let console = Console::quiet();
    let context = LaunchContext {
        companions,
        capacity: machine.capacity,
        node_name: machine.node_name,
        logs_dir: machine.state_dir,
        console: &console,
        log_limit: LogLimit::default(),
        volumes: machine.volumes.then(|| paths.setup(machine.bindings)),
        tensorboard_dir: paths.tensorboard(),
    };
    let mut warnings = script_warnings(job);
    warnings.extend(limits_warning(job));
    Preflight {
        blockers: blockers(job, &context),
        warnings,
    }
}

/// One warning naming each replica type's limits that this machine's cgroups cannot enforce
/// (`limits.memory`, `limits.cpu`), with why; `None` when each is enforced, or none is set.
pub(super) fn limits_warning(job: &TrainingJob) -> Option<Finding> {
    let mut unenforced = Vec::new();
    let mut first_path = None;
    let mut why = String::new();
    for (replica_type, spec) in &job.replica_specs().0 {
        let Some(container) = spec
            .template
            .spec
            .as_ref()
            .and_then(|pod| job.kind().framework_container(&pod.containers))
        else {
            continue;
        };
        let Ok(limits) = ContainerLimits::of(container) else {
            continue;
        };
        let limits = Limits::from(limits);
        let Some((resources, reason)) = cgroup::unenforced(&limits) else {
            continue;
        };
        let quantities = container.resources.as_ref().and_then(|r| r.limits.as_ref());
        let named: Vec<String> = resources
            .iter()
            .map(|resource| {
                let amount = quantities
                    .and_then(|q| q.get(*resource))
                    .map_or("", |q| q.0.as_str());
                format!("{resource} {amount}")
            })
            .collect();
        unenforced.push(format!("{replica_type} {}", named.join(", ")));
        first_path.get_or_insert_with(|| {
            container_path(job, replica_type)
                .field("resources")
                .field("limits")
        });
        why = reason;
    }
    Some(Finding {
        path: first_path?,
        message: format!(
            "the replicas' limits are not enforced on this machine ({}): a replica may use more \
             than its limit, where a cluster would throttle or kill it (OOMKilled); {why}",
            unenforced.join("; ")
        ),
    })
}

/// A warning for each replica type whose interpreter runs a script that is not here.
pub(super) fn script_warnings(job: &TrainingJob) -> Vec<Finding> {
    launch::missing_scripts(job)
        .into_iter()
        .map(|missing| {
            let (replica_type, program, script) =
                (missing.replica_type, missing.program, missing.script);
            let message = if Path::new(&script).is_absolute() {
                format!(
                    "{replica_type}: `{script}` does not exist on this machine (the image's files \
                     are not used locally): `{program}` will fail to open it; put the script \
                     there, or point the command at where it is"
                )
            } else {
                format!(
                    "{replica_type}: `{script}` is not in {}, where the replica starts: \
                     `{program}` will fail to open it; run trainctl from the directory the path \
                     is relative to, or set the container's `workingDir`",
                    missing.working_dir.display()
                )
            };
            Finding {
                path: container_path(job, &replica_type),
                message,
            }
        })
        .collect()
}

/// Every reason `job` cannot run where `context` prepares its replicas.
fn blockers(job: &TrainingJob, context: &LaunchContext<'_>) -> Vec<Finding> {
    let mut found = machine_blockers(job, context);
    found.extend(replica_blockers(job, context));
    found
}

/// The reasons that are the machine's: volumes it cannot mount, a job larger than it, more
/// replicas than its open files allow, an amount it cannot read.
fn machine_blockers(job: &TrainingJob, context: &LaunchContext<'_>) -> Vec<Finding> {
    let specs = FieldPath::fields("spec").field(job.kind().replica_specs_field());
    let mut found = Vec::new();
    if context.volumes.is_some()
        && !volumes::mounted(job).is_empty()
        && let Some(why) = mounts::unavailable()
    {
        found.push(Finding {
            path: specs.clone(),
            message: format!("the replicas' volumes cannot be mounted: {why}"),
        });
    }
    match launch::needs(job) {
        Ok(needs) => {
            let whole = FreeResources::all_of(context.capacity);
            if let Admission::NeverFits(message) = admit(&needs, &whole, context.capacity) {
                found.push(Finding {
                    path: specs.clone(),
                    message,
                });
            }
            if let Err(message) = open_files::fits(needs.len() as u64) {
                found.push(Finding {
                    path: specs,
                    message,
                });
            }
        }
        Err(error) => found.push(Finding {
            path: container_path(job, &error.replica_type),
            message: error.to_string(),
        }),
    }
    found
}

/// The reasons that are a replica's: a command, script, working directory or env reference
/// that is not here, found by preparing every replica.
fn replica_blockers(job: &TrainingJob, context: &LaunchContext<'_>) -> Vec<Finding> {
    let Err(unrunnable) = prepare(job, &BTreeMap::new(), &Allocation::default(), context) else {
        return Vec::new();
    };
    let last = unrunnable.errors.len().saturating_sub(1);
    unrunnable
        .errors
        .iter()
        .enumerate()
        .map(|(n, error)| {
            let more = match unrunnable.more {
                _ if n != last => String::new(),
                0 => String::new(),
                1 => "; and 1 more replica".to_owned(),
                more => format!("; and {more} more replicas"),
            };
            Finding {
                path: container_path(job, &error.replica_type),
                message: format!("{error}{more}"),
            }
        })
        .collect()
}

/// Where the container that runs the framework is in the replica spec of `replica_type`.
fn container_path(job: &TrainingJob, replica_type: &ReplicaType) -> FieldPath {
    let template = FieldPath::fields("spec")
        .field(job.kind().replica_specs_field())
        .key(replica_type.as_str())
        .field("template")
        .field("spec");
    let index = job
        .replica_specs()
        .get(replica_type)
        .and_then(|spec| spec.template.spec.as_ref())
        .and_then(|pod| {
            let main = job.kind().framework_container(&pod.containers)?;
            pod.containers.iter().position(|c| std::ptr::eq(c, main))
        });
    match index {
        Some(index) => template.field("containers").index(index),
        None => template,
    }
}

/// The failed condition's message of a job that cannot run for `found` and `others`: each
/// said once, `found` first (one of `others` it says already is not repeated).
fn message(found: &str, others: &[Finding]) -> String {
    let mut said = vec![found];
    for other in others {
        if !said
            .iter()
            .any(|reason| reason.contains(other.message.as_str()))
        {
            said.push(&other.message);
        }
    }
    format!("cannot run on this machine: {}", said.join("; also, "))
}

impl Runner<'_> {
    /// The failed condition's message of a job that cannot run here for `found`, with every
    /// other reason [`check`] finds.
    pub(super) fn blocked_message(&self, found: &str) -> String {
        message(found, &blockers(&self.job, &self.launch_context()))
    }

    /// The failed condition's message of a job whose replicas cannot run as `found` says (they
    /// were prepared: their problems are known), with the machine's reasons beside.
    pub(super) fn replicas_blocked_message(&self, found: &str) -> String {
        message(found, &machine_blockers(&self.job, &self.launch_context()))
    }

    /// The failed condition's message of a job that cannot run for `found`, a reason of
    /// another kind (its quota), with every reason [`check`] finds beside it.
    pub(super) fn blocked_beside(&self, found: &str) -> String {
        let blockers = blockers(&self.job, &self.launch_context());
        if blockers.is_empty() {
            return found.to_owned();
        }
        let here = blockers.iter().map(|blocker| blocker.message.as_str());
        format!(
            "{found}; also, cannot run on this machine: {}",
            here.collect::<Vec<_>>().join("; also, ")
        )
    }
}
