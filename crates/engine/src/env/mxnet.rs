//! MXNet: `MX_CONFIG`, byte-identical to the Kubeflow operator's `json.Marshal` output (v1.8),
//! and the `DMLC_*` variables ps-lite reads, taken from it as upstream takes them.
//!
//! Upstream's quirks are kept: the scheduler's address is `DMLC_PS_ROOT_URI` even in a tuning
//! job, which has none (`""` and port `0`); the counts are the `Server` and `Worker` replicas;
//! only workers get `DMLC_WORKER_ID` (BytePS reads it).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::EnvVar;
use serde::Serialize;
use serde_json::value::RawValue;
use trainctl_api::mxnet::TUNER_SERVER_KEY_ANNOTATION;
use trainctl_api::{ReplicaType, TrainingJob};

use super::var;
use crate::addressing::{Addressing, LOOPBACK_HOST, slot_port};

/// The variable MXNet scripts read their cluster from.
pub const MX_CONFIG: &str = "MX_CONFIG";

/// The address ps-lite's servers and workers advertise to the scheduler, set on this machine
/// only: without it ps-lite advertises the first interface that is not loopback, and fails
/// where there is none (`failed to get the interface`).
pub const DMLC_NODE_HOST: &str = "DMLC_NODE_HOST";

/// One replica's entry in the cluster map.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct UrlPort {
    url: String,
    port: i32,
}

/// `MX_CONFIG`; field order is the JSON key order (Go's struct order).
#[derive(Serialize)]
struct MxConfig<'a> {
    /// Lowercase replica type to its replicas, every type of the job (sorted keys, like Go).
    cluster: &'a RawValue,
    /// Lowercase replica type to its template's `tuner-server-key` annotation, or `""`.
    labels: &'a RawValue,
    task: Task<'a>,
}

/// This replica's own entry.
#[derive(Serialize)]
struct Task<'a> {
    #[serde(rename = "type")]
    replica_type: &'a str,
    index: i32,
}

/// What every replica's environment shares, computed once per job: `MX_CONFIG` lists the
/// whole cluster, so building it per replica would cost the square of the job size.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    cluster: Box<RawValue>,
    labels: Box<RawValue>,
    /// Scheduler 0, where ps-lite's nodes meet; `None` in a job without one.
    scheduler: Option<UrlPort>,
    servers: usize,
    workers: usize,
    /// Whether replicas get [`DMLC_NODE_HOST`]: on this machine, not on a cluster (as upstream).
    on_loopback: bool,
}

impl ClusterConfig {
    /// The shared part of the environment of `job`'s replicas under `addressing`.
    ///
    /// # Panics
    ///
    /// Never: maps of strings to strings and to lists of `{url, port}` always serialize.
    #[must_use]
    pub fn new(job: &TrainingJob, addressing: &Addressing) -> ClusterConfig {
        let mut cluster: BTreeMap<String, Vec<UrlPort>> = BTreeMap::new();
        let mut labels: BTreeMap<String, String> = BTreeMap::new();
        for (replica_type, spec) in job.replica_specs().iter() {
            let replicas = (0..spec.replicas_or_default())
                .map(|index| UrlPort {
                    url: addressing.host(job, replica_type, index, false),
                    port: slot_port(job, addressing, replica_type, index),
                })
                .collect();
            cluster.insert(replica_type.lowercase(), replicas);
            let key = spec
                .template
                .metadata
                .as_ref()
                .and_then(|metadata| metadata.annotations.as_ref())
                .and_then(|annotations| annotations.get(TUNER_SERVER_KEY_ANNOTATION));
            labels.insert(replica_type.lowercase(), key.cloned().unwrap_or_default());
        }
        let count =
            |replica_type: &ReplicaType| cluster.get(&replica_type.lowercase()).map_or(0, Vec::len);
        let servers = count(&ReplicaType::Server);
        let workers = count(&ReplicaType::Worker);
        let scheduler = cluster
            .get(&ReplicaType::Scheduler.lowercase())
            .and_then(|replicas| replicas.first())
            .cloned();
        let raw = |json: String| {
            RawValue::from_string(go_escaped(&json)).expect("escaping keeps JSON valid")
        };
        ClusterConfig {
            cluster: raw(serde_json::to_string(&cluster).expect("a map of addresses serializes")),
            labels: raw(serde_json::to_string(&labels).expect("a map of strings serializes")),
            scheduler,
            servers,
            workers,
            on_loopback: addressing.is_loopback(),
        }
    }

    /// The `MX_CONFIG` of replica slot `(replica_type, index)`.
    ///
    /// # Panics
    ///
    /// Never: `MX_CONFIG` holds only strings, integers and string-keyed maps.
    #[must_use]
    pub fn mx_config(&self, replica_type: &ReplicaType, index: i32) -> String {
        let lowercase = replica_type.lowercase();
        let config = MxConfig {
            cluster: &self.cluster,
            labels: &self.labels,
            task: Task {
                replica_type: &lowercase,
                index,
            },
        };
        // The cluster and labels are escaped already; the task's type is a replica type's
        // lowercase spelling, which has nothing to escape.
        serde_json::to_string(&config)
            .expect("MX_CONFIG holds only strings, integers and string-keyed maps")
    }

    /// The environment of replica slot `(replica_type, index)`, in upstream's order.
    #[must_use]
    pub fn env_vars(&self, replica_type: &ReplicaType, index: i32) -> Vec<EnvVar> {
        let (root_uri, root_port) = self.scheduler.as_ref().map_or(("", 0), |scheduler| {
            (scheduler.url.as_str(), scheduler.port)
        });
        let mut vars = vec![
            var(MX_CONFIG, self.mx_config(replica_type, index)),
            var("DMLC_PS_ROOT_PORT", root_port.to_string()),
            var("DMLC_PS_ROOT_URI", root_uri),
            var("DMLC_NUM_SERVER", self.servers.to_string()),
            var("DMLC_NUM_WORKER", self.workers.to_string()),
            var("DMLC_ROLE", replica_type.lowercase()),
            var("DMLC_USE_KUBERNETES", "1"),
        ];
        if *replica_type == ReplicaType::Worker {
            vars.push(var("DMLC_WORKER_ID", index.to_string()));
        }
        if self.on_loopback {
            vars.push(var(DMLC_NODE_HOST, LOOPBACK_HOST));
        }
        vars
    }
}

/// JSON text as Go's `json.Marshal` writes it: `<`, `>` and `&` as `\u003c`, `\u003e` and
/// `\u0026`, and U+2028 and U+2029 escaped, which `serde_json` leaves as they are. None of them
/// can stand outside a string in JSON, so escaping the whole text escapes its strings.
fn go_escaped(json: &str) -> String {
    let mut escaped = String::with_capacity(json.len());
    for character in json.chars() {
        match character {
            '<' => escaped.push_str("\\u003c"),
            '>' => escaped.push_str("\\u003e"),
            '&' => escaped.push_str("\\u0026"),
            '\u{2028}' => escaped.push_str("\\u2028"),
            '\u{2029}' => escaped.push_str("\\u2029"),
            other => escaped.push(other),
        }
    }
    escaped
}

#[cfg(test)]
mod tests;
