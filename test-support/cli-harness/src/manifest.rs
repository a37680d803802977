//! Job manifests: a TFJob of replica types ([`Replicas`]) running `sh -c` scripts with volumes,
//! mounts and env, after its companions (ConfigMaps, Secrets).

use std::fmt::Write as _;

/// One replica type of a job built by [`tfjob`]: `count` replicas running `sh -c SCRIPT`, with
/// these volumes, mounts and env (each a YAML flow mapping).
#[derive(Clone, Copy)]
pub struct Replicas<'a> {
    /// `Chief`, `Worker`...
    pub replica_type: &'a str,
    /// How many.
    pub count: u32,
    /// What its `tensorflow` container runs, as `sh -c SCRIPT`.
    pub script: &'a str,
    /// Its pod's `volumes`.
    pub volumes: &'a [&'a str],
    /// Its container's `volumeMounts`.
    pub mounts: &'a [&'a str],
    /// Its container's `env`.
    pub env: &'a [&'a str],
    /// Its `restartPolicy`.
    pub policy: &'a str,
    /// Its container's `resources` (a YAML flow mapping); none when empty.
    pub resources: &'a str,
}

impl<'a> Replicas<'a> {
    /// One `Chief` running `script`, without volumes.
    pub fn chief(script: &'a str) -> Replicas<'a> {
        Replicas {
            replica_type: "Chief",
            count: 1,
            script,
            volumes: &[],
            mounts: &[],
            env: &[],
            policy: "Never",
            resources: "",
        }
    }

    /// `count` workers running `script`, without volumes.
    pub fn workers(count: u32, script: &'a str) -> Replicas<'a> {
        Replicas {
            replica_type: "Worker",
            count,
            ..Replicas::chief(script)
        }
    }

    /// The same, with these volumes and mounts.
    pub fn with(self, volumes: &'a [&'a str], mounts: &'a [&'a str]) -> Replicas<'a> {
        Replicas {
            volumes,
            mounts,
            ..self
        }
    }

    /// The same, with this env.
    pub fn env(self, env: &'a [&'a str]) -> Replicas<'a> {
        Replicas { env, ..self }
    }

    /// The same, with these `resources` (`{requests: {cpu: 1}}`).
    pub fn resources(self, resources: &'a str) -> Replicas<'a> {
        Replicas { resources, ..self }
    }

    /// The same, with this `restartPolicy`.
    pub fn policy(self, policy: &'a str) -> Replicas<'a> {
        Replicas { policy, ..self }
    }
}

/// Container env giving the replica its index as `$INDEX`.
pub const INDEX_ENV: &str = "{name: INDEX, valueFrom: {fieldRef: {fieldPath: \"metadata.labels['training.kubeflow.org/replica-index']\"}}}";

/// A TFJob named `name`, after `companions` (YAML documents: ConfigMaps, Secrets), whose
/// replicas have a grace period of 1 s.
pub fn tfjob(name: &str, companions: &str, replica_specs: &[Replicas<'_>]) -> String {
    manifest(None, name, companions, replica_specs)
}

/// [`tfjob`] in the namespace `namespace` (its `metadata.namespace`).
pub fn tfjob_in(
    namespace: &str,
    name: &str,
    companions: &str,
    replica_specs: &[Replicas<'_>],
) -> String {
    manifest(Some(namespace), name, companions, replica_specs)
}

fn manifest(
    namespace: Option<&str>,
    name: &str,
    companions: &str,
    replica_specs: &[Replicas<'_>],
) -> String {
    let mut yaml = String::new();
    if !companions.is_empty() {
        yaml.push_str(companions.trim_end());
        yaml.push_str("\n---\n");
    }
    write!(
        yaml,
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: {name}\n"
    )
    .expect("writing to a String cannot fail");
    if let Some(namespace) = namespace {
        writeln!(yaml, "  namespace: {namespace}").expect("writing to a String cannot fail");
    }
    yaml.push_str("spec:\n  tfReplicaSpecs:\n");
    let mut line = |indent: usize, text: &str| {
        writeln!(yaml, "{:indent$}{text}", "").expect("writing to a String cannot fail");
    };
    for replicas in replica_specs {
        line(4, &format!("{}:", replicas.replica_type));
        line(6, &format!("replicas: {}", replicas.count));
        line(6, &format!("restartPolicy: {}", replicas.policy));
        line(6, "template:");
        line(8, "spec:");
        line(10, "terminationGracePeriodSeconds: 1");
        if !replicas.volumes.is_empty() {
            line(10, "volumes:");
            for volume in replicas.volumes {
                line(10, &format!("- {volume}"));
            }
        }
        line(10, "containers:");
        line(10, "- name: tensorflow");
        line(12, "image: tensorflow/tensorflow:2.16.1");
        for (field, items) in [("volumeMounts", replicas.mounts), ("env", replicas.env)] {
            if !items.is_empty() {
                line(12, &format!("{field}:"));
                for item in items {
                    line(12, &format!("- {item}"));
                }
            }
        }
        if !replicas.resources.is_empty() {
            line(12, &format!("resources: {}", replicas.resources));
        }
        for text in ["command:", "- sh", "- -c", "- |"] {
            line(12, text);
        }
        for text in replicas.script.lines() {
            line(14, text);
        }
    }
    yaml
}
