//! [`FieldPath`]: where in a manifest something is, as users and `kubectl` spell it
//! (`spec.tfReplicaSpecs[Worker].template.spec.containers[0].image`).

use std::fmt;

/// One step of a [`FieldPath`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Segment {
    /// A struct field: `.name`.
    Field(String),
    /// A key of a map whose keys are data (replica types, labels): `[Worker]`.
    Key(String),
    /// A list index: `[0]`.
    Index(usize),
}

/// A path to a field of a manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct FieldPath(Vec<Segment>);

impl FieldPath {
    /// The empty path: the document itself.
    #[must_use]
    pub fn root() -> Self {
        FieldPath(Vec::new())
    }

    /// Parses a dotted path such as `spec.runPolicy` (fields only).
    #[must_use]
    pub fn fields(dotted: &str) -> Self {
        FieldPath(
            dotted
                .split('.')
                .map(|f| Segment::Field(f.to_owned()))
                .collect(),
        )
    }

    /// This path followed by a field.
    #[must_use]
    pub fn field(&self, name: &str) -> Self {
        self.with(Segment::Field(name.to_owned()))
    }

    /// This path followed by a map key.
    #[must_use]
    pub fn key(&self, key: &str) -> Self {
        self.with(Segment::Key(key.to_owned()))
    }

    /// This path followed by a list index.
    #[must_use]
    pub fn index(&self, index: usize) -> Self {
        self.with(Segment::Index(index))
    }

    /// The segments, outermost first.
    #[must_use]
    pub fn segments(&self) -> &[Segment] {
        &self.0
    }

    /// The path one step up, or `None` at the root.
    #[must_use]
    pub fn parent(&self) -> Option<FieldPath> {
        let (_, parent) = self.0.split_last()?;
        Some(FieldPath(parent.to_vec()))
    }

    /// Whether this is the root path.
    #[must_use]
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    fn with(&self, segment: Segment) -> Self {
        let mut segments = self.0.clone();
        segments.push(segment);
        FieldPath(segments)
    }
}

impl FromIterator<Segment> for FieldPath {
    fn from_iter<I: IntoIterator<Item = Segment>>(iter: I) -> Self {
        FieldPath(iter.into_iter().collect())
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(document)");
        }
        for (i, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Field(name) if i == 0 => f.write_str(name)?,
                Segment::Field(name) => write!(f, ".{name}")?,
                Segment::Key(key) => write!(f, "[{key}]")?,
                Segment::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_like_kubectl() {
        let path = FieldPath::fields("spec.tfReplicaSpecs")
            .key("Worker")
            .field("template")
            .field("spec")
            .field("containers")
            .index(0)
            .field("image");
        assert_eq!(
            path.to_string(),
            "spec.tfReplicaSpecs[Worker].template.spec.containers[0].image"
        );
        assert_eq!(FieldPath::root().to_string(), "(document)");
    }
}
