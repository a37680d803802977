//! Validation (docs/semantics.md §2): every problem of a defaulted job, each with its field path
//! and what is expected. Collects all errors instead of stopping at the first.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::Container;

use crate::expansion::{Budget, TooLarge, expand_within};
use crate::field_path::FieldPath;
use crate::job::TrainingJob;
use crate::kind::JobKind;
use crate::replica::{ReplicaSpec, ReplicaType};
use crate::run_policy::{MANAGED_BY_MULTIKUEUE, MANAGED_BY_TRAINING_OPERATOR};

mod issue;
mod labels;
mod mxnet;
mod names;
mod resources;
mod sizes;
mod volumes;

pub use issue::{Issue, Severity};
use issue::{replica_path, replica_specs_path};
use names::MAX_SERVICE_NAME;
pub use names::{MAX_KEY, config_map_key};
pub(crate) use names::{dns_label, dns_subdomain};
pub use sizes::MAX_ANNOTATIONS_BYTES;

/// The most replicas one replica type may ask for. `TF_CONFIG` grows with the square of the job
/// size; past this a job is a typo, not a cluster.
pub const MAX_REPLICAS_PER_TYPE: i32 = 10_000;

/// Validates a defaulted job.
#[must_use]
pub fn validate(job: &TrainingJob) -> Vec<Issue> {
    let mut issues = Vec::new();
    validate_metadata(job, &mut issues);
    sizes::validate_annotation_sizes(job, &mut issues);
    labels::validate_labels(job, &mut issues);
    validate_replica_specs(job, &mut issues);
    validate_run_policy(job, &mut issues);
    match job {
        TrainingJob::TF(_) => validate_tensorflow(job, &mut issues),
        TrainingJob::PyTorch(pytorch) => {
            validate_single_master(job, &mut issues);
            validate_pytorch(job, &pytorch.spec, &mut issues);
        }
        TrainingJob::XGBoost(_) => {
            require_type(job, &ReplicaType::Master, &mut issues);
            validate_single_master(job, &mut issues);
        }
        TrainingJob::Paddle(paddle) => {
            if let Some(elastic) = &paddle.spec.elastic_policy {
                validate_min_max(
                    &FieldPath::fields("spec.elasticPolicy"),
                    elastic.min_replicas,
                    elastic.max_replicas,
                    &mut issues,
                );
            }
        }
        TrainingJob::Jax(_) => {}
        TrainingJob::MXNet(mxnet) => mxnet::validate_mxnet(job, &mxnet.spec, &mut issues),
        TrainingJob::Mpi(mpi) => {
            validate_mpi_launcher(job, &mut issues);
            if let Some(slots) = mpi.spec.slots_per_worker
                && slots < 1
            {
                issues.push(Issue::error(
                    FieldPath::fields("spec.slotsPerWorker"),
                    format!("is {slots}: expected at least 1"),
                ));
            }
        }
    }
    issues
}

/// `metadata.name` is a DNS-1035 label, and so is every Service name derived from it.
fn validate_metadata(job: &TrainingJob, issues: &mut Vec<Issue>) {
    let name = job.name();
    let path = FieldPath::fields("metadata.name");
    if name.is_empty() {
        issues.push(Issue::error(
            path,
            "is required: a lowercase name such as `mnist` (a DNS-1035 label)",
        ));
        return;
    }
    if let Err(problem) = dns_label(name, true) {
        issues.push(Issue::error(
            path.clone(),
            format!(
                "`{name}` is not a valid name: {problem} (a DNS-1035 label: lowercase letters, \
                 digits and `-`, starting with a letter, at most 63 characters)"
            ),
        ));
        return;
    }
    if let Some(namespace) = job.metadata().namespace.as_deref()
        && let Err(problem) = dns_label(namespace, false)
    {
        issues.push(Issue::error(
            FieldPath::fields("metadata.namespace"),
            format!("`{namespace}` is not a valid namespace: {problem}"),
        ));
    }
    // Pods and Services are named `<job>-<type>-<index>`; Services must stay a DNS label.
    let longest = job
        .replica_specs()
        .iter()
        .filter(|(_, spec)| spec.replicas_or_default() > 0)
        .map(|(replica_type, spec)| {
            let last = (spec.replicas_or_default() - 1).max(0);
            format!("{name}-{}-{last}", replica_type.lowercase())
        })
        .max_by_key(String::len);
    if let Some(longest) = longest
        && longest.len() > MAX_SERVICE_NAME
    {
        issues.push(Issue::error(
            path,
            format!(
                "`{name}` is too long: the replica name `{longest}` has {} characters, and \
                 Service names are limited to {MAX_SERVICE_NAME}; shorten the job name",
                longest.len()
            ),
        ));
    }
}

fn validate_replica_specs(job: &TrainingJob, issues: &mut Vec<Issue>) {
    let kind = job.kind();
    let specs = job.replica_specs();
    let allowed = kind.replica_types();
    let allowed_list = allowed
        .iter()
        .map(ReplicaType::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if specs.is_empty() {
        issues.push(Issue::error(
            replica_specs_path(kind),
            format!("is empty: a {kind} needs at least one replica type ({allowed_list})"),
        ));
    }
    for (replica_type, spec) in specs.iter() {
        let path = replica_path(kind, replica_type);
        if !allowed.contains(replica_type) {
            issues.push(Issue::error(
                path.clone(),
                format!(
                    "`{replica_type}` is not a {kind} replica type: expected one of {allowed_list}"
                ),
            ));
        }
        validate_replicas(kind, replica_type, spec, &path, issues);
        validate_template(kind, spec, &path, issues);
    }
}

fn validate_replicas(
    kind: JobKind,
    replica_type: &ReplicaType,
    spec: &ReplicaSpec,
    path: &FieldPath,
    issues: &mut Vec<Issue>,
) {
    let Some(replicas) = spec.replicas else {
        return;
    };
    let path = path.field("replicas");
    if replicas < 0 {
        issues.push(Issue::error(
            path,
            format!("is {replicas}: expected 0 or more"),
        ));
    } else if replicas > MAX_REPLICAS_PER_TYPE {
        issues.push(Issue::error(
            path,
            format!(
                "is {replicas}: at most {MAX_REPLICAS_PER_TYPE} replicas per type are supported"
            ),
        ));
    } else if replicas == 0 && kind == JobKind::PyTorchJob && *replica_type == ReplicaType::Worker {
        issues.push(Issue::error(
            path,
            "is 0: a PyTorchJob Worker needs at least 1 replica",
        ));
    }
}

fn validate_template(kind: JobKind, spec: &ReplicaSpec, path: &FieldPath, issues: &mut Vec<Issue>) {
    let pod_path = path.field("template").field("spec");
    let containers = spec.containers();
    if containers.is_empty() {
        let expected = kind.default_container().map_or_else(
            || "at least one container".to_owned(),
            |name| format!("a container named `{name}`"),
        );
        issues.push(Issue::error(
            pod_path.field("containers"),
            format!("is empty: expected {expected}"),
        ));
        return;
    }
    for (i, container) in containers.iter().enumerate() {
        let container_path = pod_path.field("containers").index(i);
        if container.name.is_empty() {
            issues.push(Issue::error(container_path.field("name"), "is required"));
        }
        if container.image.as_deref().is_none_or(str::is_empty) {
            issues.push(Issue::error(
                container_path.field("image"),
                "is required: the container image (locally it is not pulled, but the operator needs it)",
            ));
        }
        validate_expansion(container, &container_path, issues);
        resources::validate_resources(container, &container_path, issues);
        if let Some(pod) = spec.template.spec.as_ref() {
            volumes::validate_mounts(pod, container, &container_path, issues);
        }
        for (p, port) in container.ports.iter().flatten().enumerate() {
            if !(1..=65_535).contains(&port.container_port) {
                issues.push(Issue::error(
                    container_path
                        .field("ports")
                        .index(p)
                        .field("containerPort"),
                    format!(
                        "is {}: expected a port number from 1 to 65535",
                        port.container_port
                    ),
                ));
            }
        }
    }
    if let Some(pod) = spec.template.spec.as_ref() {
        volumes::validate_volumes(pod, &pod_path, issues);
        for (i, init) in pod.init_containers.iter().flatten().enumerate() {
            let init_path = pod_path.field("initContainers").index(i);
            resources::validate_resources(init, &init_path, issues);
        }
    }
    // An unnamed container is reported above; naming it may be the fix.
    let all_named = containers.iter().all(|c| !c.name.is_empty());
    if let Some(name) = kind.default_container()
        && all_named
        && !containers.iter().any(|c| c.name == name)
    {
        let names = containers
            .iter()
            .map(|c| format!("`{}`", c.name))
            .collect::<Vec<_>>()
            .join(", ");
        issues.push(Issue::error(
            pod_path.field("containers"),
            format!("no container is named `{name}` (found {names}): a {kind} runs the framework in the container named `{name}`"),
        ));
    }
}

/// What an expansion error adds to the kernel's limit.
const EXPANSION_HINT: &str = "(each $(VAR) is replaced by that variable's value)";

/// Expands the container's literal env values and its command and args as the kubelet will
/// (a `valueFrom` counts as empty: its value is known only when the replica starts), and
/// reports each that would pass what one argument or environment string may hold, and the first
/// at which they all pass what a process's arguments and environment may hold together. The
/// expansion is bounded by both, so neither a value that doubles at every step nor many values
/// that each reference a large one cost more than that here.
fn validate_expansion(container: &Container, path: &FieldPath, issues: &mut Vec<Issue>) {
    let mut budget = Budget::default();
    let mut defined: HashMap<&str, String> = HashMap::new();
    let too_large = |field: FieldPath, too_large: TooLarge| {
        Issue::error(field, format!("{too_large} {EXPANSION_HINT}"))
    };
    for (j, var) in container.env.iter().flatten().enumerate() {
        let field = path.field("env").index(j).field("value");
        let expanded = match (&var.value_from, var.value.as_deref()) {
            (None, Some(literal)) => expand_within(literal, |name| defined.get(name), &mut budget),
            _ => Ok(String::new()),
        };
        let value = match expanded.and_then(|value| {
            // `NAME=`: the rest of the entry as the process receives it.
            budget.take(var.name.len() + 1)?;
            Ok(value)
        }) {
            Ok(value) => value,
            Err(TooLarge::One) => {
                issues.push(too_large(field, TooLarge::One));
                String::new()
            }
            // Whatever follows cannot fit either: one error says it.
            Err(TooLarge::Total) => return issues.push(too_large(field, TooLarge::Total)),
        };
        defined.insert(&var.name, value);
    }
    let command = container.command.iter().flatten().enumerate();
    let args = container.args.iter().flatten().enumerate();
    let items = command
        .map(|(at, item)| ("command", at, item))
        .chain(args.map(|(at, item)| ("args", at, item)));
    for (field, at, item) in items {
        match expand_within(item, |name| defined.get(name), &mut budget) {
            Ok(_) => {}
            Err(TooLarge::One) => {
                issues.push(too_large(path.field(field).index(at), TooLarge::One));
            }
            Err(TooLarge::Total) => {
                return issues.push(too_large(path.field(field).index(at), TooLarge::Total));
            }
        }
    }
}

fn validate_run_policy(job: &TrainingJob, issues: &mut Vec<Issue>) {
    let policy = job.run_policy();
    let path = FieldPath::fields("spec.runPolicy");
    let non_negative = [
        ("backoffLimit", policy.backoff_limit.map(i64::from)),
        (
            "ttlSecondsAfterFinished",
            policy.ttl_seconds_after_finished.map(i64::from),
        ),
    ];
    for (field, value) in non_negative {
        if let Some(value) = value
            && value < 0
        {
            issues.push(Issue::error(
                path.field(field),
                format!("is {value}: expected 0 or more"),
            ));
        }
    }
    if let Some(deadline) = policy.active_deadline_seconds
        && deadline < 1
    {
        issues.push(Issue::error(
            path.field("activeDeadlineSeconds"),
            format!("is {deadline}: expected a positive number of seconds"),
        ));
    }
    if let Some(scheduling) = &policy.scheduling_policy {
        let scheduling_path = path.field("schedulingPolicy");
        for (field, value) in [
            ("minAvailable", scheduling.min_available),
            (
                "scheduleTimeoutSeconds",
                scheduling.schedule_timeout_seconds,
            ),
        ] {
            if let Some(value) = value
                && value < 0
            {
                issues.push(Issue::error(
                    scheduling_path.field(field),
                    format!("is {value}: expected 0 or more"),
                ));
            }
        }
    }
    if let Some(managed_by) = policy.managed_by.as_deref()
        && ![MANAGED_BY_TRAINING_OPERATOR, MANAGED_BY_MULTIKUEUE].contains(&managed_by)
    {
        issues.push(Issue::error(
            path.field("managedBy"),
            format!(
                "`{managed_by}` is not supported: expected `{MANAGED_BY_TRAINING_OPERATOR}` or \
                 `{MANAGED_BY_MULTIKUEUE}`"
            ),
        ));
    }
}

fn require_type(job: &TrainingJob, replica_type: &ReplicaType, issues: &mut Vec<Issue>) {
    let kind = job.kind();
    if !job.replica_specs().contains_key(replica_type) {
        issues.push(Issue::error(
            replica_specs_path(kind),
            format!("has no `{replica_type}`: a {kind} requires one"),
        ));
    }
}

/// PyTorch and XGBoost: `Master.replicas` is 1 (unset means 1, by defaulting).
fn validate_single_master(job: &TrainingJob, issues: &mut Vec<Issue>) {
    let kind = job.kind();
    if let Some(master) = job.replica_specs().get(&ReplicaType::Master) {
        let replicas = master.replicas_or_default();
        if replicas != 1 {
            issues.push(Issue::error(
                replica_path(kind, &ReplicaType::Master).field("replicas"),
                format!("is {replicas}: a {kind} has exactly 1 Master"),
            ));
        }
    }
}

/// TF: at most one of Chief and Master, and (a warning, as upstream accepted it) one replica.
fn validate_tensorflow(job: &TrainingJob, issues: &mut Vec<Issue>) {
    let specs = job.replica_specs();
    if specs.contains_key(&ReplicaType::Chief) && specs.contains_key(&ReplicaType::Master) {
        issues.push(Issue::error(
            replica_specs_path(JobKind::TFJob),
            "has both `Chief` and `Master`: a TFJob has at most one of them (they are the same role)",
        ));
    }
    for role in [ReplicaType::Chief, ReplicaType::Master] {
        if let Some(spec) = specs.get(&role)
            && spec.replicas_or_default() > 1
        {
            issues.push(Issue::warning(
                replica_path(JobKind::TFJob, &role).field("replicas"),
                format!(
                    "is {}: TensorFlow accepts a single {} task; the others will fail to start",
                    spec.replicas_or_default(),
                    role.lowercase()
                ),
            ));
        }
    }
    if !crate::tensorflow::is_distributed(job.replica_specs()) {
        return;
    }
    for (replica_type, spec) in specs.iter() {
        let containers = spec.template.spec.as_ref().map(|pod| &pod.containers);
        let Some((i, container)) = containers
            .into_iter()
            .flat_map(|containers| containers.iter().enumerate())
            .find(|(_, container)| container.name == crate::tensorflow::CONTAINER)
        else {
            continue;
        };
        for (j, var) in container.env.iter().flatten().enumerate() {
            if var.name == "TF_CONFIG" {
                issues.push(Issue::warning(
                    replica_path(JobKind::TFJob, replica_type)
                        .field("template")
                        .field("spec")
                        .field("containers")
                        .index(i)
                        .field("env")
                        .index(j),
                    "`TF_CONFIG` is replaced by the one the operator injects into every replica \
                     of a distributed TFJob (as Kubeflow's operator does): this value is never \
                     seen; remove it",
                ));
            }
        }
    }
}

fn validate_pytorch(
    job: &TrainingJob,
    spec: &crate::pytorch::PyTorchJobSpec,
    issues: &mut Vec<Issue>,
) {
    let Some(elastic) = &spec.elastic_policy else {
        return;
    };
    let path = FieldPath::fields("spec.elasticPolicy");
    require_type(job, &ReplicaType::Worker, issues);
    if elastic.n_proc_per_node.is_some() {
        if spec.nproc_per_node.is_some() {
            issues.push(Issue::error(
                path.field("nProcPerNode"),
                "must not be used with `spec.nprocPerNode`: keep only `spec.nprocPerNode`",
            ));
        } else {
            issues.push(Issue::warning(
                path.field("nProcPerNode"),
                "is deprecated: use `spec.nprocPerNode`",
            ));
        }
    }
    validate_min_max(&path, elastic.min_replicas, elastic.max_replicas, issues);
}

fn validate_min_max(path: &FieldPath, min: Option<i32>, max: Option<i32>, issues: &mut Vec<Issue>) {
    if let Some(min) = min
        && min < 1
    {
        issues.push(Issue::error(
            path.field("minReplicas"),
            format!("is {min}: expected at least 1"),
        ));
    }
    if let (Some(min), Some(max)) = (min, max)
        && min > max
    {
        issues.push(Issue::error(
            path.field("maxReplicas"),
            format!("is {max}, below minReplicas ({min}): expected minReplicas ≤ maxReplicas"),
        ));
    }
}

/// MPI: exactly one Launcher.
fn validate_mpi_launcher(job: &TrainingJob, issues: &mut Vec<Issue>) {
    match job.replica_specs().get(&ReplicaType::Launcher) {
        None => require_type(job, &ReplicaType::Launcher, issues),
        Some(launcher) if launcher.replicas_or_default() != 1 => issues.push(Issue::error(
            replica_path(JobKind::MPIJob, &ReplicaType::Launcher).field("replicas"),
            format!(
                "is {}: an MPIJob has exactly 1 Launcher",
                launcher.replicas_or_default()
            ),
        )),
        Some(_) => {}
    }
}

#[cfg(test)]
mod tests;
