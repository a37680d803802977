//! Replica types and replica specs: the `<kind>ReplicaSpecs` map of every job.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::{Deref, DerefMut};

use k8s_openapi::api::core::v1::{Container, PodTemplateSpec};
use schemars::JsonSchema;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A replica type: a key of the replica-spec map.
///
/// Keys are matched case-insensitively and rewritten to the canonical spelling (`ps` → `PS`).
/// A key that names no known type is kept as [`ReplicaType::Other`] so that validation can report
/// it together with every other error.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReplicaType {
    /// TF `Chief`: the coordinator that decides success when present.
    Chief,
    /// `Master`: TF's legacy chief; the rank-0 replica of PyTorch, XGBoost and Paddle.
    Master,
    /// TF parameter server.
    PS,
    /// MXNet `Scheduler`: ps-lite's rendezvous (`DMLC_PS_ROOT_URI`); decides an MXJob's success.
    Scheduler,
    /// MXNet parameter `Server`.
    Server,
    /// A worker.
    Worker,
    /// TF evaluator (never decides success).
    Evaluator,
    /// MPI launcher (runs `mpirun`).
    Launcher,
    /// MXNet `TunerTracker`: the auto-tuning tracker that hands tuning tasks to tuner servers.
    TunerTracker,
    /// MXNet `TunerServer`: runs the tuning tasks the tracker hands it.
    TunerServer,
    /// MXNet `Tuner`: drives auto-tuning; decides an `MXTune` job's success.
    Tuner,
    /// A key that names no known replica type, as written.
    Other(String),
}

impl ReplicaType {
    /// The known replica types, in canonical spelling.
    pub const KNOWN: [ReplicaType; 11] = [
        ReplicaType::Chief,
        ReplicaType::Master,
        ReplicaType::PS,
        ReplicaType::Scheduler,
        ReplicaType::Server,
        ReplicaType::Worker,
        ReplicaType::Evaluator,
        ReplicaType::Launcher,
        ReplicaType::TunerTracker,
        ReplicaType::TunerServer,
        ReplicaType::Tuner,
    ];

    /// The canonical spelling (`PS`, `Worker`), or the key as written for [`ReplicaType::Other`].
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            ReplicaType::Chief => "Chief",
            ReplicaType::Master => "Master",
            ReplicaType::PS => "PS",
            ReplicaType::Scheduler => "Scheduler",
            ReplicaType::Server => "Server",
            ReplicaType::Worker => "Worker",
            ReplicaType::Evaluator => "Evaluator",
            ReplicaType::Launcher => "Launcher",
            ReplicaType::TunerTracker => "TunerTracker",
            ReplicaType::TunerServer => "TunerServer",
            ReplicaType::Tuner => "Tuner",
            ReplicaType::Other(name) => name,
        }
    }

    /// The lowercase spelling used in names, labels and `TF_CONFIG` (`ps`, `worker`).
    #[must_use]
    pub fn lowercase(&self) -> String {
        self.as_str().to_ascii_lowercase()
    }

    /// Parses a key case-insensitively; unknown names become [`ReplicaType::Other`].
    #[must_use]
    pub fn parse(key: &str) -> ReplicaType {
        ReplicaType::KNOWN
            .into_iter()
            .find(|known| known.as_str().eq_ignore_ascii_case(key))
            .unwrap_or_else(|| ReplicaType::Other(key.to_owned()))
    }
}

impl fmt::Display for ReplicaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ReplicaType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ReplicaType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let key = String::deserialize(deserializer)?;
        Ok(ReplicaType::parse(&key))
    }
}

/// How a replica's containers are restarted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum RestartPolicy {
    /// Restart on any exit, success included.
    Always,
    /// Restart when the container fails.
    OnFailure,
    /// Never restart.
    Never,
    /// Re-create the pod when the exit code is retryable (≥ 128); fail the job otherwise.
    ExitCode,
}

impl RestartPolicy {
    /// The spelling used in manifests.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RestartPolicy::Always => "Always",
            RestartPolicy::OnFailure => "OnFailure",
            RestartPolicy::Never => "Never",
            RestartPolicy::ExitCode => "ExitCode",
        }
    }
}

/// The description of one replica type: how many, from which pod template, restarted how.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaSpec {
    /// Desired number of replicas (defaults to 1; MPI `Worker` defaults to 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// The pod template of every replica of this type.
    #[serde(default)]
    pub template: PodTemplateSpec,
    /// Restart policy of the replicas (defaults per kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<RestartPolicy>,
}

impl ReplicaSpec {
    /// The replica count, with the default of 1 when unset.
    #[must_use]
    pub fn replicas_or_default(&self) -> i32 {
        self.replicas.unwrap_or(1)
    }

    /// The template's containers (none when the template has no pod spec).
    #[must_use]
    pub fn containers(&self) -> &[Container] {
        self.template
            .spec
            .as_ref()
            .map(|pod| pod.containers.as_slice())
            .unwrap_or_default()
    }
}

/// The replica-spec map of a job, keyed by canonical replica type.
///
/// Deserialization rewrites keys to their canonical spelling and rejects two keys that name the
/// same type (`Worker` and `worker`), which a plain map would silently merge.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplicaSpecs(pub BTreeMap<ReplicaType, ReplicaSpec>);

impl Deref for ReplicaSpecs {
    type Target = BTreeMap<ReplicaType, ReplicaSpec>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for ReplicaSpecs {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl FromIterator<(ReplicaType, ReplicaSpec)> for ReplicaSpecs {
    fn from_iter<I: IntoIterator<Item = (ReplicaType, ReplicaSpec)>>(iter: I) -> Self {
        ReplicaSpecs(iter.into_iter().collect())
    }
}

impl Serialize for ReplicaSpecs {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ReplicaSpecs {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SpecsVisitor;

        impl<'de> Visitor<'de> for SpecsVisitor {
            type Value = ReplicaSpecs;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map from replica type (e.g. Worker) to replica spec")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ReplicaSpecs, A::Error> {
                let mut specs = BTreeMap::new();
                let mut spellings: BTreeMap<ReplicaType, String> = BTreeMap::new();
                while let Some(key) = map.next_key::<String>()? {
                    let replica_type = ReplicaType::parse(&key);
                    if let Some(first) = spellings.get(&replica_type) {
                        return Err(de::Error::custom(format_args!(
                            "replica type `{replica_type}` is given twice (as `{first}` and \
                             `{key}`); keys are case-insensitive"
                        )));
                    }
                    let spec = map.next_value::<ReplicaSpec>()?;
                    spellings.insert(replica_type.clone(), key);
                    specs.insert(replica_type, spec);
                }
                Ok(ReplicaSpecs(specs))
            }
        }

        deserializer.deserialize_map(SpecsVisitor)
    }
}

impl JsonSchema for ReplicaSpecs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ReplicaSpecs".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "description": "Replica type (e.g. Worker, PS, Chief) to its replica spec.",
            "additionalProperties": generator.subschema_for::<ReplicaSpec>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replica_type_keys_are_case_insensitive() {
        assert_eq!(ReplicaType::parse("ps"), ReplicaType::PS);
        assert_eq!(ReplicaType::parse("WORKER"), ReplicaType::Worker);
        assert_eq!(ReplicaType::parse("chief"), ReplicaType::Chief);
        assert_eq!(
            ReplicaType::parse("tunertracker"),
            ReplicaType::TunerTracker
        );
        assert_eq!(ReplicaType::parse("SCHEDULER"), ReplicaType::Scheduler);
        assert_eq!(ReplicaType::parse("Foo"), ReplicaType::Other("Foo".into()));
    }

    #[test]
    fn replica_specs_reject_a_type_given_twice() {
        let err = serde_json::from_str::<ReplicaSpecs>(r#"{"Worker": {}, "worker": {}}"#)
            .expect_err("duplicate replica type must be rejected");
        assert!(
            err.to_string()
                .contains("given twice (as `Worker` and `worker`)"),
            "{err}"
        );
    }

    #[test]
    fn replica_specs_rewrite_keys_to_canonical_spelling() {
        let specs: ReplicaSpecs = serde_json::from_str(r#"{"ps": {}, "worker": {}}"#).unwrap();
        let json = serde_json::to_string(&specs).unwrap();
        assert_eq!(json, r#"{"PS":{"template":{}},"Worker":{"template":{}}}"#);
    }
}
