//! Where each field of a YAML document is: a path → `line:column` index built from the parser's
//! event stream, so that errors found after deserialization still point into the file.

use std::collections::HashMap;

use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle, ScanError};

use crate::field_path::{FieldPath, Segment};

/// A 1-based line and column in a file ([`Position::WHOLE_FILE`]: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub column: usize,
}

impl Position {
    /// The start of a file.
    pub const START: Position = Position { line: 1, column: 1 };
    /// The file as a whole, for what is not at a place in it (it cannot be read, it is too
    /// large): shown without a line and column.
    pub const WHOLE_FILE: Position = Position { line: 0, column: 0 };
}

/// Where one node is: its key (when in a mapping) and its value.
#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    key: Option<Position>,
    value: Option<Position>,
}

/// The positions of every key and value of one document.
#[derive(Debug, Clone, Default)]
pub struct LocationIndex {
    /// Where the document's root node starts.
    start: Option<Position>,
    entries: HashMap<String, Entry>,
    /// Lowercased path → path, to find `worker` when asked for `Worker`.
    folded: HashMap<String, String>,
}

impl LocationIndex {
    /// The position of the value at `path` (a scalar value itself; for a mapping or list, its
    /// key), or of its nearest ancestor in the file (a missing field points at the object that
    /// lacks it).
    #[must_use]
    pub fn locate(&self, path: &FieldPath) -> Position {
        self.find(path, |entry| match entry.value {
            Some(value) if entry.key.is_none_or(|key| value.line == key.line) => Some(value),
            _ => entry.key.or(entry.value),
        })
    }

    /// The position of the key at `path` (for a misspelt field, the key is what is wrong).
    #[must_use]
    pub fn locate_key(&self, path: &FieldPath) -> Position {
        self.find(path, |entry| entry.key.or(entry.value))
    }

    fn find(&self, path: &FieldPath, pick: impl Fn(&Entry) -> Option<Position>) -> Position {
        let mut current = Some(path.clone());
        while let Some(path) = current {
            let key = index_key(path.segments().iter().map(segment_name));
            let entry = self.entries.get(&key).or_else(|| {
                let exact = self.folded.get(&key.to_ascii_lowercase())?;
                self.entries.get(exact)
            });
            if let Some(position) = entry.and_then(&pick) {
                return position;
            }
            current = path.parent();
        }
        self.start.unwrap_or(Position::START)
    }

    /// Records where the key or the value at `path` is (the first one seen wins).
    fn record(&mut self, path: &[String], position: Position, is_key: bool) {
        if path.is_empty() {
            self.start.get_or_insert(position);
            return;
        }
        let key = index_key(path.iter().map(String::as_str));
        self.folded
            .entry(key.to_ascii_lowercase())
            .or_insert_with(|| key.clone());
        let entry = self.entries.entry(key).or_default();
        let slot = if is_key {
            &mut entry.key
        } else {
            &mut entry.value
        };
        slot.get_or_insert(position);
    }
}

fn segment_name(segment: &Segment) -> std::borrow::Cow<'_, str> {
    match segment {
        Segment::Field(name) | Segment::Key(name) => name.into(),
        Segment::Index(index) => index.to_string().into(),
    }
}

fn index_key<'a>(names: impl Iterator<Item = impl AsRef<str> + 'a>) -> String {
    let mut key = String::new();
    for name in names {
        key.push('\u{1f}');
        key.push_str(name.as_ref());
    }
    key
}

/// One open collection while walking the event stream.
enum Frame {
    /// A mapping; `key` is the key whose value comes next, `None` while a key is expected.
    Mapping { key: Option<String> },
    /// A sequence and the index of its next item.
    Sequence { next: usize },
    /// A mapping or sequence used as a mapping key: nothing under it is indexed.
    ComplexKey,
}

/// A YAML document's index, and whether the document is empty (serde skips those).
#[derive(Debug)]
pub struct IndexedDocument {
    /// The index.
    pub index: LocationIndex,
    /// Whether the document holds nothing (no node, or a lone null scalar).
    pub is_empty: bool,
}

/// Walks every document of `text` and indexes the position of each node by its path.
///
/// Fails with the parser's error (and its position) when the text is not valid YAML.
pub fn index_documents(text: &str) -> Result<Vec<IndexedDocument>, (Position, String)> {
    let mut parser = Parser::new_from_str(text);
    let mut documents = Vec::new();
    let mut walk = Walk::default();

    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|error| scan_error(&error))?;
        let position = Position {
            line: span.start.line(),
            column: span.start.col() + 1,
        };
        match event {
            Event::DocumentStart(..) => walk = Walk::default(),
            Event::DocumentEnd => {
                let walk = std::mem::take(&mut walk);
                documents.push(IndexedDocument {
                    index: walk.index,
                    is_empty: !walk.root_seen || walk.root_is_null,
                });
            }
            Event::Scalar(value, style, ..) => {
                if walk.frames.is_empty() {
                    walk.root_seen = true;
                    walk.root_is_null = style == ScalarStyle::Plain
                        && matches!(value.as_ref(), "" | "~" | "null" | "Null" | "NULL");
                }
                walk.scalar(value.into_owned(), position);
            }
            Event::Alias(_) => {
                walk.root_seen = true;
                walk.scalar(String::new(), position);
            }
            Event::MappingStart(..) => walk.start(Frame::Mapping { key: None }, position),
            Event::SequenceStart(..) => walk.start(Frame::Sequence { next: 0 }, position),
            Event::MappingEnd | Event::SequenceEnd => walk.end(),
            _ => {}
        }
    }
    Ok(documents)
}

/// The state of a walk through one document.
#[derive(Default)]
struct Walk {
    index: LocationIndex,
    path: Vec<String>,
    frames: Vec<Frame>,
    root_seen: bool,
    root_is_null: bool,
}

impl Walk {
    /// A scalar: a mapping key (indexed at the key, where users look), or a value.
    fn scalar(&mut self, value: String, position: Position) {
        match self.frames.last_mut() {
            Some(Frame::ComplexKey) => {}
            Some(Frame::Mapping { key: key @ None }) => {
                self.path.push(value);
                self.index.record(&self.path, position, true);
                *key = self.path.pop();
            }
            _ => {
                self.enter_value();
                self.index.record(&self.path, position, false);
                self.leave_value();
            }
        }
    }

    fn start(&mut self, frame: Frame, position: Position) {
        self.root_seen = true;
        if let Some(Frame::ComplexKey | Frame::Mapping { key: None }) = self.frames.last() {
            self.frames.push(Frame::ComplexKey);
        } else {
            self.enter_value();
            self.index.record(&self.path, position, false);
            self.frames.push(frame);
        }
    }

    fn end(&mut self) {
        if let Some(Frame::ComplexKey) = self.frames.pop() {
            if let Some(Frame::Mapping { key: key @ None }) = self.frames.last_mut() {
                *key = Some("\u{0}complex-key".to_owned());
            }
            return;
        }
        self.leave_value();
    }

    /// Pushes the path segment of the value about to start.
    fn enter_value(&mut self) {
        match self.frames.last_mut() {
            Some(Frame::Mapping { key }) => self.path.push(key.take().unwrap_or_default()),
            Some(Frame::Sequence { next }) => {
                self.path.push(next.to_string());
                *next += 1;
            }
            Some(Frame::ComplexKey) | None => {}
        }
    }

    /// Pops the path segment of the value that just ended.
    fn leave_value(&mut self) {
        if !self.frames.is_empty() {
            self.path.pop();
        }
    }
}

fn scan_error(error: &ScanError) -> (Position, String) {
    let marker = error.marker();
    (
        Position {
            line: marker.line().max(1),
            column: marker.col() + 1,
        },
        error.info(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "\
kind: TFJob
spec:
  tfReplicaSpecs:
    worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: tensorflow
              args: [a, b]
";

    fn at(line: usize, column: usize) -> Position {
        Position { line, column }
    }

    fn index() -> LocationIndex {
        let mut documents = index_documents(DOC).expect("valid YAML");
        assert_eq!(documents.len(), 1);
        documents.remove(0).index
    }

    #[test]
    fn scalar_values_point_at_the_value_and_keys_at_the_key() {
        let path = FieldPath::fields("spec.tfReplicaSpecs")
            .key("worker")
            .field("replicas");
        assert_eq!(index().locate(&path), at(5, 17));
        assert_eq!(index().locate_key(&path), at(5, 7));
    }

    #[test]
    fn block_collections_point_at_their_key() {
        let path = FieldPath::fields("spec.tfReplicaSpecs")
            .key("worker")
            .field("template");
        assert_eq!(index().locate(&path), at(6, 7));
    }

    #[test]
    fn list_items_and_flow_values_are_indexed() {
        let container =
            FieldPath::fields("spec.tfReplicaSpecs.worker.template.spec.containers").index(0);
        assert_eq!(index().locate(&container.field("name")), at(9, 21));
        assert_eq!(
            index().locate(&container.field("args").index(1)),
            at(10, 25)
        );
    }

    #[test]
    fn replica_type_keys_are_found_whatever_their_case() {
        let path = FieldPath::fields("spec.tfReplicaSpecs")
            .key("Worker")
            .field("replicas");
        assert_eq!(index().locate(&path), at(5, 17));
    }

    #[test]
    fn a_missing_field_points_at_its_nearest_ancestor() {
        let path = FieldPath::fields("spec.tfReplicaSpecs")
            .key("Worker")
            .field("restartPolicy");
        assert_eq!(index().locate(&path), at(4, 5));
        assert_eq!(
            index().locate(&FieldPath::fields("status.conditions")),
            at(1, 1)
        );
    }

    #[test]
    fn empty_documents_are_marked_so_they_can_be_skipped() {
        let documents = index_documents("---\n---\na: 1\n---\n~\n").expect("valid YAML");
        let empty: Vec<bool> = documents.iter().map(|d| d.is_empty).collect();
        assert_eq!(empty, [true, false, true]);
    }
}
