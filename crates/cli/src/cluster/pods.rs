//! A job's pods: found by the labels the engine puts on them (docs/semantics.md §3) and the job's
//! controller owner reference, and shown as `describe`'s replica rows.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod};
use kube::api::{Api, ListParams};
use trainctl_api::resources::ReplicaNeeds;
use trainctl_api::{JobKind, ReplicaType, TrainingJob};
use trainctl_engine::ReplicaSlot;
use trainctl_engine::naming::{
    JOB_NAME_LABEL, OPERATOR_NAME_LABEL, REPLICA_TYPE_LABEL, replica_index,
};
use trainctl_operator::job::retired_restarts;

use super::{Cluster, ClusterError, ClusterJob, Operation, Resource};
use crate::view::description::ReplicaRow;

impl Cluster {
    /// The pods of `job`: those carrying its labels that it controls, in slot order.
    pub async fn pods_of(&self, job: &ClusterJob) -> Result<Vec<Pod>, ClusterError> {
        let selector = format!(
            "{JOB_NAME_LABEL}={},{OPERATOR_NAME_LABEL}={}",
            job.name(),
            job.kind.operator_name()
        );
        let mut pods = self
            .list_pods(Some(job.namespace()), &selector)
            .await?
            .into_iter()
            .filter(|pod| controller_uid(pod) == Some(job.uid()))
            .filter_map(|pod| Some((slot_of(&pod)?, pod)))
            .collect::<Vec<_>>();
        pods.sort_by(|(a, _), (b, _)| a.cmp(b));
        Ok(pods.into_iter().map(|(_, pod)| pod).collect())
    }

    /// Every pod of a training job in `namespace` (every namespace when `None`).
    pub async fn training_pods(&self, namespace: Option<&str>) -> Result<Vec<Pod>, ClusterError> {
        self.list_pods(namespace, JOB_NAME_LABEL).await
    }

    async fn list_pods(
        &self,
        namespace: Option<&str>,
        selector: &str,
    ) -> Result<Vec<Pod>, ClusterError> {
        let api: Api<Pod> = match namespace {
            Some(namespace) => Api::namespaced(self.client.clone(), namespace),
            None => Api::all(self.client.clone()),
        };
        api.list(&ListParams::default().labels(selector))
            .await
            .map(|list| list.items)
            .map_err(|error| self.error(Operation::new("list", Resource::Pods, namespace), error))
    }
}

/// The uid of the pod's controller.
pub fn controller_uid(pod: &Pod) -> Option<&str> {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|owner| owner.controller == Some(true))
        .map(|owner| owner.uid.as_str())
}

/// The replica slot a pod stands for, from its labels.
pub fn slot_of(pod: &Pod) -> Option<ReplicaSlot> {
    let labels = pod.metadata.labels.as_ref()?;
    let replica_type = ReplicaType::parse(labels.get(REPLICA_TYPE_LABEL)?);
    let index = replica_index(&replica_type, labels)?;
    Some(ReplicaSlot::new(replica_type, index))
}

/// Why `job`, `Running` or `Restarting`, does not get on, from its `pods`: `CrashLoopBackOff`
/// when the framework container of each of its pods that has not ended (phase `Succeeded` or
/// `Failed`) waits so, as kubectl shows such a pod's STATUS; the same rule as this machine's
/// (`trainctl_local::store::replicas_reason`).
pub fn pods_reason<'a>(
    job: &ClusterJob,
    pods: impl IntoIterator<Item = &'a Pod>,
) -> Option<&'static str> {
    const CRASH_LOOP: &str = "CrashLoopBackOff";
    if !matches!(job.state(), "Running" | "Restarting") {
        return None;
    }
    let waiting = |pod: &Pod| {
        main_status(job.kind, pod)
            .and_then(|status| status.state.as_ref()?.waiting.as_ref()?.reason.as_deref())
            == Some(CRASH_LOOP)
    };
    let mut left = pods.into_iter().filter(|pod| {
        let phase = pod
            .status
            .as_ref()
            .and_then(|status| status.phase.as_deref());
        !matches!(phase, Some("Succeeded" | "Failed"))
    });
    let first = left.next()?;
    (waiting(first) && left.all(waiting)).then_some(CRASH_LOOP)
}

/// The name of the container that runs the framework ([`JobKind::framework_container`]).
pub fn main_container(kind: JobKind, pod: &Pod) -> Option<String> {
    let containers = &pod.spec.as_ref()?.containers;
    kind.framework_container(containers)
        .map(|container| container.name.clone())
}

/// The status of the container that runs the framework.
pub fn main_status(kind: JobKind, pod: &Pod) -> Option<&ContainerStatus> {
    let name = main_container(kind, pod)?;
    pod.status
        .as_ref()?
        .container_statuses
        .iter()
        .flatten()
        .find(|status| status.name == name)
}

/// `describe`'s rows for `job`'s pods (as [`Cluster::pods_of`] returns them): the pod's phase,
/// the framework container's last exit code and start, the restarts of all its containers, its
/// node, the framework's port, and the GPUs the pod asks for (their count: which devices the
/// node gave is not in the API).
pub fn replica_rows(job: &TrainingJob, pods: &[Pod]) -> Vec<ReplicaRow> {
    pods.iter()
        .filter_map(|pod| {
            let slot = slot_of(pod)?;
            let status = pod.status.as_ref();
            let main = main_status(job.kind(), pod);
            let state = main.and_then(|main| main.state.as_ref());
            let terminated = state
                .and_then(|state| state.terminated.as_ref())
                .or_else(|| {
                    main.and_then(|main| main.last_state.as_ref())
                        .and_then(|last| last.terminated.as_ref())
                });
            let started = state.and_then(|state| {
                state
                    .running
                    .as_ref()
                    .and_then(|running| running.started_at.as_ref())
                    .or_else(|| {
                        state
                            .terminated
                            .as_ref()
                            .and_then(|terminated| terminated.started_at.as_ref())
                    })
            });
            let spec = pod.spec.as_ref();
            let gpus = spec
                .and_then(|spec| {
                    ReplicaNeeds::of_pod(slot.replica_type.clone(), slot.index, spec).ok()
                })
                .map_or(0, |needs| needs.gpus);
            Some(ReplicaRow {
                name: slot.to_string(),
                state: status
                    .and_then(|status| status.phase.clone())
                    .unwrap_or_else(|| "-".to_owned()),
                exit_code: terminated.map(|terminated| terminated.exit_code),
                restarts: status
                    .and_then(|status| status.container_statuses.as_ref())
                    .map_or(0, |containers| {
                        containers
                            .iter()
                            .map(|container| container.restart_count)
                            .fold(0, i32::saturating_add)
                    }),
                place: spec.and_then(|spec| spec.node_name.clone()),
                port: spec.and_then(|spec| framework_port(job.kind(), pod, &spec.containers)),
                gpus: (gpus > 0).then(|| gpus.to_string()),
                started: started.map(|time| time.0),
            })
        })
        .collect()
}

/// The framework container's port: the kind's named port, else its first.
pub fn framework_port(kind: JobKind, pod: &Pod, containers: &[Container]) -> Option<u16> {
    let name = main_container(kind, pod)?;
    let ports = containers
        .iter()
        .find(|container| container.name == name)?
        .ports
        .as_deref()?;
    let named = kind
        .default_port()
        .and_then(|(port_name, _)| ports.iter().find(|p| p.name.as_deref() == Some(port_name)));
    named
        .or_else(|| ports.first())
        .and_then(|port| u16::try_from(port.container_port).ok())
}

/// Each job's restarts, by the job's uid: the restarts of the containers of the pods it
/// controls, plus those of its pods already replaced (the operator's ledger on the job).
pub fn restarts_by_job<'a>(jobs: &'a [ClusterJob], pods: &[Pod]) -> HashMap<&'a str, i64> {
    let mut restarts: HashMap<&str, i64> = jobs
        .iter()
        .map(|job| (job.uid(), i64::from(retired_restarts(&job.job))))
        .collect();
    for pod in pods {
        let Some(total) = controller_uid(pod).and_then(|uid| restarts.get_mut(uid)) else {
            continue;
        };
        let containers = pod
            .status
            .as_ref()
            .and_then(|status| status.container_statuses.as_deref())
            .unwrap_or_default();
        *total += containers
            .iter()
            .map(|container| i64::from(container.restart_count))
            .sum::<i64>();
    }
    restarts
}
