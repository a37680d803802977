//! Objects as responses carry them: whole, or as `PartialObjectMetadata` when the client asks
//! for metadata only (`Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`).

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::resources::Resource;

/// The API version of metadata-only objects and lists.
const META_API_VERSION: &str = "meta.k8s.io/v1";

/// An object as sent.
#[derive(Serialize)]
#[serde(untagged)]
pub enum Rendered<'a> {
    /// The whole object.
    Full(&'a Value),
    /// Its metadata only.
    Metadata {
        /// `meta.k8s.io/v1`
        #[serde(rename = "apiVersion")]
        api_version: &'static str,
        /// `PartialObjectMetadata`
        kind: &'static str,
        /// The object's metadata.
        metadata: &'a Value,
    },
}

impl<'a> Rendered<'a> {
    /// `object`, whole or as its metadata.
    #[must_use]
    pub fn new(object: &'a Value, metadata_only: bool) -> Rendered<'a> {
        if metadata_only {
            Rendered::Metadata {
                api_version: META_API_VERSION,
                kind: "PartialObjectMetadata",
                metadata: &object["metadata"],
            }
        } else {
            Rendered::Full(object)
        }
    }
}

/// A list response.
#[derive(Serialize)]
pub struct List<'a> {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    metadata: ListMeta,
    items: Vec<Rendered<'a>>,
}

#[derive(Serialize)]
struct ListMeta {
    #[serde(rename = "resourceVersion")]
    resource_version: String,
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    continue_token: Option<String>,
}

impl<'a> List<'a> {
    /// The list of `items` of `resource`, at `resource_version`.
    #[must_use]
    pub fn new(
        resource: &Resource,
        items: &'a [Arc<Value>],
        resource_version: u64,
        continue_token: Option<String>,
        metadata_only: bool,
    ) -> List<'a> {
        let (api_version, kind) = if metadata_only {
            (
                META_API_VERSION.to_owned(),
                "PartialObjectMetadataList".to_owned(),
            )
        } else {
            (resource.api_version(), format!("{}List", resource.kind))
        };
        List {
            api_version,
            kind,
            metadata: ListMeta {
                resource_version: resource_version.to_string(),
                continue_token,
            },
            items: items
                .iter()
                .map(|item| Rendered::new(item, metadata_only))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn metadata_only_objects_keep_just_the_metadata() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {}});
        assert_eq!(
            serde_json::to_value(Rendered::new(&pod, true)).expect("serializes"),
            json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": {"name": "a"}})
        );
        assert_eq!(
            serde_json::to_value(Rendered::new(&pod, false)).expect("serializes"),
            pod
        );
    }

    #[test]
    fn lists_name_their_kind_and_version() {
        let pods = Resource::find("", "v1", "pods").expect("served");
        let items = [Arc::new(json!({"metadata": {"name": "a"}}))];
        let list = List::new(pods, &items, 7, Some("7/ml/a".to_owned()), false);
        assert_eq!(
            serde_json::to_value(list).expect("serializes"),
            json!({
                "apiVersion": "v1", "kind": "PodList",
                "metadata": {"resourceVersion": "7", "continue": "7/ml/a"},
                "items": [{"metadata": {"name": "a"}}],
            })
        );
        let list = List::new(pods, &items, 7, None, true);
        assert_eq!(
            serde_json::to_value(list).expect("serializes")["kind"],
            "PartialObjectMetadataList"
        );
    }
}
