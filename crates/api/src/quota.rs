//! `v1` `ResourceQuota`: what a namespace's jobs may hold together on the local control plane.
//!
//! A quota is read and validated as Kubernetes does (`metadata.name` a DNS-1123 subdomain,
//! `spec.hard` quantities non-negative, counts whole numbers). trainctl enforces the keys of
//! [`QuotaResource`]; other keys are accepted and ignored with a warning. [`Quota::check`]
//! words a refusal as Kubernetes does: `exceeded quota: team-a, requested:
//! requests.nvidia.com/gpu=4, used: requests.nvidia.com/gpu=2, limited:
//! requests.nvidia.com/gpu=4`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceQuota;

use crate::field_path::FieldPath;
use crate::kind::JobKind;
use crate::quantity;
use crate::validation::{Issue, dns_subdomain};

/// The extended resource that counts NVIDIA GPUs.
const GPU: &str = "nvidia.com/gpu";

/// A resource of `spec.hard` that trainctl counts. CPU is counted in millicores, memory in
/// bytes, the rest in units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QuotaResource {
    /// `requests.cpu` (or `cpu`).
    RequestsCpu,
    /// `requests.memory` (or `memory`).
    RequestsMemory,
    /// `requests.nvidia.com/gpu` (or `nvidia.com/gpu`).
    RequestsGpu,
    /// `limits.cpu`.
    LimitsCpu,
    /// `limits.memory`.
    LimitsMemory,
    /// `limits.nvidia.com/gpu`.
    LimitsGpu,
    /// `pods`: the replicas of the admitted jobs.
    Pods,
    /// `count/<plural>.kubeflow.org`: the admitted jobs of a kind.
    Count(JobKind),
}

impl QuotaResource {
    /// The resource a `spec.hard` key names; `None` for a key trainctl does not count.
    #[must_use]
    pub fn from_key(key: &str) -> Option<QuotaResource> {
        Some(match key {
            "cpu" | "requests.cpu" => QuotaResource::RequestsCpu,
            "memory" | "requests.memory" => QuotaResource::RequestsMemory,
            "limits.cpu" => QuotaResource::LimitsCpu,
            "limits.memory" => QuotaResource::LimitsMemory,
            "pods" => QuotaResource::Pods,
            _ if key == GPU || key.strip_prefix("requests.") == Some(GPU) => {
                QuotaResource::RequestsGpu
            }
            _ if key.strip_prefix("limits.") == Some(GPU) => QuotaResource::LimitsGpu,
            _ => {
                let plural = key.strip_prefix("count/")?.strip_suffix(".kubeflow.org")?;
                QuotaResource::Count(JobKind::ALL.into_iter().find(|k| k.plural() == plural)?)
            }
        })
    }

    /// Whether the amount is a whole number of units (GPUs, pods, jobs), as Kubernetes
    /// requires of extended resources and object counts.
    fn is_count(self) -> bool {
        !matches!(
            self,
            QuotaResource::RequestsCpu
                | QuotaResource::RequestsMemory
                | QuotaResource::LimitsCpu
                | QuotaResource::LimitsMemory
        )
    }

    /// `amount` as a Kubernetes quantity: `4`, `500m` (CPU), `8Gi` (memory).
    #[must_use]
    pub fn quantity_text(self, amount: u64) -> String {
        match self {
            QuotaResource::RequestsCpu | QuotaResource::LimitsCpu => {
                if amount.is_multiple_of(1_000) {
                    (amount / 1_000).to_string()
                } else {
                    format!("{amount}m")
                }
            }
            QuotaResource::RequestsMemory | QuotaResource::LimitsMemory => {
                let mut number = amount;
                let mut suffix = "";
                for next in ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"] {
                    if number == 0 || !number.is_multiple_of(1024) {
                        break;
                    }
                    number /= 1024;
                    suffix = next;
                }
                format!("{number}{suffix}")
            }
            _ => amount.to_string(),
        }
    }
}

/// Amounts of the counted resources: what a job asks for, what a namespace's admitted jobs
/// hold together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage(pub BTreeMap<QuotaResource, u64>);

impl Usage {
    /// The amount of `resource` (zero when absent).
    #[must_use]
    pub fn get(&self, resource: QuotaResource) -> u64 {
        self.0.get(&resource).copied().unwrap_or(0)
    }

    /// Whether it counts nothing: no resource, or none above zero.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.values().all(|&amount| amount == 0)
    }

    /// Adds `other`, resource by resource.
    pub fn add(&mut self, other: &Usage) {
        for (&resource, &amount) in &other.0 {
            let total = self.0.entry(resource).or_insert(0);
            *total = total.saturating_add(amount);
        }
    }
}

/// One key of `spec.hard` that trainctl counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HardLimit {
    /// The key as written (`requests.nvidia.com/gpu`), for messages.
    pub key: String,
    /// What it counts.
    pub resource: QuotaResource,
    /// The limit, in the resource's unit.
    pub limit: u64,
}

/// A validated quota as admission uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quota {
    /// `metadata.name`.
    pub name: String,
    /// The counted keys of `spec.hard`, sorted by key.
    pub hard: Vec<HardLimit>,
}

/// What a quota says to a job that asks for resources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuotaCheck {
    /// The job fits what the quota leaves.
    Fits,
    /// The job fits the quota, not what its namespace's admitted jobs leave of it: it waits.
    Exceeded(String),
    /// The job asks for more than the quota allows in all: it can never run.
    NeverFits(String),
}

impl Quota {
    /// Reads the counted keys of a quota's `spec.hard`; the issues of [`validate`] as errors.
    pub fn of(quota: &ResourceQuota) -> Result<Quota, Vec<Issue>> {
        let issues: Vec<Issue> = validate(quota)
            .into_iter()
            .filter(|issue| issue.severity == crate::validation::Severity::Error)
            .collect();
        if !issues.is_empty() {
            return Err(issues);
        }
        let mut hard = Vec::new();
        let spec_hard = quota.spec.as_ref().and_then(|spec| spec.hard.as_ref());
        for (key, value) in spec_hard.into_iter().flatten() {
            let Some(resource) = QuotaResource::from_key(key) else {
                continue;
            };
            let read = if matches!(
                resource,
                QuotaResource::RequestsCpu | QuotaResource::LimitsCpu
            ) {
                quantity::to_millis(value)
            } else {
                quantity::to_units(value)
            };
            let limit =
                read.map_err(|problem| vec![Issue::error(hard_path(key), problem.to_string())])?;
            hard.push(HardLimit {
                key: key.clone(),
                resource,
                limit,
            });
        }
        Ok(Quota {
            name: quota.metadata.name.clone().unwrap_or_default(),
            hard,
        })
    }

    /// Whether a job asking for `requested` fits this quota while the namespace's admitted jobs
    /// hold `used`; a refusal in Kubernetes' words, naming each resource exceeded.
    #[must_use]
    pub fn check(&self, used: &Usage, requested: &Usage) -> QuotaCheck {
        let asked: Vec<&HardLimit> = self
            .hard
            .iter()
            .filter(|hard| requested.get(hard.resource) > 0)
            .collect();
        let words = |over: &[&&HardLimit], amount: &dyn Fn(&HardLimit) -> u64| {
            over.iter()
                .map(|hard| format!("{}={}", hard.key, hard.resource.quantity_text(amount(hard))))
                .collect::<Vec<_>>()
                .join(",")
        };
        let never: Vec<&&HardLimit> = asked
            .iter()
            .filter(|hard| requested.get(hard.resource) > hard.limit)
            .collect();
        if !never.is_empty() {
            return QuotaCheck::NeverFits(format!(
                "exceeds quota: {}, requested: {}, limited: {}; the job asks for more than the \
                 quota allows in all and can never run under it (raise spec.hard or ask for less)",
                self.name,
                words(&never, &|hard| requested.get(hard.resource)),
                words(&never, &|hard| hard.limit),
            ));
        }
        let over: Vec<&&HardLimit> = asked
            .iter()
            .filter(|hard| {
                used.get(hard.resource)
                    .saturating_add(requested.get(hard.resource))
                    > hard.limit
            })
            .collect();
        if over.is_empty() {
            return QuotaCheck::Fits;
        }
        QuotaCheck::Exceeded(format!(
            "exceeded quota: {}, requested: {}, used: {}, limited: {}",
            self.name,
            words(&over, &|hard| requested.get(hard.resource)),
            words(&over, &|hard| used.get(hard.resource)),
            words(&over, &|hard| hard.limit),
        ))
    }
}

/// The path of a `spec.hard` key.
fn hard_path(key: &str) -> FieldPath {
    FieldPath::fields("spec.hard").key(key)
}

/// Checks a quota as Kubernetes does: `metadata.name` a DNS-1123 subdomain, `spec.hard` keys
/// resource names with non-negative quantities, counted resources whole numbers; keys trainctl
/// does not count are warnings, scopes are refused (trainctl has no pod scopes to match).
#[must_use]
pub fn validate(quota: &ResourceQuota) -> Vec<Issue> {
    let mut issues = Vec::new();
    match quota.metadata.name.as_deref() {
        None | Some("") => issues.push(Issue::error(
            FieldPath::fields("metadata.name"),
            "required: a quota is named (a DNS-1123 subdomain, e.g. `team-a`)",
        )),
        Some(name) => {
            if let Err(problem) = dns_subdomain(name) {
                issues.push(Issue::error(
                    FieldPath::fields("metadata.name"),
                    format!("`{name}` is not a DNS-1123 subdomain: {problem}"),
                ));
            }
        }
    }
    if let Some(namespace) = quota.metadata.namespace.as_deref()
        && let Err(problem) = crate::namespace::check_namespace(namespace)
    {
        issues.push(Issue::error(
            FieldPath::fields("metadata.namespace"),
            problem,
        ));
    }
    let Some(spec) = quota.spec.as_ref() else {
        return issues;
    };
    if spec
        .scopes
        .as_ref()
        .is_some_and(|scopes| !scopes.is_empty())
        || spec.scope_selector.is_some()
    {
        issues.push(Issue::error(
            FieldPath::fields("spec.scopes"),
            "quota scopes are not supported by trainctl's control plane: a quota counts every \
             job of its namespace; remove spec.scopes and spec.scopeSelector",
        ));
    }
    for (key, value) in spec.hard.iter().flatten() {
        let nanos = match quantity::parse_nanos(&value.0) {
            Ok(nanos) => nanos,
            Err(problem) => {
                issues.push(Issue::error(hard_path(key), problem.to_string()));
                continue;
            }
        };
        if nanos < 0 {
            issues.push(Issue::error(
                hard_path(key),
                format!("`{}` must be greater than or equal to 0", value.0),
            ));
            continue;
        }
        match QuotaResource::from_key(key) {
            Some(resource) if resource.is_count() && nanos % 1_000_000_000 != 0 => {
                issues.push(Issue::error(
                    hard_path(key),
                    format!("`{}` must be an integer", value.0),
                ));
            }
            Some(_) => {}
            None => issues.push(Issue::warning(
                hard_path(key),
                "not counted by trainctl, ignored: it counts requests.cpu, requests.memory, \
                 requests.nvidia.com/gpu, limits.cpu, limits.memory, limits.nvidia.com/gpu, \
                 pods and count/<plural>.kubeflow.org",
            )),
        }
    }
    issues
}

#[cfg(test)]
mod tests;
