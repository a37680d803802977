//! kubectl's output templates: `-o jsonpath=TEMPLATE`, `-o custom-columns=SPEC` and
//! `--sort-by=PATH`, read and applied as kubectl (client-go's `util/jsonpath`, kubectl's
//! `customcolumn.go` and `sorter.go`) reads and applies them, to objects as JSON values.
//!
//! # The template language
//!
//! A template is text with actions in braces: `name: {.metadata.name}{"\n"}`. Text outside
//! braces is printed as it is (a `\n` there stays a backslash and an `n`). Inside an action:
//!
//! - `.name` is a member of an object; `\` makes the next character part of the name, so
//!   `.metadata.labels.training\.kubeflow\.org/job-name` is one label. `.*` is every member
//!   or element.
//! - `[0]`, `[-1]`, `[1:3]`, `[-2:]`, `[::2]`, `[*]` select elements of an array. An index
//!   outside the array is an error (`[-1:]` of an empty array too); `[i:i]` is nothing.
//! - `['name']` is the path `.name`: `['metadata.name']` is `.metadata.name`, two steps, not a
//!   member whose name has a dot (write `['a\.b']` for that).
//! - `[a,b]` is the union of the branches, all results of `a` and then all of `b`.
//! - `..` is the current value and every object and array inside it, depth first, the empty
//!   ones left out; `..name` is then every member `name` at any depth.
//! - `[?(@.status.phase=="Running")]` keeps the elements of an array for which the left side
//!   yields one value that compares so with the one value of the right side; with `==`, `!=`,
//!   `<`, `>`, `<=`, `>=`; `[?(@.x)]` keeps those where `.x` yields anything (`null` too).
//!   Either side is a path from the element (`@.x` or `.x`), `"text"` or `'text'`, a number,
//!   `true` or `false`. Strings compare with strings, numbers with numbers, booleans only for
//!   (in)equality; anything else is an error.
//! - `"text"` and `'text'` are text, with Go's escapes (`"\n"`, `"\t"`, `"\u00e9"`); a number,
//!   `true` or `false` is that constant.
//! - `@` and `$` both stand for the current value and may be left out: a path starts there.
//! - `{range PATH}...{end}` prints what is between once for each result of `PATH`, with that
//!   result as the current value; ranges nest.
//!
//! An action prints its results separated by one space: strings as they are, numbers and
//! booleans as JSON, `null` as `null`, objects and arrays as compact JSON with members
//! sorted by name and `<`, `>`, `&` escaped (as Go's `encoding/json` writes them). A member
//! that is not there yields nothing, as with kubectl's default
//! `--allow-missing-template-keys=true`.
//!
//! # Differences from RFC 9535
//!
//! This is kubectl's dialect, not RFC 9535: templates mix text and actions and have `range`;
//! there is no separate root (`$` is the current value, inside a range the element); an index
//! outside an array is an error rather than nothing; `[*]` selects elements of arrays only
//! (`.*` also members of objects); `['a.b']` is a path; filters hold one comparison, with no
//! `&&`, `||`, `!` or functions, and comparing values of different types is an error rather
//! than false; slices take no negative step; `..` yields only objects and arrays.
//!
//! # Differences from kubectl
//!
//! What kubectl finds only while printing, this module finds when reading the template: an
//! unknown word (`{hello}`), an unknown filter operator, a step of zero, an `{end}` without a
//! `{range}`; and a `{range}` without an `{end}` is an error here. Numbers compare by value
//! whether written as integers or not (kubectl refuses to compare an integer with a float).
//! `.*` and `..` go through members in the order of the document (kubectl's order is random)
//! and do not go into strings (kubectl's go into their bytes). A `\` in a member's name keeps
//! the character after it, even a second `\` (kubectl drops every `\`). Go escapes that
//! make a byte above 0x7f (`"\xff"`) are refused. `--sort-by` keeps the order of equal
//! values, orders strings as quantities only when all of them are (kubectl decides pair by
//! pair), and reads its path even when there is nothing to sort. Not done:
//! `--allow-missing-template-keys=false`, `-o jsonpath-as-json`, `-o custom-columns-file`.

mod columns;
mod eval;
mod parse;
mod sort;
mod text;

#[cfg(test)]
mod tests;

use serde_json::Value;

pub use columns::CustomColumns;
pub use sort::sort_order;

/// A parsed `-o jsonpath` template.
#[derive(Debug, Clone)]
pub struct Template {
    /// The template as written, for errors.
    text: String,
    /// What it says.
    segments: Vec<parse::Segment>,
}

/// A template, column spec or sort path that cannot be read or applied, in kubectl's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// The template cannot be read.
    #[error("error parsing jsonpath {template}, {problem}")]
    Parse {
        /// The template as written.
        template: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The template cannot be applied to an object (an index outside an array, a filter on
    /// something else than an array, a comparison of values of different types).
    #[error("error executing jsonpath {template:?}: {problem}")]
    Execute {
        /// The template as written.
        template: String,
        /// What went wrong.
        problem: String,
    },
    /// `-o custom-columns=` with nothing after the `=`.
    #[error("custom-columns format specified but no custom columns given")]
    NoColumns,
    /// A column that is not `HEADER:EXPR`.
    #[error("unexpected custom-columns spec: {0}, expected <header>:<json-path-expr>")]
    ColumnSpec(String),
    /// A column's or `--sort-by`'s path that is not one path (`{.a}{.b}`, unbalanced braces).
    #[error(
        "unexpected path string {0:?}, expected a 'name1.name2' or '.name1.name2' or \
         '{{name1.name2}}' or '{{.name1.name2}}'"
    )]
    Path(String),
    /// `--sort-by` a path that none of the objects has.
    #[error("couldn't find any field with path {0:?} in the list of objects")]
    SortFieldNotFound(String),
    /// `--sort-by` a path whose values cannot be put in order: booleans, objects, arrays, or
    /// strings and numbers mixed.
    #[error("field {field} is an unsortable type: {found}")]
    Unsortable {
        /// The path, as kubectl completes it (`{.spec.suspend}`).
        field: String,
        /// What was found.
        found: &'static str,
    },
}

impl Template {
    /// Reads a template: `{.items[*].metadata.name}`,
    /// `{range .items[*]}{.metadata.name}{"\n"}{end}`, `name: {.metadata.name}`.
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let segments = parse::template(text).map_err(|problem| TemplateError::Parse {
            template: text.to_owned(),
            problem,
        })?;
        Ok(Template {
            text: text.to_owned(),
            segments,
        })
    }

    /// The template applied to `value`, as `kubectl get -o jsonpath=...` prints it (with no
    /// newline added).
    pub fn render(&self, value: &Value) -> Result<String, TemplateError> {
        let mut out = String::new();
        for results in self.results(value)? {
            for (at, result) in results.into_iter().enumerate() {
                if at > 0 {
                    out.push(' ');
                }
                text::write_plain(&mut out, result);
            }
        }
        Ok(out)
    }

    /// The results of each action on `value`, one list per action (per element, in a range),
    /// text outside braces as a string.
    fn results<'a>(&'a self, value: &'a Value) -> Result<Vec<Vec<&'a Value>>, TemplateError> {
        let mut results = Vec::new();
        eval::results(&self.segments, value, &mut results).map_err(|problem| {
            TemplateError::Execute {
                template: self.text.clone(),
                problem,
            }
        })?;
        Ok(results)
    }
}

/// A column's or `--sort-by`'s path completed as kubectl completes it: `metadata.name`,
/// `.metadata.name`, `{metadata.name}` and `{.metadata.name}` are all `{.metadata.name}`; an
/// empty path stays empty.
fn relaxed_path(path: &str) -> Result<String, TemplateError> {
    if path.is_empty() {
        return Ok(String::new());
    }
    let inner = path
        .strip_prefix('{')
        .and_then(|inner| inner.strip_suffix('}'))
        .unwrap_or(path);
    let inner = inner
        .strip_prefix('.')
        .filter(|rest| !rest.is_empty())
        .unwrap_or(inner);
    if inner.is_empty() || inner.contains(['{', '}']) {
        return Err(TemplateError::Path(path.to_owned()));
    }
    Ok(format!("{{.{inner}}}"))
}
