//! How replicas reach each other: Kubernetes Service DNS, or loopback ports on one machine.
//!
//! The environment a replica gets has the same shape in both modes; only the hosts and ports in
//! it differ (docs/semantics.md §4.1).

use std::collections::BTreeMap;

use trainctl_api::{ReplicaType, TrainingJob};

use crate::naming::replica_name;

/// The host every replica has in [`Addressing::Loopback`] mode.
pub const LOOPBACK_HOST: &str = "127.0.0.1";

/// Where each replica slot of a job can be reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Addressing {
    /// On Kubernetes: every replica has a headless Service named like its pod.
    ///
    /// TF addresses are qualified, `<name>.<namespace>.svc[.<cluster domain>]`; the other
    /// frameworks use the short Service name.
    Cluster {
        /// The cluster's DNS domain appended to qualified names (`CUSTOM_CLUSTER_DOMAIN`);
        /// `None` or empty appends nothing.
        cluster_domain: Option<String>,
    },
    /// On this machine: every replica is `127.0.0.1` with a port of its own.
    Loopback {
        /// The port of each replica slot, by `(type, index)`. A slot missing here keeps the port
        /// declared in its pod template.
        ports: BTreeMap<(ReplicaType, i32), u16>,
    },
}

impl Default for Addressing {
    /// Kubernetes Service DNS without a custom cluster domain.
    fn default() -> Self {
        Addressing::Cluster {
            cluster_domain: None,
        }
    }
}

impl Addressing {
    /// The host of replica slot `(replica_type, index)` of `job`.
    ///
    /// With `qualified`, a cluster address is the full Service DNS name (TF uses it); otherwise
    /// the short Service name. Loopback addresses are always [`LOOPBACK_HOST`].
    #[must_use]
    pub fn host(
        &self,
        job: &TrainingJob,
        replica_type: &ReplicaType,
        index: i32,
        qualified: bool,
    ) -> String {
        match self {
            Addressing::Loopback { .. } => LOOPBACK_HOST.to_owned(),
            Addressing::Cluster { cluster_domain } => {
                let name = replica_name(job.name(), replica_type, index);
                if !qualified {
                    return name;
                }
                let mut host = format!("{name}.{}.svc", job.namespace());
                if let Some(domain) = cluster_domain.as_deref().filter(|d| !d.is_empty()) {
                    host.push('.');
                    host.push_str(domain);
                }
                host
            }
        }
    }

    /// The port replica slot `(replica_type, index)` serves its framework on: its loopback port,
    /// or `declared` (the port in its pod template) on a cluster or for a slot without one.
    #[must_use]
    pub fn port(&self, replica_type: &ReplicaType, index: i32, declared: i32) -> i32 {
        match self {
            Addressing::Cluster { .. } => declared,
            Addressing::Loopback { ports } => ports
                .get(&(replica_type.clone(), index))
                .map_or(declared, |&port| i32::from(port)),
        }
    }

    /// Whether replicas run on this machine rather than on a cluster.
    #[must_use]
    pub fn is_loopback(&self) -> bool {
        matches!(self, Addressing::Loopback { .. })
    }
}

/// The port a replica type declares for its framework: the port with the kind's default port
/// name on the kind's default container, else the kind's default port number (as upstream).
///
/// `None` for MPI, which declares no port.
#[must_use]
pub fn declared_port(job: &TrainingJob, replica_type: &ReplicaType) -> Option<i32> {
    let kind = job.kind();
    let (port_name, default_port) = kind.default_port()?;
    let container_name = kind.default_container()?;
    let declared = job
        .replica_specs()
        .get(replica_type)
        .and_then(|spec| spec.containers().iter().find(|c| c.name == container_name))
        .and_then(|container| {
            container
                .ports
                .iter()
                .flatten()
                .find(|port| port.name.as_deref() == Some(port_name))
        })
        .map(|port| port.container_port);
    Some(declared.unwrap_or(default_port))
}

/// The port replica slot `(replica_type, index)` serves its framework on, under `addressing`.
#[must_use]
pub fn slot_port(
    job: &TrainingJob,
    addressing: &Addressing,
    replica_type: &ReplicaType,
    index: i32,
) -> i32 {
    let declared = declared_port(job, replica_type).unwrap_or_default();
    addressing.port(replica_type, index, declared)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_jobs::load_job;

    const TF_JOB: &str = r"
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: mnist, namespace: ml}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - name: tensorflow
            image: tf
            ports: [{name: tfjob-port, containerPort: 3333}]
    PS:
      replicas: 1
      template: {spec: {containers: [{name: tensorflow, image: tf}]}}
";

    #[test]
    fn cluster_host_is_short_service_name_unless_qualified() {
        let job = load_job(TF_JOB);
        let addressing = Addressing::default();
        assert_eq!(
            addressing.host(&job, &ReplicaType::Worker, 1, false),
            "mnist-worker-1"
        );
        assert_eq!(
            addressing.host(&job, &ReplicaType::Worker, 1, true),
            "mnist-worker-1.ml.svc"
        );
    }

    #[test]
    fn cluster_domain_is_appended_to_qualified_hosts() {
        let job = load_job(TF_JOB);
        let addressing = Addressing::Cluster {
            cluster_domain: Some("cluster.local".into()),
        };
        assert_eq!(
            addressing.host(&job, &ReplicaType::PS, 0, true),
            "mnist-ps-0.ml.svc.cluster.local"
        );
        assert_eq!(
            addressing.host(&job, &ReplicaType::PS, 0, false),
            "mnist-ps-0"
        );
    }

    #[test]
    fn empty_cluster_domain_appends_nothing() {
        let job = load_job(TF_JOB);
        let addressing = Addressing::Cluster {
            cluster_domain: Some(String::new()),
        };
        assert_eq!(
            addressing.host(&job, &ReplicaType::PS, 0, true),
            "mnist-ps-0.ml.svc"
        );
    }

    #[test]
    fn loopback_host_is_127_0_0_1_with_the_slot_port() {
        let job = load_job(TF_JOB);
        let addressing = Addressing::Loopback {
            ports: BTreeMap::from([((ReplicaType::Worker, 1), 41_001)]),
        };
        assert_eq!(
            addressing.host(&job, &ReplicaType::Worker, 1, true),
            "127.0.0.1"
        );
        assert_eq!(
            slot_port(&job, &addressing, &ReplicaType::Worker, 1),
            41_001
        );
    }

    #[test]
    fn loopback_slot_without_a_port_keeps_the_declared_port() {
        let job = load_job(TF_JOB);
        let addressing = Addressing::Loopback {
            ports: BTreeMap::new(),
        };
        assert_eq!(slot_port(&job, &addressing, &ReplicaType::Worker, 0), 3333);
    }

    #[test]
    fn declared_port_is_the_named_port_of_the_default_container() {
        let job = load_job(TF_JOB);
        assert_eq!(declared_port(&job, &ReplicaType::Worker), Some(3333));
        assert_eq!(declared_port(&job, &ReplicaType::PS), Some(2222));
        assert_eq!(declared_port(&job, &ReplicaType::Chief), Some(2222));
    }
}
