//! What a submission did, as `POST /api/v1/jobs` answers it: [`Submitted`].

use k8s_openapi::api::core::v1::ResourceQuota;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{JobView, Word, words};

/// What a submission recorded: the claims bound first, then the manifest's `ResourceQuota`s
/// applied, then its ConfigMaps and Secrets, then its jobs. A list missing from an answer (a
/// server older than the list) decodes empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Submitted {
    /// The quotas applied, in file order.
    #[serde(default, rename = "resourceQuotas")]
    pub quotas: Vec<QuotaApplied>,
    /// The claims bound (`volume`), with the directory each was bound to before.
    #[serde(default)]
    pub claims: Vec<ClaimBound>,
    /// The ConfigMaps applied, in file order: names, never data.
    #[serde(default, rename = "configMaps")]
    pub config_maps: Vec<ObjectApplied>,
    /// The Secrets applied, in file order: names, never data.
    #[serde(default)]
    pub secrets: Vec<ObjectApplied>,
    /// The jobs recorded and queued, in file order.
    pub jobs: Vec<JobView>,
}

/// What applying a quota did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QuotaApplied {
    /// `created` or `configured`, as kubectl says.
    #[serde(deserialize_with = "words::action")]
    #[schemars(schema_with = "words::action_schema")]
    pub action: Word,
    /// The quota, with what its namespace uses.
    pub quota: ResourceQuota,
}

/// A claim a submission bound.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClaimBound {
    /// The claim's namespace.
    pub namespace: String,
    /// The claim's name.
    pub name: String,
    /// The directory it is bound to now.
    pub path: String,
    /// The directory it was bound to before, when another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
}

/// A ConfigMap or Secret a submission applied: by name, never its data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ObjectApplied {
    /// `created` or `configured`, as kubectl says.
    #[serde(deserialize_with = "words::action")]
    #[schemars(schema_with = "words::action_schema")]
    pub action: Word,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}
