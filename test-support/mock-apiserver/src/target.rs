//! What a request's path names: a collection (of one namespace, or of all), one object, or one
//! object's status.

use crate::error::ApiError;
use crate::resources::Resource;

/// The target of a request, from its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The resource.
    pub resource: &'static Resource,
    /// The namespace; `None` for a collection across all namespaces.
    pub namespace: Option<String>,
    /// The object's name; `None` for a collection.
    pub name: Option<String>,
    /// Whether the path ends in `/status`.
    pub status: bool,
}

impl Target {
    /// Reads a path: `/api/v1/...` or `/apis/<group>/<version>/...`, then
    /// `namespaces/<ns>/<plural>[/<name>[/status]]` or `<plural>` (every namespace).
    pub fn parse(path: &str) -> Result<Target, ApiError> {
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let (group, version, rest) = match segments.as_slice() {
            ["api", version, rest @ ..] => ("", *version, rest),
            ["apis", group, version, rest @ ..] => (*group, *version, rest),
            _ => return Err(ApiError::NoResource),
        };
        let (namespace, plural, name, subresource) = match rest {
            [plural] => (None, *plural, None, None),
            ["namespaces", namespace, plural] => (Some(*namespace), *plural, None, None),
            ["namespaces", namespace, plural, name] => {
                (Some(*namespace), *plural, Some(*name), None)
            }
            ["namespaces", namespace, plural, name, subresource] => {
                (Some(*namespace), *plural, Some(*name), Some(*subresource))
            }
            _ => return Err(ApiError::NoResource),
        };
        let resource = Resource::find(group, version, plural).ok_or(ApiError::NoResource)?;
        let status = match subresource {
            None => false,
            Some("status") if resource.status_subresource => true,
            Some(_) => return Err(ApiError::NoResource),
        };
        if [namespace, name]
            .iter()
            .flatten()
            .any(|part| part.is_empty())
        {
            return Err(ApiError::NoResource);
        }
        Ok(Target {
            resource,
            namespace: namespace.map(str::to_owned),
            name: name.map(str::to_owned),
            status,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_objects_collections_and_status() {
        let status = Target::parse("/apis/kubeflow.org/v1/namespaces/ml/tfjobs/mnist/status")
            .expect("served");
        assert_eq!(status.resource.kind, "TFJob");
        assert_eq!(status.namespace.as_deref(), Some("ml"));
        assert_eq!(status.name.as_deref(), Some("mnist"));
        assert!(status.status);

        let all = Target::parse("/api/v1/pods").expect("served");
        assert_eq!(all.resource.kind, "Pod");
        assert_eq!((all.namespace, all.name, all.status), (None, None, false));

        let one = Target::parse("/api/v1/namespaces/ml/services").expect("served");
        assert_eq!(one.namespace.as_deref(), Some("ml"));
    }

    #[test]
    fn refuses_what_is_not_served() {
        for path in [
            "/",
            "/api/v1/namespaces/ml",
            "/apis/apps/v1/namespaces/ml/deployments",
            "/api/v1/namespaces/ml/pods/mnist/log",
            "/api/v1/namespaces/ml/configmaps/config/status",
            "/api/v1/namespaces//pods",
        ] {
            assert_eq!(Target::parse(path), Err(ApiError::NoResource), "{path}");
        }
    }
}
