//! Test helpers: jobs loaded from YAML exactly as real manifests are (parsed, defaulted, validated).

use k8s_openapi::api::core::v1::{Container, EnvVar, Pod};
use trainctl_api::TrainingJob;

/// Loads the single job of a YAML manifest; panics with the diagnostics if it does not load.
pub(crate) fn load_job(yaml: &str) -> TrainingJob {
    let manifests = trainctl_api::manifest::load_str("test.yaml", yaml);
    assert!(
        !manifests.has_errors(),
        "test manifest must load: {:#?}",
        manifests.diagnostics
    );
    assert_eq!(manifests.jobs.len(), 1, "test manifest must hold one job");
    manifests
        .jobs
        .into_iter()
        .next()
        .expect("one job was just checked")
        .job
}

/// `(name, value)` of each env var, `valueFrom` shown as `<from ...>`.
pub(crate) fn env_pairs(env: &[EnvVar]) -> Vec<(String, String)> {
    env.iter()
        .map(|var| {
            let value = match (&var.value, &var.value_from) {
                (Some(value), _) => value.clone(),
                (None, Some(from)) => format!(
                    "<from {}>",
                    from.field_ref
                        .as_ref()
                        .map_or("?", |f| f.field_path.as_str())
                ),
                (None, None) => String::new(),
            };
            (var.name.clone(), value)
        })
        .collect()
}

/// Owned `(name, value)` pairs from literals, for comparing with [`env_pairs`].
pub(crate) fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

/// The pod's containers.
pub(crate) fn containers(pod: &Pod) -> &[Container] {
    pod.spec
        .as_ref()
        .map(|spec| spec.containers.as_slice())
        .unwrap_or_default()
}

/// The env of the pod's container with that name.
pub(crate) fn container_env(pod: &Pod, name: &str) -> Vec<(String, String)> {
    let container = containers(pod)
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("pod has a container named {name}"));
    env_pairs(container.env.as_deref().unwrap_or_default())
}
