//! TensorFlow: `TF_CONFIG`, byte-identical to the Kubeflow operator's `json.Marshal` output.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::EnvVar;
use serde::Serialize;
use serde_json::value::RawValue;
use trainctl_api::tensorflow::is_distributed;
use trainctl_api::{ReplicaType, TrainingJob};

use super::var;
use crate::addressing::{Addressing, slot_port};

pub use trainctl_api::tensorflow::CONTAINER;
/// The variable TensorFlow reads its cluster from.
pub const TF_CONFIG: &str = "TF_CONFIG";

/// The dense `TF_CONFIG`; field order is the JSON key order.
#[derive(Serialize)]
struct TfConfig<'a> {
    /// Lowercase replica type to its addresses, serialized once per job (sorted keys, like Go).
    cluster: &'a RawValue,
    task: Task<'a>,
    environment: &'static str,
}

/// The sparse `TF_CONFIG` of `enableDynamicWorker`: no `environment`.
#[derive(Serialize)]
struct SparseTfConfig<'a> {
    /// `cluster`, the key TensorFlow reads, as upstream writes it since v1.7 (earlier
    /// versions wrote `sparseCluster`, which TensorFlow ignores).
    cluster: SparseCluster<'a>,
    task: Task<'a>,
}

/// A worker sees only itself and the parameter servers; a PS only itself.
#[derive(Serialize)]
struct SparseCluster<'a> {
    /// Worker index to address (serialized with the index as a string key, like Go).
    worker: BTreeMap<i32, &'a str>,
    /// `None` is written `null`, as Go writes a nil slice: a worker's copy of the job's `ps`
    /// list when the job has no `PS` at all.
    ps: Option<&'a [String]>,
}

/// This replica's own entry.
#[derive(Serialize)]
struct Task<'a> {
    #[serde(rename = "type")]
    replica_type: &'a str,
    index: i32,
}

/// The cluster map: every replica type of the job (lowercase) to `<address>:<port>` per index.
#[must_use]
pub fn cluster_spec(job: &TrainingJob, addressing: &Addressing) -> BTreeMap<String, Vec<String>> {
    job.replica_specs()
        .iter()
        .map(|(replica_type, spec)| {
            let endpoints = (0..spec.replicas_or_default())
                .map(|index| endpoint(job, addressing, replica_type, index))
                .collect();
            (replica_type.lowercase(), endpoints)
        })
        .collect()
}

/// `<host>:<port>` of one replica slot, with the qualified host.
fn endpoint(
    job: &TrainingJob,
    addressing: &Addressing,
    replica_type: &ReplicaType,
    index: i32,
) -> String {
    let host = addressing.host(job, replica_type, index, true);
    let port = slot_port(job, addressing, replica_type, index);
    format!("{host}:{port}")
}

/// What every replica's `TF_CONFIG` shares, computed once per job: the cluster map, and its
/// serialized form. Every `TF_CONFIG` lists the whole cluster, so building the map per replica
/// would cost the square of the job size.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    cluster: BTreeMap<String, Vec<String>>,
    serialized: Box<RawValue>,
    dynamic_workers: bool,
}

impl ClusterConfig {
    /// The shared part of a job's `TF_CONFIG`, or `None` when the job is not distributed (a
    /// single TF replica gets no `TF_CONFIG` at all).
    ///
    /// # Panics
    ///
    /// Never: a map of strings to string lists always serializes.
    #[must_use]
    pub fn new(job: &TrainingJob, addressing: &Addressing) -> Option<ClusterConfig> {
        if !is_distributed(job.replica_specs()) {
            return None;
        }
        let cluster = cluster_spec(job, addressing);
        let serialized = serde_json::value::to_raw_value(&cluster)
            .expect("a map of strings to string lists serializes");
        let dynamic_workers =
            matches!(job, TrainingJob::TF(tf) if tf.spec.enable_dynamic_worker == Some(true));
        Some(ClusterConfig {
            cluster,
            serialized,
            dynamic_workers,
        })
    }

    /// The `TF_CONFIG` of replica slot `(replica_type, index)`.
    ///
    /// # Panics
    ///
    /// Never: `TF_CONFIG` holds only strings, integers and string-keyed maps.
    #[must_use]
    pub fn tf_config(&self, replica_type: &ReplicaType, index: i32) -> String {
        let lowercase = replica_type.lowercase();
        let task = Task {
            replica_type: &lowercase,
            index,
        };
        let json = if self.dynamic_workers {
            let own = self.own(&lowercase, index);
            let mut cluster = SparseCluster {
                worker: BTreeMap::new(),
                ps: Some(&[]),
            };
            match replica_type {
                ReplicaType::PS => cluster.ps = Some(std::slice::from_ref(own)),
                ReplicaType::Worker => {
                    // Upstream copies the job's `ps` list: Go's nil slice (`"ps":null`) when the
                    // job has no PS at all, an empty list (`"ps":[]`) for `PS` with 0 replicas.
                    cluster.ps = self.cluster.get("ps").map(Vec::as_slice);
                    cluster.worker.insert(index, own.as_str());
                }
                _ => {}
            }
            serde_json::to_string(&SparseTfConfig { cluster, task })
        } else {
            serde_json::to_string(&TfConfig {
                cluster: &self.serialized,
                task,
                environment: "cloud",
            })
        };
        json.expect("TF_CONFIG holds only strings, integers and string-keyed maps")
    }

    /// The address of slot `(type, index)` as listed in the cluster map.
    fn own(&self, lowercase_type: &str, index: i32) -> &String {
        static MISSING: String = String::new();
        usize::try_from(index)
            .ok()
            .and_then(|i| self.cluster.get(lowercase_type)?.get(i))
            .unwrap_or(&MISSING)
    }
}

/// The `TF_CONFIG` of replica slot `(replica_type, index)`, or `None` when the job is not
/// distributed. Builds the cluster map: for many replicas, build a [`ClusterConfig`] once.
#[must_use]
pub fn tf_config(
    job: &TrainingJob,
    replica_type: &ReplicaType,
    index: i32,
    addressing: &Addressing,
) -> Option<String> {
    ClusterConfig::new(job, addressing).map(|cluster| cluster.tf_config(replica_type, index))
}

/// `TF_CONFIG` for replica slot `(replica_type, index)`; empty when the job is not distributed.
#[must_use]
pub fn env_vars(
    cluster: Option<&ClusterConfig>,
    replica_type: &ReplicaType,
    index: i32,
) -> Vec<EnvVar> {
    cluster
        .map(|cluster| var(TF_CONFIG, cluster.tf_config(replica_type, index)))
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests;
