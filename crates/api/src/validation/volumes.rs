//! A pod template's volumes and each container's mounts, checked as the API server checks a
//! pod: volume names are unique DNS-1123 labels, a claim's name is a DNS-1123 subdomain, a
//! ConfigMap's or Secret's `items` name a key and a relative path without `..`, a mount names a
//! volume of the pod, a container mounts each path once, and a `subPath` (or `subPathExpr`, not
//! both) is relative without `..`. A name or path is also where trainctl keeps a volume's
//! files, so one with a `/` or `..` could reach elsewhere.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Container, PodSpec};

use super::issue::Issue;
use super::names::{dns_label, dns_subdomain, local_path};
use crate::field_path::FieldPath;

/// Checks the pod's `volumes`.
pub(super) fn validate_volumes(pod: &PodSpec, pod_path: &FieldPath, issues: &mut Vec<Issue>) {
    let mut names = BTreeSet::new();
    for (i, volume) in pod.volumes.iter().flatten().enumerate() {
        let path = pod_path.field("volumes").index(i);
        if let Err(problem) = dns_label(&volume.name, false) {
            issues.push(Issue::error(
                path.field("name"),
                format!(
                    "`{}` is not a valid volume name: {problem}; a volume's name is a DNS-1123 \
                     label: lowercase letters, digits and `-`",
                    volume.name
                ),
            ));
        } else if !names.insert(volume.name.as_str()) {
            issues.push(Issue::error(
                path.field("name"),
                format!("`{}` names another volume of the pod already", volume.name),
            ));
        }
        let items = [
            (
                "configMap",
                volume.config_map.as_ref().and_then(|v| v.items.as_ref()),
            ),
            (
                "secret",
                volume.secret.as_ref().and_then(|v| v.items.as_ref()),
            ),
        ];
        for (source, items) in items {
            for (k, item) in items.into_iter().flatten().enumerate() {
                let item_path = path.field(source).field("items").index(k);
                if item.key.is_empty() {
                    issues.push(Issue::error(item_path.field("key"), "is required"));
                }
                let problem = if item.path.is_empty() {
                    Err("is required".to_owned())
                } else {
                    local_path(&item.path).map_err(|problem| format!("`{}`: {problem}", item.path))
                };
                if let Err(problem) = problem {
                    issues.push(Issue::error(item_path.field("path"), problem));
                }
            }
        }
        if let Some(claim) = &volume.persistent_volume_claim
            && let Err(problem) = dns_subdomain(&claim.claim_name)
        {
            issues.push(Issue::error(
                path.field("persistentVolumeClaim").field("claimName"),
                format!(
                    "`{}` is not a valid claim name: {problem}; a claim's name is a DNS-1123 \
                     subdomain: lowercase letters, digits, `-` and `.`",
                    claim.claim_name
                ),
            ));
        }
    }
}

/// Checks `container`'s `volumeMounts` against the pod's volumes.
pub(super) fn validate_mounts(
    pod: &PodSpec,
    container: &Container,
    container_path: &FieldPath,
    issues: &mut Vec<Issue>,
) {
    let volumes: BTreeSet<&str> = pod
        .volumes
        .iter()
        .flatten()
        .map(|volume| volume.name.as_str())
        .collect();
    let mut paths = BTreeSet::new();
    for (j, mount) in container.volume_mounts.iter().flatten().enumerate() {
        let path = container_path.field("volumeMounts").index(j);
        if !volumes.contains(mount.name.as_str()) {
            issues.push(Issue::error(
                path.field("name"),
                format!(
                    "`{}` names no volume of the pod; add it to the pod's `volumes`",
                    mount.name
                ),
            ));
        }
        let sub_paths = [
            ("subPath", mount.sub_path.as_deref()),
            ("subPathExpr", mount.sub_path_expr.as_deref()),
        ];
        for (field, sub_path) in sub_paths {
            if let Some(sub_path) = sub_path.filter(|text| !text.is_empty())
                && let Err(problem) = local_path(sub_path)
            {
                issues.push(Issue::error(
                    path.field(field),
                    format!("`{sub_path}`: {problem}"),
                ));
            }
        }
        if sub_paths
            .iter()
            .all(|(_, text)| text.is_some_and(|text| !text.is_empty()))
        {
            issues.push(Issue::error(
                path.field("subPathExpr"),
                "subPath and subPathExpr are mutually exclusive: give one",
            ));
        }
        if mount.mount_path.is_empty() {
            issues.push(Issue::error(path.field("mountPath"), "is required"));
        } else if !paths.insert(mount.mount_path.trim_end_matches('/')) {
            issues.push(Issue::error(
                path.field("mountPath"),
                format!(
                    "`{}` is mounted already by this container: a path holds one mount",
                    mount.mount_path
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(yaml: &str) -> PodSpec {
        serde_saphyr::from_str(yaml).expect("a pod spec")
    }

    fn problems(yaml: &str) -> Vec<String> {
        let pod = pod(yaml);
        let path = FieldPath::fields("spec");
        let mut issues = Vec::new();
        validate_volumes(&pod, &path, &mut issues);
        for (i, container) in pod.containers.iter().enumerate() {
            validate_mounts(
                &pod,
                container,
                &path.field("containers").index(i),
                &mut issues,
            );
        }
        issues
            .into_iter()
            .map(|issue| format!("{}: {}", issue.path, issue.message))
            .collect()
    }

    #[test]
    fn names_that_would_reach_outside_their_directory_are_refused() {
        assert_eq!(
            problems(
                "containers: [{name: c, volumeMounts: [{name: data, mountPath: /data}]}]
volumes:
- {name: ../../.ssh, configMap: {name: keys}}
- {name: data, persistentVolumeClaim: {claimName: ../team-b/models}}
- {name: root, persistentVolumeClaim: {claimName: /}}"
            ),
            [
                "spec.volumes[0].name: `../../.ssh` is not a valid volume name: `.` is not \
                 allowed; a volume's name is a DNS-1123 label: lowercase letters, digits and `-`",
                "spec.volumes[1].persistentVolumeClaim.claimName: `../team-b/models` is not a \
                 valid claim name: it has an empty part between dots; a claim's name is a \
                 DNS-1123 subdomain: lowercase letters, digits, `-` and `.`",
                "spec.volumes[2].persistentVolumeClaim.claimName: `/` is not a valid claim name: \
                 `/` is not allowed; a claim's name is a DNS-1123 subdomain: lowercase letters, \
                 digits, `-` and `.`",
            ]
        );
    }

    #[test]
    fn mounts_name_a_volume_and_each_path_once() {
        assert_eq!(
            problems(
                "containers:
- name: c
  volumeMounts:
  - {name: data, mountPath: /data}
  - {name: data, mountPath: /data/}
  - {name: absent, mountPath: /absent}
volumes:
- {name: data, emptyDir: {}}
- {name: data, emptyDir: {}}"
            ),
            [
                "spec.volumes[1].name: `data` names another volume of the pod already",
                "spec.containers[0].volumeMounts[1].mountPath: `/data/` is mounted already by \
                 this container: a path holds one mount",
                "spec.containers[0].volumeMounts[2].name: `absent` names no volume of the pod; \
                 add it to the pod's `volumes`",
            ]
        );
    }

    #[test]
    fn well_formed_volumes_pass() {
        assert_eq!(
            problems(
                "containers: [{name: c, volumeMounts: [{name: data, mountPath: /data}, \
                 {name: config, mountPath: /etc/config}]}]
volumes:
- {name: data, persistentVolumeClaim: {claimName: training-data.v2}}
- {name: config, configMap: {name: settings}}"
            ),
            Vec::<String>::new()
        );
    }
}
