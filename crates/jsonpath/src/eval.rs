//! Applying a parsed template to a JSON value, as client-go's `jsonpath` does with
//! missing keys allowed: a member that is not there yields nothing.

use std::cmp::Ordering;

use serde_json::{Number, Value};

use super::parse::{Filter, Op, Segment, Slice, SliceEnd, Step, Test};

/// Adds to `out` the results of each action of `segments` on `value`, one list per action,
/// and those of a range's body once per element (client-go's `FindResults`).
pub(super) fn results<'a>(
    segments: &'a [Segment],
    value: &'a Value,
    out: &mut Vec<Vec<&'a Value>>,
) -> Result<(), String> {
    for segment in segments {
        match segment {
            Segment::Text(text) => out.push(vec![text]),
            Segment::Action(path) => out.push(apply(path, vec![value])?),
            Segment::Range { path, body } => {
                for item in apply(path, vec![value])? {
                    results(body, item, out)?;
                }
            }
        }
    }
    Ok(())
}

/// The values `path` leads to from `values`.
fn apply<'a>(path: &'a [Step], mut values: Vec<&'a Value>) -> Result<Vec<&'a Value>, String> {
    for step in path {
        values = take(step, values)?;
    }
    Ok(values)
}

/// What one step makes of `input`.
fn take<'a>(step: &'a Step, input: Vec<&'a Value>) -> Result<Vec<&'a Value>, String> {
    let mut out = Vec::new();
    match step {
        Step::Field(name) => out.extend(input.into_iter().filter_map(|value| match value {
            Value::Object(members) => members.get(name),
            _ => None,
        })),
        Step::Wildcard => {
            for value in input {
                match value {
                    Value::Object(members) => out.extend(members.values()),
                    Value::Array(items) => out.extend(items),
                    _ => {}
                }
            }
        }
        Step::Descendants => {
            for value in input {
                descend(value, &mut out);
            }
        }
        Step::Slice(slice) => {
            for value in input {
                match value {
                    Value::Null => {}
                    Value::Array(items) => select(*slice, items, &mut out)?,
                    other => return Err(format!("{} is not array or slice", kind(other))),
                }
            }
        }
        Step::Filter(filter) => {
            for value in input {
                let Value::Array(items) = value else {
                    return Err(format!(
                        "{} is not array or slice and cannot be filtered",
                        kind(value)
                    ));
                };
                for item in items {
                    if passes(filter, item)? {
                        out.push(item);
                    }
                }
            }
        }
        Step::Union(branches) => {
            for branch in branches {
                out.extend(apply(branch, input.clone())?);
            }
        }
        Step::Text(text) => out.push(text),
        Step::Constant(constant) => out.extend(input.iter().map(|_| constant)),
    }
    Ok(out)
}

/// Adds `value` and every object or array inside it to `out`, depth first, leaving out the
/// empty ones and everything else.
fn descend<'a>(value: &'a Value, out: &mut Vec<&'a Value>) {
    match value {
        Value::Object(members) if !members.is_empty() => {
            out.push(value);
            for member in members.values() {
                descend(member, out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            out.push(value);
            for item in items {
                descend(item, out);
            }
        }
        _ => {}
    }
}

/// Adds the elements of `items` that `slice` selects to `out`; an index outside the array
/// is an error, as in kubectl.
fn select<'a>(slice: Slice, items: &'a [Value], out: &mut Vec<&'a Value>) -> Result<(), String> {
    let length = i64::try_from(items.len()).unwrap_or(i64::MAX);
    let from_end = |index: i64| {
        if index < 0 {
            index.saturating_add(length)
        } else {
            index
        }
    };
    let start = from_end(slice.start);
    let end = match slice.end {
        SliceEnd::Next => start.saturating_add(1),
        SliceEnd::Open => length,
        SliceEnd::At(end) => from_end(end),
    };
    if start == end {
        return Ok(());
    }
    if start < 0 || start >= length {
        return Err(format!(
            "array index out of bounds: index {start}, length {length}"
        ));
    }
    if end < 0 || end > length {
        let index = end.saturating_sub(1);
        return Err(format!(
            "array index out of bounds: index {index}, length {length}"
        ));
    }
    if start > end {
        return Err(format!(
            "starting index {start} is greater than ending index {end}"
        ));
    }
    let (first, last) = (start as usize, end as usize);
    out.extend(items[first..last].iter().step_by(slice.step.get()));
    Ok(())
}

/// Whether `item` passes `filter`.
fn passes(filter: &Filter, item: &Value) -> Result<bool, String> {
    let left = apply(&filter.left, vec![item]);
    let (op, right) = match &filter.test {
        Test::Exists => return Ok(left.is_ok_and(|left| !left.is_empty())),
        Test::Compare(op, right) => (*op, right),
    };
    let Some(left) = single(&left?)? else {
        return Ok(false);
    };
    let Some(right) = single(&apply(right, vec![item])?)? else {
        return Ok(false);
    };
    let ordering = match (left, right) {
        (Value::String(left), Value::String(right)) => left.cmp(right),
        (Value::Number(left), Value::Number(right)) => compare_numbers(left, right),
        (Value::Bool(left), Value::Bool(right)) => {
            return match op {
                Op::Eq => Ok(left == right),
                Op::Ne => Ok(left != right),
                _ => Err("invalid type for comparison".to_owned()),
            };
        }
        (Value::Null | Value::Array(_) | Value::Object(_), _)
        | (_, Value::Null | Value::Array(_) | Value::Object(_)) => {
            return Err("invalid type for comparison".to_owned());
        }
        _ => return Err("incompatible types for comparison".to_owned()),
    };
    Ok(match op {
        Op::Eq => ordering == Ordering::Equal,
        Op::Ne => ordering != Ordering::Equal,
        Op::Lt => ordering == Ordering::Less,
        Op::Gt => ordering == Ordering::Greater,
        Op::Le => ordering != Ordering::Greater,
        Op::Ge => ordering != Ordering::Less,
    })
}

/// The one value a side of a comparison yields, if any.
fn single<'a>(values: &[&'a Value]) -> Result<Option<&'a Value>, String> {
    match *values {
        [] => Ok(None),
        [value] => Ok(Some(value)),
        _ => Err("can only compare one element at a time".to_owned()),
    }
}

/// Two numbers in numeric order, integers exactly.
fn compare_numbers(left: &Number, right: &Number) -> Ordering {
    if let (Some(left), Some(right)) = (left.as_i64(), right.as_i64()) {
        return left.cmp(&right);
    }
    if let (Some(left), Some(right)) = (left.as_u64(), right.as_u64()) {
        return left.cmp(&right);
    }
    match (left.as_f64(), right.as_f64()) {
        (Some(left), Some(right)) => left.partial_cmp(&right).unwrap_or(Ordering::Equal),
        _ => Ordering::Equal,
    }
}

/// The JSON type of `value`, for errors.
pub(super) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
