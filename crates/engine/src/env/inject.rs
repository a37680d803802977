//! [`JobEnv`]: a job's framework environment, computed once, appended to each replica's
//! containers as its framework decides.

use k8s_openapi::api::core::v1::{Container, EnvVar, PodSpec};
use trainctl_api::{ReplicaType, TrainingJob};

use super::{jax, mpi, mxnet, paddle, pytorch, tensorflow, xgboost};
use crate::addressing::Addressing;

/// What the replicas of one job share in their environment, computed once per job (TF's and
/// MXNet's cluster maps are the same for every replica and the costly part of `TF_CONFIG` and
/// `MX_CONFIG`).
#[derive(Debug, Clone)]
pub struct JobEnv<'a> {
    job: &'a TrainingJob,
    addressing: &'a Addressing,
    tf_cluster: Option<tensorflow::ClusterConfig>,
    mx_cluster: Option<mxnet::ClusterConfig>,
}

impl<'a> JobEnv<'a> {
    /// Prepares the environment of `job`'s replicas under `addressing`.
    #[must_use]
    pub fn new(job: &'a TrainingJob, addressing: &'a Addressing) -> JobEnv<'a> {
        let tf_cluster = match job {
            TrainingJob::TF(_) => tensorflow::ClusterConfig::new(job, addressing),
            _ => None,
        };
        let mx_cluster = matches!(job, TrainingJob::MXNet(_))
            .then(|| mxnet::ClusterConfig::new(job, addressing));
        JobEnv {
            job,
            addressing,
            tf_cluster,
            mx_cluster,
        }
    }

    /// Appends the framework environment of replica slot `(replica_type, index)` to the
    /// containers of `pod` that receive it.
    pub fn inject(&self, replica_type: &ReplicaType, index: i32, pod: &mut PodSpec) {
        let (job, addressing) = (self.job, self.addressing);
        match job {
            TrainingJob::TF(_) => append_to_first_named(
                pod,
                tensorflow::CONTAINER,
                &tensorflow::env_vars(self.tf_cluster.as_ref(), replica_type, index),
            ),
            TrainingJob::PyTorch(_) => {
                append_to_all(
                    pod,
                    &pytorch::env_vars(job, replica_type, index, addressing),
                );
            }
            TrainingJob::XGBoost(_) => {
                append_to_all(
                    pod,
                    &xgboost::env_vars(job, replica_type, index, addressing),
                );
            }
            TrainingJob::Paddle(_) => {
                append_to_all(pod, &paddle::env_vars(job, replica_type, index, addressing));
            }
            TrainingJob::Jax(_) => {
                append_to_all(pod, &jax::env_vars(job, replica_type, index, addressing));
            }
            TrainingJob::MXNet(_) => {
                if let Some(cluster) = &self.mx_cluster {
                    append_to_all(pod, &cluster.env_vars(replica_type, index));
                }
            }
            TrainingJob::Mpi(_) => {
                if *replica_type == ReplicaType::Launcher
                    && let Some(container) = pod.containers.first_mut()
                {
                    let vars =
                        mpi::launcher_env_vars(job, container.env.as_deref().unwrap_or_default());
                    append(container, &vars);
                }
            }
        }
    }
}

/// Appends `vars` to a container's env (an untouched container keeps an absent env absent),
/// replacing the template's variables of the same names.
///
/// Upstream appended its variables after the user's, so a user's `TF_CONFIG` (the
/// `allreduce-tfjob` seed declares one from a `fieldRef`) stood twice in the pod and the kubelet
/// used the last one, upstream's. One entry per name gives the process the same environment and
/// a pod that every client accepts: server-side apply, `kubectl apply` and strict decoders refuse
/// duplicate names in `env`.
fn append(container: &mut Container, vars: &[EnvVar]) {
    if vars.is_empty() {
        return;
    }
    let env = container.env.get_or_insert_with(Vec::new);
    env.retain(|existing| vars.iter().all(|var| var.name != existing.name));
    env.extend_from_slice(vars);
}

/// Appends `vars` to every container (init containers excluded).
fn append_to_all(pod: &mut PodSpec, vars: &[EnvVar]) {
    for container in &mut pod.containers {
        append(container, vars);
    }
}

/// Appends `vars` to the first container named `name`, if any.
fn append_to_first_named(pod: &mut PodSpec, name: &str, vars: &[EnvVar]) {
    if let Some(container) = pod.containers.iter_mut().find(|c| c.name == name) {
        append(container, vars);
    }
}
