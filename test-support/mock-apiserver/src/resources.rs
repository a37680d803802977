//! The kinds of objects the server stores: what the operator reads and writes, and nothing else.

/// One namespaced resource, as its API paths name it (`/apis/<group>/<version>/namespaces/<ns>/<plural>`).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Resource {
    /// The API group; empty for the core group (`/api/v1`).
    pub group: &'static str,
    /// The version served.
    pub version: &'static str,
    /// The plural name in paths (`pods`, `tfjobs`).
    pub plural: &'static str,
    /// The kind of its objects (`Pod`, `TFJob`).
    pub kind: &'static str,
    /// Whether it has a `status` subresource: then writes to the object leave `.status` alone,
    /// and writes to `/status` touch nothing else.
    pub status_subresource: bool,
}

impl Resource {
    /// `group/version`, or `version` for the core group.
    #[must_use]
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `group/version/plural` (`v1/pods`, `kubeflow.org/v1/tfjobs`): how statistics name it.
    #[must_use]
    pub fn id(&self) -> String {
        format!("{}/{}", self.api_version(), self.plural)
    }

    /// The resource served at `group`, `version`, `plural`.
    #[must_use]
    pub fn find(group: &str, version: &str, plural: &str) -> Option<&'static Resource> {
        RESOURCES
            .iter()
            .find(|r| r.group == group && r.version == version && r.plural == plural)
    }
}

const fn resource(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    status_subresource: bool,
) -> Resource {
    Resource {
        group,
        version,
        plural,
        kind,
        status_subresource,
    }
}

/// Every resource served. All are namespaced; cluster-scoped resources are not served.
pub const RESOURCES: &[Resource] = &[
    resource("", "v1", "pods", "Pod", true),
    resource("", "v1", "services", "Service", true),
    resource("", "v1", "configmaps", "ConfigMap", false),
    resource("", "v1", "serviceaccounts", "ServiceAccount", false),
    resource("", "v1", "events", "Event", false),
    resource("events.k8s.io", "v1", "events", "Event", false),
    resource("coordination.k8s.io", "v1", "leases", "Lease", false),
    resource("rbac.authorization.k8s.io", "v1", "roles", "Role", false),
    resource(
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
        false,
    ),
    resource("kubeflow.org", "v1", "tfjobs", "TFJob", true),
    resource("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob", true),
    resource("kubeflow.org", "v1", "xgboostjobs", "XGBoostJob", true),
    resource("kubeflow.org", "v1", "paddlejobs", "PaddleJob", true),
    resource("kubeflow.org", "v1", "jaxjobs", "JAXJob", true),
    resource("kubeflow.org", "v1", "mpijobs", "MPIJob", true),
    resource("kubeflow.org", "v1", "mxjobs", "MXJob", true),
    resource(
        "scheduling.volcano.sh",
        "v1beta1",
        "podgroups",
        "PodGroup",
        true,
    ),
    resource(
        "scheduling.x-k8s.io",
        "v1alpha1",
        "podgroups",
        "PodGroup",
        true,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_resources_have_a_bare_version() {
        let pods = Resource::find("", "v1", "pods").expect("pods are served");
        assert_eq!(pods.api_version(), "v1");
        assert_eq!(pods.id(), "v1/pods");
        let jobs = Resource::find("kubeflow.org", "v1", "tfjobs").expect("tfjobs are served");
        assert_eq!(jobs.api_version(), "kubeflow.org/v1");
        assert_eq!(jobs.kind, "TFJob");
        assert!(Resource::find("apps", "v1", "deployments").is_none());
    }
}
