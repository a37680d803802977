//! A replica's env as the kubelet would build it: `envFrom` first, then `env` in order, literal
//! values `$(VAR)`-expanded against what is defined before them, `valueFrom` resolved from the
//! pod (downward API) and from the ConfigMaps and Secrets submitted with the job.
//!
//! The process env a replica inherits from `trainctl` is not part of this: the kubelet cannot see
//! an image's env either, so `$(VAR)` never refers to it. The runtime puts this env on top of it.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{
    ConfigMap, Container, EnvVar, EnvVarSource, ObjectFieldSelector, Pod, ResourceFieldSelector,
    Secret,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use trainctl_api::manifest::Companion;

use super::references::CompanionKind;
use super::resources::NodeCapacity;
use trainctl_api::expansion::{Budget, MAX_EXPANDED, TooLarge, expand};
use trainctl_api::quantity::{self, InvalidQuantity};

/// The address a replica has, as `status.podIP` and `status.hostIP` report it.
pub const LOOPBACK_IP: &str = "127.0.0.1";

/// What a replica's env is resolved from.
#[derive(Debug, Clone, Copy)]
pub struct EnvContext<'a> {
    /// The replica's pod, as the engine built it.
    pub pod: &'a Pod,
    /// What `spec.nodeName` reports: this machine's name.
    pub node_name: &'a str,
    /// This machine: what `limits.cpu`/`limits.memory` report for a container without limits,
    /// as the downward API reports the node's allocatable.
    pub capacity: &'a NodeCapacity,
    /// The ConfigMaps and Secrets submitted with the job.
    pub companions: &'a [Companion],
}

/// Why a replica's env cannot be built. `replica` is the pod's name; `variable` the env var's
/// name, or `envFrom[i]` for a whole-object import.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// A non-optional reference names an object not submitted with the job.
    #[error(
        "replica {replica}: env {variable}: {kind} `{name}` was not submitted with the job; give it in the same file or submit it to `trainctl server` first, or mark the reference `optional: true`"
    )]
    MissingObject {
        /// The replica.
        replica: String,
        /// The variable.
        variable: String,
        /// ConfigMap or Secret.
        kind: CompanionKind,
        /// The object's name.
        name: String,
    },
    /// A non-optional key reference names a key the object does not have.
    #[error(
        "replica {replica}: env {variable}: {kind} `{name}` has no key `{key}`; add it, or mark the reference `optional: true`"
    )]
    MissingKey {
        /// The replica.
        replica: String,
        /// The variable.
        variable: String,
        /// ConfigMap or Secret.
        kind: CompanionKind,
        /// The object's name.
        name: String,
        /// The missing key.
        key: String,
    },
    /// A Secret value that is not UTF-8 text cannot be an env value.
    #[error("replica {replica}: env {variable}: Secret `{name}` key `{key}` is not UTF-8 text")]
    NotText {
        /// The replica.
        replica: String,
        /// The variable.
        variable: String,
        /// The Secret's name.
        name: String,
        /// The key.
        key: String,
    },
    /// A `fieldRef` path the downward API does not offer for env vars.
    #[error(
        "replica {replica}: env {variable}: fieldRef `{field_path}` is not supported; use metadata.name, metadata.namespace, metadata.uid, metadata.labels['<key>'], metadata.annotations['<key>'], spec.nodeName, spec.serviceAccountName, status.hostIP or status.podIP"
    )]
    UnsupportedField {
        /// The replica.
        replica: String,
        /// The variable.
        variable: String,
        /// The path as written.
        field_path: String,
    },
    /// A `resourceFieldRef` resource other than CPU or memory limits and requests.
    #[error(
        "replica {replica}: env {variable}: resourceFieldRef `{resource}` is not supported; use limits.cpu, limits.memory, requests.cpu or requests.memory"
    )]
    UnsupportedResource {
        /// The replica.
        replica: String,
        /// The variable.
        variable: String,
        /// The resource as written.
        resource: String,
    },
    /// A `resourceFieldRef.containerName` that names no container of the pod.
    #[error(
        "replica {replica}: env {variable}: resourceFieldRef names no container `{container}` of the pod"
    )]
    UnknownContainer {
        /// The replica.
        replica: String,
        /// The variable.
        variable: String,
        /// The container name as written.
        container: String,
    },
    /// A resource amount or divisor that cannot be read, or a zero divisor.
    #[error("replica {replica}: env {variable}: {problem}")]
    InvalidQuantity {
        /// The replica.
        replica: String,
        /// The variable.
        variable: String,
        /// What is wrong with it.
        problem: InvalidQuantity,
    },
    /// A value whose `$(VAR)` references expand past what one environment string may hold.
    #[error(
        "replica {replica}: env {variable}: {}; check its $(VAR) references",
        TooLarge::One
    )]
    TooLarge {
        /// The replica.
        replica: String,
        /// The variable.
        variable: String,
    },
    /// A variable with which the env passes what a process's arguments and environment may hold
    /// together.
    #[error(
        "replica {replica}: env {variable}: {}; check the $(VAR) references and the size of the \
         container's env",
        TooLarge::Total
    )]
    TooMuch {
        /// The replica.
        replica: String,
        /// The variable.
        variable: String,
    },
    /// A value longer, as written, than one environment string may hold (`TF_CONFIG` of a job of
    /// thousands of replicas: it names every one).
    #[error(
        "replica {replica}: env {variable}: its value is {} KiB, more than the {} KiB one \
         environment string may hold (the kernel's MAX_ARG_STRLEN){}",
        .bytes.div_ceil(1024),
        MAX_EXPANDED / 1024,
        if .variable == "TF_CONFIG" {
            "; TF_CONFIG names every replica of the job: run fewer replicas on this machine \
             (about 7,000 fit), or on a cluster"
        } else {
            ""
        }
    )]
    TooLong {
        /// The replica.
        replica: String,
        /// The variable.
        variable: String,
        /// The value's length.
        bytes: usize,
    },
    /// A `valueFrom` with no source this runtime reads (none, or `fileKeyRef`).
    #[error(
        "replica {replica}: env {variable}: valueFrom needs one of fieldRef, resourceFieldRef, configMapKeyRef or secretKeyRef"
    )]
    UnsupportedSource {
        /// The replica.
        replica: String,
        /// The variable.
        variable: String,
    },
}

/// Resolves `container`'s env into `(name, value)` pairs, in the kubelet's order: `envFrom`
/// imports, then `env`. A name defined again keeps its first place and takes the later value.
pub fn resolve_env(
    context: &EnvContext<'_>,
    container: &Container,
) -> Result<Vec<(String, String)>, EnvError> {
    let resolver = Resolver {
        context,
        container,
        replica: context.pod.metadata.name.clone().unwrap_or_default(),
    };
    let mut env = OrderedEnv::default();
    for (position, source) in container.env_from.iter().flatten().enumerate() {
        let variable = format!("envFrom[{position}]");
        let prefix = source.prefix.as_deref().unwrap_or_default();
        let imported = if let Some(reference) = &source.config_map_ref {
            resolver.import(
                &variable,
                CompanionKind::ConfigMap,
                &reference.name,
                reference.optional,
            )?
        } else if let Some(reference) = &source.secret_ref {
            resolver.import(
                &variable,
                CompanionKind::Secret,
                &reference.name,
                reference.optional,
            )?
        } else {
            Vec::new()
        };
        for (key, value) in imported {
            let name = format!("{prefix}{key}");
            env.set(name, value)
                .map_err(|name| resolver.too_much(name))?;
        }
    }
    for var in container.env.iter().flatten() {
        if let Some(value) = resolver.value(var, &env)? {
            env.set(var.name.clone(), value)
                .map_err(|name| resolver.too_much(name))?;
        }
    }
    Ok(env.pairs)
}

/// Pairs in first-definition order, with a name index for lookups, within what a process's
/// environment may hold ([`Budget`]: the memory that many large values take is bounded too).
#[derive(Default)]
struct OrderedEnv {
    pairs: Vec<(String, String)>,
    index: HashMap<String, usize>,
    budget: Budget,
}

impl OrderedEnv {
    /// Sets `name` to `value`; the name back when the env would no longer fit in a process.
    fn set(&mut self, name: String, value: String) -> Result<(), String> {
        if self.budget.take(name.len() + 1 + value.len()).is_err() {
            return Err(name);
        }
        if let Some(&at) = self.index.get(&name) {
            let old = std::mem::replace(&mut self.pairs[at].1, value);
            self.budget.give_back(name.len() + 1 + old.len());
        } else {
            self.index.insert(name.clone(), self.pairs.len());
            self.pairs.push((name, value));
        }
        Ok(())
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.index.get(name).map(|&at| self.pairs[at].1.as_str())
    }
}

/// Resolves one replica container's env vars.
struct Resolver<'a> {
    context: &'a EnvContext<'a>,
    container: &'a Container,
    replica: String,
}

impl Resolver<'_> {
    /// The error for `variable`, with which the env no longer fits in a process.
    fn too_much(&self, variable: String) -> EnvError {
        EnvError::TooMuch {
            replica: self.replica.clone(),
            variable,
        }
    }

    /// A variable's value; `None` when it reads an optional reference that is absent (the kubelet
    /// then leaves the variable out).
    fn value(&self, var: &EnvVar, defined: &OrderedEnv) -> Result<Option<String>, EnvError> {
        let Some(source) = &var.value_from else {
            let literal = var.value.as_deref().unwrap_or_default();
            if literal.len() > MAX_EXPANDED {
                return Err(EnvError::TooLong {
                    replica: self.replica.clone(),
                    variable: var.name.clone(),
                    bytes: literal.len(),
                });
            }
            return expand(literal, |name| defined.get(name))
                .map(Some)
                .map_err(|_| EnvError::TooLarge {
                    replica: self.replica.clone(),
                    variable: var.name.clone(),
                });
        };
        let variable = var.name.as_str();
        match source {
            EnvVarSource {
                field_ref: Some(selector),
                ..
            } => self.field(variable, selector).map(Some),
            EnvVarSource {
                resource_field_ref: Some(selector),
                ..
            } => self.resource(variable, selector).map(Some),
            EnvVarSource {
                config_map_key_ref: Some(selector),
                ..
            } => self.key(
                variable,
                CompanionKind::ConfigMap,
                &selector.name,
                &selector.key,
                selector.optional,
            ),
            EnvVarSource {
                secret_key_ref: Some(selector),
                ..
            } => self.key(
                variable,
                CompanionKind::Secret,
                &selector.name,
                &selector.key,
                selector.optional,
            ),
            EnvVarSource { .. } => Err(EnvError::UnsupportedSource {
                replica: self.replica.clone(),
                variable: variable.to_owned(),
            }),
        }
    }

    fn namespace(&self) -> &str {
        self.context
            .pod
            .metadata
            .namespace
            .as_deref()
            .unwrap_or("default")
    }

    /// A `fieldRef`, as the downward API reports it for a pod on this machine.
    fn field(&self, variable: &str, selector: &ObjectFieldSelector) -> Result<String, EnvError> {
        let pod = self.context.pod;
        let metadata = &pod.metadata;
        let path = selector.field_path.as_str();
        let subscript = |prefix: &str| {
            path.strip_prefix(prefix)
                .and_then(|rest| rest.strip_prefix("['"))
                .and_then(|rest| rest.strip_suffix("']"))
        };
        let from = |map: &Option<BTreeMap<String, String>>, key: &str| {
            map.as_ref()
                .and_then(|map| map.get(key))
                .cloned()
                .unwrap_or_default()
        };
        let value = match path {
            "metadata.name" => metadata.name.clone().unwrap_or_default(),
            "metadata.namespace" => self.namespace().to_owned(),
            "metadata.uid" => metadata.uid.clone().unwrap_or_default(),
            "spec.nodeName" => self.context.node_name.to_owned(),
            "spec.serviceAccountName" => pod
                .spec
                .as_ref()
                .and_then(|spec| spec.service_account_name.clone())
                .unwrap_or_else(|| "default".to_owned()),
            "status.podIP" | "status.podIPs" | "status.hostIP" | "status.hostIPs" => {
                LOOPBACK_IP.to_owned()
            }
            _ => {
                if let Some(key) = subscript("metadata.labels") {
                    from(&metadata.labels, key)
                } else if let Some(key) = subscript("metadata.annotations") {
                    from(&metadata.annotations, key)
                } else {
                    return Err(EnvError::UnsupportedField {
                        replica: self.replica.clone(),
                        variable: variable.to_owned(),
                        field_path: path.to_owned(),
                    });
                }
            }
        };
        Ok(value)
    }

    /// A `resourceFieldRef`, rounded up to whole divisors as the downward API does. A container
    /// without limits reports the machine's capacity; without requests, its limits if set, else 0.
    fn resource(
        &self,
        variable: &str,
        selector: &ResourceFieldSelector,
    ) -> Result<String, EnvError> {
        let container = match selector.container_name.as_deref() {
            None | Some("") => self.container,
            Some(name) => self
                .context
                .pod
                .spec
                .iter()
                .flat_map(|spec| {
                    spec.containers
                        .iter()
                        .chain(spec.init_containers.iter().flatten())
                })
                .find(|container| container.name == name)
                .ok_or_else(|| EnvError::UnknownContainer {
                    replica: self.replica.clone(),
                    variable: variable.to_owned(),
                    container: name.to_owned(),
                })?,
        };
        let invalid = |problem| EnvError::InvalidQuantity {
            replica: self.replica.clone(),
            variable: variable.to_owned(),
            problem,
        };
        let (field, resource) = selector
            .resource
            .split_once('.')
            .filter(|(field, resource)| {
                matches!(*field, "limits" | "requests") && matches!(*resource, "cpu" | "memory")
            })
            .ok_or_else(|| EnvError::UnsupportedResource {
                replica: self.replica.clone(),
                variable: variable.to_owned(),
                resource: selector.resource.clone(),
            })?;
        let read = if resource == "cpu" {
            quantity::to_millis
        } else {
            quantity::to_units
        };
        let resources = container.resources.as_ref();
        let declared = |field: &str| {
            resources
                .and_then(|r| {
                    if field == "limits" {
                        r.limits.as_ref()
                    } else {
                        r.requests.as_ref()
                    }
                })
                .and_then(|map| map.get(resource))
        };
        let limit = match declared("limits") {
            Some(quantity) => read(quantity).map_err(invalid)?,
            None if resource == "cpu" => self.context.capacity.cpu_millis,
            None => self.context.capacity.memory_bytes,
        };
        let amount = if field == "limits" {
            limit
        } else {
            match declared("requests") {
                Some(quantity) => read(quantity).map_err(invalid)?,
                None if declared("limits").is_some() => limit,
                None => 0,
            }
        };
        let one = Quantity("1".to_owned());
        let divisor_quantity = selector.divisor.as_ref().unwrap_or(&one);
        let divisor = read(divisor_quantity).map_err(invalid)?;
        if divisor == 0 {
            return Err(invalid(InvalidQuantity {
                text: divisor_quantity.0.clone(),
                reason: "a divisor must be positive",
            }));
        }
        Ok(amount.div_ceil(divisor).to_string())
    }

    /// The companion `kind`/`name` in the pod's namespace (one without a namespace matches any).
    fn companion(&self, kind: CompanionKind, name: &str) -> Option<Object<'_>> {
        let namespace = self.namespace();
        let matches = |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
            meta.name.as_deref() == Some(name)
                && meta.namespace.as_deref().is_none_or(|ns| ns == namespace)
        };
        self.context
            .companions
            .iter()
            .find_map(|companion| match (kind, companion) {
                (CompanionKind::ConfigMap, Companion::ConfigMap(map)) if matches(&map.metadata) => {
                    Some(Object::ConfigMap(map))
                }
                (CompanionKind::Secret, Companion::Secret(secret)) if matches(&secret.metadata) => {
                    Some(Object::Secret(secret))
                }
                _ => None,
            })
    }

    /// One key of a ConfigMap or Secret; `None` when absent and optional.
    fn key(
        &self,
        variable: &str,
        kind: CompanionKind,
        name: &str,
        key: &str,
        optional: Option<bool>,
    ) -> Result<Option<String>, EnvError> {
        let optional = optional.unwrap_or(false);
        let Some(object) = self.companion(kind, name) else {
            return if optional {
                Ok(None)
            } else {
                Err(self.missing_object(variable, kind, name))
            };
        };
        match object.entry(self, variable, key)? {
            Some(value) => Ok(Some(value)),
            None if optional => Ok(None),
            None => Err(EnvError::MissingKey {
                replica: self.replica.clone(),
                variable: variable.to_owned(),
                kind,
                name: name.to_owned(),
                key: key.to_owned(),
            }),
        }
    }

    /// Every key of a ConfigMap or Secret, sorted; nothing when absent and optional.
    fn import(
        &self,
        variable: &str,
        kind: CompanionKind,
        name: &str,
        optional: Option<bool>,
    ) -> Result<Vec<(String, String)>, EnvError> {
        match self.companion(kind, name) {
            Some(object) => Ok(object.entries(self, variable)?.into_iter().collect()),
            None if optional.unwrap_or(false) => Ok(Vec::new()),
            None => Err(self.missing_object(variable, kind, name)),
        }
    }

    fn missing_object(&self, variable: &str, kind: CompanionKind, name: &str) -> EnvError {
        EnvError::MissingObject {
            replica: self.replica.clone(),
            variable: variable.to_owned(),
            kind,
            name: name.to_owned(),
        }
    }
}

/// A companion found for a reference.
enum Object<'a> {
    ConfigMap(&'a ConfigMap),
    Secret(&'a Secret),
}

impl Object<'_> {
    /// The object's keys and text values: a ConfigMap's `data`; a Secret's `data` with
    /// `stringData` on top, as the API server merges them.
    fn entries(
        &self,
        resolver: &Resolver<'_>,
        variable: &str,
    ) -> Result<BTreeMap<String, String>, EnvError> {
        match self {
            Object::ConfigMap(map) => Ok(map.data.clone().unwrap_or_default()),
            Object::Secret(secret) => {
                let mut entries = BTreeMap::new();
                for key in secret.data.iter().flatten().map(|(key, _)| key) {
                    if let Some(value) = self.entry(resolver, variable, key)? {
                        entries.insert(key.clone(), value);
                    }
                }
                entries.extend(secret.string_data.clone().unwrap_or_default());
                Ok(entries)
            }
        }
    }

    /// One key's text value, as [`Object::entries`] would give it; only that key must be text.
    fn entry(
        &self,
        resolver: &Resolver<'_>,
        variable: &str,
        key: &str,
    ) -> Result<Option<String>, EnvError> {
        match self {
            Object::ConfigMap(map) => Ok(map.data.as_ref().and_then(|data| data.get(key)).cloned()),
            Object::Secret(secret) => {
                if let Some(text) = secret.string_data.as_ref().and_then(|data| data.get(key)) {
                    return Ok(Some(text.clone()));
                }
                let Some(bytes) = secret.data.as_ref().and_then(|data| data.get(key)) else {
                    return Ok(None);
                };
                String::from_utf8(bytes.0.clone())
                    .map(Some)
                    .map_err(|_| EnvError::NotText {
                        replica: resolver.replica.clone(),
                        variable: variable.to_owned(),
                        name: secret.metadata.name.clone().unwrap_or_default(),
                        key: key.to_owned(),
                    })
            }
        }
    }
}

#[cfg(test)]
mod tests;
