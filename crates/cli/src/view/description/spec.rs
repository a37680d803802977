//! One replica type of a job's spec, as `describe` shows it: how many, restarted how, and what
//! its framework container runs with: labels, image, command, resources, environment, mounts
//! and the volumes behind them. What the spec does not set is left out, but for the command.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use k8s_openapi::api::core::v1::{Container, EnvVar, Volume};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use trainctl_api::{ReplicaSpec, ReplicaType, TrainingJob};

use crate::view::volumes::ClaimBacking;
use crate::view::{UNSET, fields};

/// Writes one replica type of the spec; a claim's volume with what backs it in `claims`.
pub(super) fn replica_spec(
    out: &mut String,
    job: &TrainingJob,
    replica_type: &ReplicaType,
    spec: &ReplicaSpec,
    claims: &BTreeMap<String, ClaimBacking>,
) {
    let _ = writeln!(out, "  {replica_type}:");
    let mut lines = vec![
        ("Replicas:", spec.replicas_or_default().to_string()),
        (
            "Restart Policy:",
            spec.restart_policy
                .map_or(UNSET, |policy| policy.as_str())
                .to_owned(),
        ),
    ];
    if let Some(labels) = spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.as_ref())
        && !labels.is_empty()
    {
        lines.push(("Labels:", pairs(labels, "=", "\n")));
    }
    if let Some(container) = job.kind().framework_container(spec.containers()) {
        lines.push(("Container:", container.name.clone()));
        if let Some(image) = &container.image {
            lines.push(("Image:", image.clone()));
        }
        lines.push(("Command:", command(container)));
        let resources = container.resources.as_ref();
        for (label, amounts) in [
            ("Requests:", resources.and_then(|r| r.requests.as_ref())),
            ("Limits:", resources.and_then(|r| r.limits.as_ref())),
        ] {
            if let Some(amounts) = amounts.filter(|amounts| !amounts.is_empty()) {
                lines.push((label, quantities(amounts)));
            }
        }
        let environment = environment(container);
        if !environment.is_empty() {
            lines.push(("Environment:", environment.join("\n")));
        }
        let mounts = mounts(container);
        if !mounts.is_empty() {
            lines.push(("Mounts:", mounts.join("\n")));
        }
    }
    let volumes: Vec<String> = spec
        .template
        .spec
        .iter()
        .flat_map(|pod| pod.volumes.iter().flatten())
        .map(|one| volume(one, claims))
        .collect();
    if !volumes.is_empty() {
        lines.push(("Volumes:", volumes.join("\n")));
    }
    fields(out, 4, &lines);
}

/// The container's command and arguments, as a shell line.
fn command(container: &Container) -> String {
    let argv: Vec<&String> = container
        .command
        .iter()
        .chain(&container.args)
        .flatten()
        .collect();
    if argv.is_empty() {
        return UNSET.to_owned();
    }
    argv.iter()
        .map(|arg| shell_quote(arg))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `cpu=1, memory=2Gi, nvidia.com/gpu=1`.
fn quantities(amounts: &BTreeMap<String, Quantity>) -> String {
    let amounts: BTreeMap<&String, &str> = amounts
        .iter()
        .map(|(name, amount)| (name, amount.0.as_str()))
        .collect();
    pairs(&amounts, "=", ", ")
}

/// `key=value` pairs joined by `separator`.
fn pairs<K: AsRef<str>, V: AsRef<str>>(
    map: &BTreeMap<K, V>,
    equals: &str,
    separator: &str,
) -> String {
    map.iter()
        .map(|(key, value)| format!("{}{equals}{}", key.as_ref(), value.as_ref()))
        .collect::<Vec<_>>()
        .join(separator)
}

/// One line per variable the spec sets, as `kubectl describe` says them: the value, or where
/// it comes from (a Secret's values are never in the spec, so never shown).
fn environment(container: &Container) -> Vec<String> {
    let from = container.env_from.iter().flatten().map(|source| {
        let prefix = source.prefix.as_deref().unwrap_or_default();
        let prefixed = if prefix.is_empty() {
            String::new()
        } else {
            format!(", prefixed {prefix}")
        };
        match (&source.config_map_ref, &source.secret_ref) {
            (Some(map), _) => format!("<every key of configMap {}{prefixed}>", map.name),
            (None, Some(secret)) => format!("<every key of secret {}{prefixed}>", secret.name),
            (None, None) => "<an envFrom with no source>".to_owned(),
        }
    });
    from.chain(container.env.iter().flatten().map(variable))
        .collect()
}

/// `NAME=value`, or `NAME=<where its value comes from>`.
fn variable(var: &EnvVar) -> String {
    let Some(source) = &var.value_from else {
        return format!("{}={}", var.name, var.value.as_deref().unwrap_or_default());
    };
    let from = if let Some(key) = &source.config_map_key_ref {
        format!("<key {} of configMap {}>", key.key, key.name)
    } else if let Some(key) = &source.secret_key_ref {
        format!("<key {} of secret {}>", key.key, key.name)
    } else if let Some(field) = &source.field_ref {
        format!("<field {}>", field.field_path)
    } else if let Some(resource) = &source.resource_field_ref {
        format!("<resource {}>", resource.resource)
    } else {
        "<set from elsewhere>".to_owned()
    };
    format!("{}={from}", var.name)
}

/// `/data from data (ro)`, as `kubectl describe` says a mount.
fn mounts(container: &Container) -> Vec<String> {
    container
        .volume_mounts
        .iter()
        .flatten()
        .map(|mount| {
            let sub_path = mount
                .sub_path
                .as_deref()
                .filter(|sub_path| !sub_path.is_empty())
                .map(|sub_path| format!(", path {sub_path}"))
                .unwrap_or_default();
            let access = if mount.read_only == Some(true) {
                "ro"
            } else {
                "rw"
            };
            format!(
                "{} from {} ({access}{sub_path})",
                mount.mount_path, mount.name
            )
        })
        .collect()
}

/// `data: PersistentVolumeClaim training-data (bound to /srv/data)`: a volume, its type and
/// what it names; for a claim, what backs it in `claims` (when known: on this machine).
fn volume(volume: &Volume, claims: &BTreeMap<String, ClaimBacking>) -> String {
    let source = if let Some(claim) = &volume.persistent_volume_claim {
        let notes: Vec<String> = (claim.read_only == Some(true))
            .then(|| "read-only".to_owned())
            .into_iter()
            .chain(claims.get(&claim.claim_name).map(ClaimBacking::words))
            .collect();
        if notes.is_empty() {
            format!("PersistentVolumeClaim {}", claim.claim_name)
        } else {
            format!(
                "PersistentVolumeClaim {} ({})",
                claim.claim_name,
                notes.join(", ")
            )
        }
    } else if let Some(map) = &volume.config_map {
        format!("ConfigMap {}", map.name)
    } else if let Some(secret) = &volume.secret {
        format!(
            "Secret {}",
            secret.secret_name.as_deref().unwrap_or_default()
        )
    } else if let Some(empty) = &volume.empty_dir {
        match (&empty.medium, &empty.size_limit) {
            (Some(medium), _) if medium == "Memory" => "EmptyDir in memory".to_owned(),
            (_, Some(limit)) => format!("EmptyDir (size limit {})", limit.0),
            _ => "EmptyDir".to_owned(),
        }
    } else if let Some(host) = &volume.host_path {
        format!("HostPath {}", host.path)
    } else if let Some(nfs) = &volume.nfs {
        format!("NFS {}:{}", nfs.server, nfs.path)
    } else {
        "another type of volume".to_owned()
    };
    format!("{}: {source}", volume.name)
}

/// An argument as a shell would need it: quoted when it holds anything but plain characters.
pub(crate) fn shell_quote(arg: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !arg.is_empty() && arg.chars().all(plain) {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}
