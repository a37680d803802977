//! One replica's pod: the template, plus our labels, env, init containers, restart policy and
//! gang-scheduling fields.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use trainctl_api::{ReplicaType, RestartPolicy, TrainingJob};

use super::options::BuildOptions;
use super::owner::owner_reference;
use super::{mpi, podgroup};
use crate::env::{JobEnv, pytorch};
use crate::naming::{pod_labels, replica_name};

/// The pod of replica slot `(replica_type, index)`, or `None` when the job has no such type.
///
/// From the template, the pod keeps its labels (ours win on conflict), annotations and
/// finalizers, and its whole spec, to which the framework env is appended.
#[must_use]
pub fn build_pod(
    job: &TrainingJob,
    replica_type: &ReplicaType,
    index: i32,
    options: &BuildOptions,
) -> Option<Pod> {
    build_pod_with(
        &JobEnv::new(job, &options.addressing),
        job,
        replica_type,
        index,
        options,
    )
}

/// [`build_pod`] with the job's shared environment already prepared: one [`JobEnv`] serves
/// every pod of the job (its TensorFlow cluster map is serialized once), so that a runtime can
/// build a job's pods one at a time, as it sends them.
#[must_use]
pub fn build_pod_with(
    job_env: &JobEnv<'_>,
    job: &TrainingJob,
    replica_type: &ReplicaType,
    index: i32,
    options: &BuildOptions,
) -> Option<Pod> {
    let replica = job.replica_specs().get(replica_type)?;
    let template = replica.template.metadata.clone().unwrap_or_default();
    let mut spec = replica.template.spec.clone().unwrap_or_default();
    let mut labels = template.labels.unwrap_or_default();
    labels.extend(pod_labels(job, replica_type, index));
    let mut metadata = ObjectMeta {
        name: Some(replica_name(job.name(), replica_type, index)),
        namespace: Some(job.namespace().to_owned()),
        labels: Some(labels),
        annotations: template.annotations.filter(|a| !a.is_empty()),
        finalizers: template.finalizers,
        owner_references: Some(vec![owner_reference(job)]),
        ..ObjectMeta::default()
    };

    job_env.inject(replica_type, index, &mut spec);
    // Locally the master's address always resolves: waiting for DNS is Kubernetes-only plumbing.
    if !options.addressing.is_loopback() && pytorch::needs_init_container(job, replica_type) {
        spec.init_containers
            .get_or_insert_with(Vec::new)
            .push(pytorch::init_container(
                job,
                &options.pytorch_init_image,
                options.pytorch_init_max_tries,
            ));
    }
    if let TrainingJob::Mpi(_) = job {
        mpi::prepare_pod(job, replica_type, &mut spec, options);
    }
    let policy = replica
        .restart_policy
        .unwrap_or_else(|| job.kind().default_restart_policy());
    spec.restart_policy = Some(pod_restart_policy(policy).to_owned());
    if let Some(scheduler) = options.gang_scheduler() {
        podgroup::decorate_pod(&mut metadata, &mut spec, job, replica_type, &scheduler);
    }
    Some(Pod {
        metadata,
        spec: Some(spec),
        status: None,
    })
}

/// The pod's `restartPolicy` for a replica's policy: `ExitCode` is the engine's business (the
/// pod is re-created), so the kubelet must not restart it: `Never`.
#[must_use]
pub fn pod_restart_policy(policy: RestartPolicy) -> &'static str {
    match policy {
        RestartPolicy::ExitCode => RestartPolicy::Never.as_str(),
        other => other.as_str(),
    }
}
