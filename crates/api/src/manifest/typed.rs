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

/// Deserializes `value` as `T`; returns the object and the paths of ignored (unknown) fields.
pub(crate) fn deserialize<T: DeserializeOwned>(
    value: &Value,
) -> Result<(T, Vec<FieldPath>), TypeError> {
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
            let names = track
                .path()
                .iter()
                .filter_map(|segment| match segment {
                    serde_path_to_error::Segment::Seq { index } => Some(Name::Index(*index)),
                    serde_path_to_error::Segment::Map { key } => Some(Name::Key(key.clone())),
                    serde_path_to_error::Segment::Enum { .. }
                    | serde_path_to_error::Segment::Unknown => None,
                })
                .collect();
            Err(TypeError {
                path: to_field_path(names),
                message: error.to_string(),
            })
        }
    }
}

/// A path step before we know whether a key is a struct field or a map key.
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
