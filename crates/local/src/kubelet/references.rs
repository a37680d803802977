//! The ConfigMaps and Secrets a job's pods reference: volumes' `configMap.name` and
//! `secret.secretName`, env `configMapKeyRef` and `secretKeyRef`, `envFrom` `configMapRef` and
//! `secretRef`, in every container and init container, optional or not. The runner resolves them
//! from the objects recorded with the job ([`env`](super::env) and [`volumes`](super::volumes),
//! matching as [`Reference::names`] does); a server records, with a job, those it was given
//! before that the job's own file does not hold.

use std::collections::BTreeSet;
use std::fmt;

use k8s_openapi::api::core::v1::{Container, PodSpec};
use trainctl_api::TrainingJob;
use trainctl_api::manifest::Companion;

/// Which kind of object a reference names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CompanionKind {
    /// A ConfigMap.
    ConfigMap,
    /// A Secret.
    Secret,
}

impl CompanionKind {
    /// The kind of `companion`.
    #[must_use]
    pub fn of(companion: &Companion) -> CompanionKind {
        match companion {
            Companion::ConfigMap(_) => CompanionKind::ConfigMap,
            Companion::Secret(_) => CompanionKind::Secret,
        }
    }
}

impl fmt::Display for CompanionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CompanionKind::ConfigMap => "ConfigMap",
            CompanionKind::Secret => "Secret",
        })
    }
}

/// A ConfigMap or Secret a pod reads, by name, in the pod's namespace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Reference {
    /// ConfigMap or Secret.
    pub kind: CompanionKind,
    /// The object's name.
    pub name: String,
}

impl Reference {
    /// Whether `companion` is the object referenced by a pod of `namespace`: the same kind and
    /// name, in `namespace` or naming no namespace (one without matches any, as the runner
    /// resolves references).
    #[must_use]
    pub fn names(&self, companion: &Companion, namespace: &str) -> bool {
        let meta = companion.metadata();
        CompanionKind::of(companion) == self.kind
            && meta.name.as_deref() == Some(self.name.as_str())
            && meta.namespace.as_deref().is_none_or(|own| own == namespace)
    }
}

/// Every ConfigMap and Secret the pod templates of `job` reference, sorted, each once.
#[must_use]
pub fn job_references(job: &TrainingJob) -> BTreeSet<Reference> {
    job.replica_specs()
        .values()
        .filter_map(|spec| spec.template.spec.as_ref())
        .flat_map(pod_references)
        .collect()
}

/// Every ConfigMap and Secret `spec` references, sorted, each once. A reference without a name
/// (a `secret` volume without `secretName`) names nothing.
#[must_use]
pub fn pod_references(spec: &PodSpec) -> BTreeSet<Reference> {
    let mut found = Vec::new();
    for volume in spec.volumes.iter().flatten() {
        if let Some(source) = &volume.config_map {
            found.push((CompanionKind::ConfigMap, Some(&source.name)));
        }
        if let Some(source) = &volume.secret {
            found.push((CompanionKind::Secret, source.secret_name.as_ref()));
        }
    }
    for container in spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
    {
        container_references(container, &mut found);
    }
    found
        .into_iter()
        .filter_map(|(kind, name)| {
            let name = name.filter(|name| !name.is_empty())?;
            Some(Reference {
                kind,
                name: name.clone(),
            })
        })
        .collect()
}

/// The references of one container's `envFrom` and `env`.
fn container_references<'a>(
    container: &'a Container,
    found: &mut Vec<(CompanionKind, Option<&'a String>)>,
) {
    for source in container.env_from.iter().flatten() {
        if let Some(reference) = &source.config_map_ref {
            found.push((CompanionKind::ConfigMap, Some(&reference.name)));
        }
        if let Some(reference) = &source.secret_ref {
            found.push((CompanionKind::Secret, Some(&reference.name)));
        }
    }
    for source in container
        .env
        .iter()
        .flatten()
        .filter_map(|var| var.value_from.as_ref())
    {
        if let Some(selector) = &source.config_map_key_ref {
            found.push((CompanionKind::ConfigMap, Some(&selector.name)));
        }
        if let Some(selector) = &source.secret_key_ref {
            found.push((CompanionKind::Secret, Some(&selector.name)));
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    use serde_json::json;

    use super::*;

    fn reference(kind: CompanionKind, name: &str) -> Reference {
        Reference {
            kind,
            name: name.to_owned(),
        }
    }

    fn pod(spec: serde_json::Value) -> PodSpec {
        serde_json::from_value(spec).expect("a pod spec")
    }

    #[test]
    fn every_kind_of_reference_is_found_in_volumes_env_and_env_from() {
        let spec = pod(json!({
            "initContainers": [{"name": "init", "envFrom": [{"secretRef": {"name": "init-secret"}}]}],
            "containers": [
                {"name": "main",
                 "envFrom": [{"configMapRef": {"name": "imported", "optional": true}, "prefix": "X_"}],
                 "env": [
                     {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "keyed", "key": "a"}}},
                     {"name": "B", "valueFrom": {"secretKeyRef": {"name": "token", "key": "t"}}},
                     {"name": "C", "value": "literal"},
                     {"name": "D", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]},
                {"name": "sidecar",
                 "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "keyed", "key": "b"}}}]}],
            "volumes": [
                {"name": "config", "configMap": {"name": "settings"}},
                {"name": "creds", "secret": {"secretName": "credentials", "optional": true}},
                {"name": "scratch", "emptyDir": {}},
                {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
        }));
        let found: Vec<Reference> = pod_references(&spec).into_iter().collect();
        assert_eq!(
            found,
            [
                reference(CompanionKind::ConfigMap, "imported"),
                reference(CompanionKind::ConfigMap, "keyed"),
                reference(CompanionKind::ConfigMap, "settings"),
                reference(CompanionKind::Secret, "credentials"),
                reference(CompanionKind::Secret, "init-secret"),
                reference(CompanionKind::Secret, "token"),
            ]
        );
    }

    #[test]
    fn a_pod_without_references_or_with_nameless_ones_has_none() {
        let spec = pod(json!({
            "containers": [{"name": "main", "command": ["true"], "env": [{"name": "A", "value": "b"}]}],
            "volumes": [{"name": "creds", "secret": {}}, {"name": "empty", "secret": {"secretName": ""}}]
        }));
        assert_eq!(pod_references(&spec), BTreeSet::new());
    }

    #[test]
    fn a_job_references_what_each_replica_type_does_once() {
        let loaded = trainctl_api::manifest::load_str(
            "job.yaml",
            "apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: mnist}
spec:
  tfReplicaSpecs:
    PS:
      template:
        spec:
          containers:
          - name: tensorflow
            image: busybox
            env: [{name: A, valueFrom: {configMapKeyRef: {name: shared, key: a}}}]
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - name: tensorflow
            image: busybox
            volumeMounts: [{name: c, mountPath: /etc/config}]
          volumes:
          - {name: c, configMap: {name: shared}}
          - {name: s, secret: {secretName: token}}
",
        );
        assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
        let found: Vec<Reference> = job_references(&loaded.jobs[0].job).into_iter().collect();
        assert_eq!(
            found,
            [
                reference(CompanionKind::ConfigMap, "shared"),
                reference(CompanionKind::Secret, "token"),
            ]
        );
    }

    #[test]
    fn a_reference_names_an_object_of_its_kind_and_name_in_its_namespace_or_in_none() {
        let map = |namespace: Option<&str>| {
            let mut object: ConfigMap = serde_json::from_value(json!({
                "metadata": {"name": "settings"}, "data": {"a": "1"}
            }))
            .expect("a ConfigMap");
            object.metadata.namespace = namespace.map(str::to_owned);
            Companion::ConfigMap(object)
        };
        let settings = reference(CompanionKind::ConfigMap, "settings");
        assert!(settings.names(&map(None), "team-a"));
        assert!(settings.names(&map(Some("team-a")), "team-a"));
        assert!(!settings.names(&map(Some("team-b")), "team-a"));
        assert!(!reference(CompanionKind::ConfigMap, "other").names(&map(None), "team-a"));
        let secret: Secret =
            serde_json::from_value(json!({"metadata": {"name": "settings"}})).expect("a Secret");
        assert!(!settings.names(&Companion::Secret(secret.clone()), "team-a"));
        assert!(
            reference(CompanionKind::Secret, "settings").names(&Companion::Secret(secret), "x")
        );
    }
}
