//! What the store does to the objects themselves: their keys, the fields the server sets or
//! keeps for itself, and the continue tokens of lists.

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::resources::Resource;
use crate::target::Target;

/// (namespace, name)
pub(super) type Key = (String, String);

/// The object's namespace and name, for a target that names one.
pub(super) fn key(target: &Target) -> Result<Key, ApiError> {
    match (&target.namespace, &target.name) {
        (Some(namespace), Some(name)) => Ok((namespace.clone(), name.clone())),
        _ => Err(ApiError::MethodNotAllowed),
    }
}

/// The error for an object of `target`'s resource named `name` that does not exist.
pub(super) fn not_found(target: &Target, name: &str) -> ApiError {
    ApiError::NotFound {
        plural: target.resource.plural,
        name: name.to_owned(),
    }
}

/// The object's `metadata.namespace`, empty when it has none.
pub(super) fn namespace_of(object: &Value) -> &str {
    object["metadata"]["namespace"].as_str().unwrap_or_default()
}

/// The object's `metadata.resourceVersion` as a number, 0 when it has none.
pub(super) fn version_of(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|version| version.parse().ok())
        .unwrap_or_default()
}

/// `<version>/<namespace>/<name>`: the list's version and the last key returned.
pub(super) fn parse_continue(token: &str) -> Result<(u64, Key), ApiError> {
    let invalid = || ApiError::BadRequest(format!("invalid continue token: {token:?}"));
    let (version, key) = token.split_once('/').ok_or_else(invalid)?;
    let (namespace, name) = key.split_once('/').ok_or_else(invalid)?;
    let version = version.parse().map_err(|_| invalid())?;
    Ok((version, (namespace.to_owned(), name.to_owned())))
}

/// What a write to the object itself may change: not the fields the server owns, nor (with a
/// status subresource) the status.
pub(super) fn writable(resource: &Resource, body: &Value) -> Value {
    let mut body = body.clone();
    if let Some(metadata) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in ["uid", "resourceVersion", "creationTimestamp", "generation"] {
            metadata.remove(field);
        }
    }
    if resource.status_subresource
        && let Some(body) = body.as_object_mut()
    {
        body.remove("status");
    }
    body
}

/// Sets the object's status, or removes it when `status` is `None` or null.
pub(super) fn set_status(object: &mut Value, status: Option<Value>) {
    if let Some(object) = object.as_object_mut() {
        match status {
            Some(status) if !status.is_null() => {
                object.insert("status".to_owned(), status);
            }
            _ => {
                object.remove("status");
            }
        }
    }
}

/// Fills in what the server sets on a new object.
pub(super) fn stamp_new(resource: &Resource, (namespace, name): &Key, object: &mut Value) {
    if resource.status_subresource
        && let Some(object) = object.as_object_mut()
    {
        // A new object's status is the server's to set, not the creator's.
        object.remove("status");
    }
    object["apiVersion"] = Value::String(resource.api_version());
    object["kind"] = Value::String(resource.kind.to_owned());
    let now = Timestamp::now();
    let metadata = &mut object["metadata"];
    metadata["name"] = Value::String(name.clone());
    metadata["namespace"] = Value::String(namespace.clone());
    metadata["uid"] = Value::String(uuid::Uuid::new_v4().to_string());
    metadata["creationTimestamp"] = Value::String(
        Timestamp::from_second(now.as_second())
            .unwrap_or(now)
            .to_string(),
    );
    metadata["generation"] = json!(1);
}
