//! Values as kubectl, a Go program, writes them: `-o jsonpath` prints text as it is and
//! objects and arrays as Go's `encoding/json` writes them; `-o custom-columns` prints values
//! as Go's `fmt.Sprint` does (`map[a:1 b:2]`, `[x y]`, `<nil>`).

use std::fmt::Write as _;

use serde_json::{Number, Value};

/// Adds one result as `-o jsonpath` prints it: a string as it is, `null`, a number or a
/// boolean as JSON writes it, an object or array as compact JSON.
pub(super) fn write_plain(out: &mut String, value: &Value) {
    match value {
        Value::String(text) => out.push_str(text),
        Value::Number(number) => write_number(out, number, Style::Print),
        Value::Null | Value::Bool(_) | Value::Array(_) | Value::Object(_) => write_json(out, value),
    }
}

/// One result as a custom column shows it: Go's `fmt.Sprint`, with the characters that could
/// steer a terminal (ESC, carriage return) made visible as kubectl makes them.
pub(super) fn cell(value: &Value) -> String {
    let mut out = String::new();
    write_go(&mut out, value);
    out.replace('\x1b', "^[").replace('\r', "\\r")
}

/// How a float is written.
#[derive(Clone, Copy)]
enum Style {
    /// As Go's `fmt` writes it: `%v`, an exponent below 1e-4 and from 1e6 (`1e+06`).
    Print,
    /// As Go's `encoding/json` writes it: an exponent below 1e-6 and from 1e21 (`1e-7`).
    Json,
}

/// Adds `value` as Go's `json.Marshal` writes it: no spaces, members sorted by name, and
/// `<`, `>`, `&` escaped.
fn write_json(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(number) => write_number(out, number, Style::Json),
        Value::String(text) => write_json_string(out, text),
        Value::Array(items) => {
            out.push('[');
            for (at, item) in items.iter().enumerate() {
                if at > 0 {
                    out.push(',');
                }
                write_json(out, item);
            }
            out.push(']');
        }
        Value::Object(members) => {
            let mut members: Vec<_> = members.iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (at, (name, member)) in members.into_iter().enumerate() {
                if at > 0 {
                    out.push(',');
                }
                write_json_string(out, name);
                out.push(':');
                write_json(out, member);
            }
            out.push('}');
        }
    }
}

/// Adds `text` as a JSON string, escaped as Go escapes it.
fn write_json_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' | '\0'..='\u{1f}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Adds `value` as Go's `fmt.Sprint` writes what `encoding/json` decodes it to.
fn write_go(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(number) => write_number(out, number, Style::Print),
        Value::String(text) => out.push_str(text),
        Value::Array(items) => {
            out.push('[');
            for (at, item) in items.iter().enumerate() {
                if at > 0 {
                    out.push(' ');
                }
                write_go(out, item);
            }
            out.push(']');
        }
        Value::Object(members) => {
            let mut members: Vec<_> = members.iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push_str("map[");
            for (at, (name, member)) in members.into_iter().enumerate() {
                if at > 0 {
                    out.push(' ');
                }
                out.push_str(name);
                out.push(':');
                write_go(out, member);
            }
            out.push(']');
        }
    }
}

/// Adds `number`: an integer as it is, a float as Go writes a `float64` in `style`.
fn write_number(out: &mut String, number: &Number, style: Style) {
    let float = match number.as_f64() {
        Some(float) if number.is_f64() => float,
        _ => {
            let _ = write!(out, "{number}");
            return;
        }
    };
    // The shortest digits that read back as the same float, and the power of ten of the
    // first: "1.5e-7".
    let scientific = format!("{float:e}");
    let (digits, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let with_exponent = match style {
        Style::Print => !(-4..6).contains(&exponent),
        Style::Json => float != 0.0 && !(1e-6..1e21).contains(&float.abs()),
    };
    if !with_exponent {
        let _ = write!(out, "{float}");
        return;
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    let magnitude = exponent.unsigned_abs();
    let _ = match style {
        Style::Print => write!(out, "{digits}e{sign}{magnitude:02}"),
        Style::Json => write!(out, "{digits}e{sign}{magnitude}"),
    };
}
