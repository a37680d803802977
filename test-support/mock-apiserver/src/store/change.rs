//! A change of one object, and how the watches that select it see it.

use std::sync::Arc;

use serde_json::Value;

use super::object::{namespace_of, version_of};
use crate::resources::Resource;
use crate::selector::{FieldSelector, LabelSelector};
use crate::target::Target;

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeType {
    /// Created (or, at the start of a watch, existing).
    Added,
    /// Changed.
    Modified,
    /// Deleted.
    Deleted,
}

impl ChangeType {
    /// The watch event type (`ADDED`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeType::Added => "ADDED",
            ChangeType::Modified => "MODIFIED",
            ChangeType::Deleted => "DELETED",
        }
    }
}

/// One change of one object, as watches deliver it.
#[derive(Debug)]
pub struct Change {
    /// The object's resource.
    pub resource: &'static Resource,
    /// What happened.
    pub type_: ChangeType,
    /// The object after the change (for a deletion: as it was, with the deletion's version).
    pub object: Arc<Value>,
    /// The object before a modification.
    pub previous: Option<Arc<Value>>,
}

impl Change {
    /// How a watch of `target` (its resource and namespace) with these selectors sees it, if
    /// it does: a change that brings an object into the selection is `ADDED` there, one that
    /// takes it out is `DELETED`, as the API server's watch cache sends them.
    #[must_use]
    pub fn seen_as(
        &self,
        target: &Target,
        labels: &LabelSelector,
        fields: &FieldSelector,
    ) -> Option<ChangeType> {
        let selected = |object: &Value| {
            target
                .namespace
                .as_deref()
                .is_none_or(|namespace| namespace_of(object) == namespace)
                && labels.matches(object)
                && fields.matches(object)
        };
        if !std::ptr::eq(self.resource, target.resource) {
            return None;
        }
        let (before, now) = match self.type_ {
            ChangeType::Added => (false, selected(&self.object)),
            ChangeType::Modified => (
                self.previous.as_deref().is_some_and(selected),
                selected(&self.object),
            ),
            ChangeType::Deleted => (selected(&self.object), false),
        };
        match (before, now) {
            (true, true) => Some(ChangeType::Modified),
            (false, true) => Some(ChangeType::Added),
            (true, false) => Some(ChangeType::Deleted),
            (false, false) => None,
        }
    }

    /// The version the change made.
    pub(super) fn version(&self) -> u64 {
        version_of(&self.object)
    }
}
