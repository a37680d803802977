//! Deserializing a document into a typed object while recording the path of every error and
//! of every field that no type knows (a typo, reported as a warning).

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::field_path::{FieldPath, Segment};
use crate::replica::ReplicaType;

/// A document that does not fit the type: where, and what serde said.
#[derive(Debug)]
pub(crate) struct TypeError {
    pub(crate) path: FieldPath,
    pub(crate) message: String,
}

/// The most type errors reported for one document; past them the document is given up.
const MAX_TYPE_ERRORS: usize = 20;

/// What deserializing a document gave.
pub(crate) struct Typed<T> {
    /// The object, once every field that did not fit was left out; `None` when even that
    /// does not fit (a field it needs is wrong), or past [`MAX_TYPE_ERRORS`].
    pub(crate) object: Option<T>,
    /// The fields that no type knows (ignored).
    pub(crate) unknown: Vec<FieldPath>,
    /// The fields that do not fit their type, in the document's order.
    pub(crate) errors: Vec<TypeError>,
}

/// Deserializes `value` as `T`. A field that does not fit its type is reported and left out,
/// and the rest is read again, so that every such field is reported, not only the first (serde
/// stops at the first).
pub(crate) fn deserialize<T: DeserializeOwned>(value: &Value) -> Typed<T> {
    let mut value = value.clone();
    let mut errors = Vec::new();
    let mut left_out: Vec<Vec<Name>> = Vec::new();
    loop {
        match deserialize_once(&value) {
            Ok((object, unknown)) => {
                return Typed {
                    object: Some(object),
                    unknown,
                    errors,
                };
            }
            Err((names, error)) => {
                // A field missing because an error before made it leave: nothing new.
                let caused = left_out
                    .iter()
                    .any(|gone| names.starts_with(gone) || gone.starts_with(&names));
                if !caused {
                    errors.push(error);
                }
                if caused || errors.len() >= MAX_TYPE_ERRORS || !remove(&mut value, &names) {
                    return Typed {
                        object: None,
                        unknown: Vec::new(),
                        errors,
                    };
                }
                left_out.push(names);
            }
        }
    }
}

/// Removes the node at `names` from `value`; `false` when it is the root or not there. An
/// element of a sequence takes the whole sequence with it (removing one would shift the
/// indices of the errors after it).
fn remove(value: &mut Value, names: &[Name]) -> bool {
    let at_element = names
        .iter()
        .rposition(|name| matches!(name, Name::Index(_)));
    let names = match (names.last(), at_element) {
        (Some(Name::Index(_)), Some(at)) => &names[..at],
        _ => names,
    };
    let Some((last, parents)) = names.split_last() else {
        return false;
    };
    let mut node = value;
    for name in parents {
        node = match (name, node) {
            (Name::Key(key), Value::Object(map)) => match map.get_mut(key) {
                Some(child) => child,
                None => return false,
            },
            (Name::Index(index), Value::Array(items)) => match items.get_mut(*index) {
                Some(child) => child,
                None => return false,
            },
            _ => return false,
        };
    }
    match (last, node) {
        (Name::Key(key), Value::Object(map)) => map.remove(key).is_some(),
        _ => false,
    }
}

/// One attempt: the object and its unknown fields, or where it failed and why.
fn deserialize_once<T: DeserializeOwned>(
    value: &Value,
) -> Result<(T, Vec<FieldPath>), (Vec<Name>, TypeError)> {
    let mut unknown = Vec::new();
    let mut track = serde_path_to_error::Track::new();
    let tracked = serde_path_to_error::Deserializer::new(value, &mut track);
    let result = serde_ignored::deserialize(tracked, |ignored| {
        let mut names = Vec::new();
        ignored_names(&ignored, &mut names);
        unknown.push(to_field_path(names));
    });
    match result {
        Ok(object) => Ok((object, unknown)),
        Err(error) => {
            let names: Vec<Name> = track
                .path()
                .iter()
                .filter_map(|segment| match segment {
                    serde_path_to_error::Segment::Seq { index } => Some(Name::Index(*index)),
                    serde_path_to_error::Segment::Map { key } => Some(Name::Key(key.clone())),
                    serde_path_to_error::Segment::Enum { .. }
                    | serde_path_to_error::Segment::Unknown => None,
                })
                .collect();
            let error = TypeError {
                path: to_field_path(names.clone()),
                message: error.to_string(),
            };
            Err((names, error))
        }
    }
}

/// A path step before we know whether a key is a struct field or a map key.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Name {
    Key(String),
    Index(usize),
}

fn ignored_names(path: &serde_ignored::Path<'_>, names: &mut Vec<Name>) {
    use serde_ignored::Path;
    match path {
        Path::Root => {}
        Path::Seq { parent, index } => {
            ignored_names(parent, names);
            names.push(Name::Index(*index));
        }
        Path::Map { parent, key } => {
            ignored_names(parent, names);
            names.push(Name::Key(key.clone()));
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => {
            ignored_names(parent, names);
        }
    }
}

/// Maps whose keys are data, shown as `[key]` rather than `.key`.
const KEYED_MAPS: [&str; 8] = [
    "labels",
    "annotations",
    "data",
    "stringData",
    "replicaStatuses",
    "nodeSelector",
    "limits",
    "requests",
];

fn to_field_path(names: Vec<Name>) -> FieldPath {
    let mut previous: Option<String> = None;
    names
        .into_iter()
        .map(|name| match name {
            Name::Index(index) => {
                previous = None;
                Segment::Index(index)
            }
            Name::Key(key) => {
                let segment = match previous.as_deref() {
                    Some(parent) if parent.ends_with("ReplicaSpecs") => {
                        Segment::Key(ReplicaType::parse(&key).to_string())
                    }
                    Some(parent) if KEYED_MAPS.contains(&parent) => Segment::Key(key.clone()),
                    _ => Segment::Field(key.clone()),
                };
                previous = Some(key);
                segment
            }
        })
        .collect()
}
