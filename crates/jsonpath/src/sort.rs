//! `--sort-by=.metadata.creationTimestamp`, as kubectl's `sorter.go` orders objects.

use std::cmp::Ordering;

use serde_json::{Number, Value};

use super::{Template, TemplateError, eval, relaxed_path};

/// The order of `items` when sorted by the first value `path` yields for each (`.metadata.name`,
/// `{.spec.tfReplicaSpecs.Worker.replicas}`), as `kubectl get --sort-by` does: objects without
/// the value first, then those where it is `null`, then the rest in order: numbers by value;
/// strings by their bytes (so RFC 3339 times by time), or by quantity when every one is a
/// Kubernetes quantity (`500m`, `2`, `1Gi`). Objects with equal values keep their order.
///
/// It is an error when no object has the value, and when two values cannot be ordered:
/// booleans, objects, arrays, or strings and numbers mixed. The order is given as the items'
/// indexes, so that what goes with each item (a table's row) follows it.
pub fn sort_order(items: &[&Value], path: &str) -> Result<Vec<usize>, TemplateError> {
    let field = relaxed_path(path)?;
    let template = Template::parse(&field)?;
    if items.is_empty() {
        return Ok(Vec::new());
    }
    let values = items
        .iter()
        .map(|item| {
            let results = template.results(item)?;
            Ok(results.into_iter().flatten().next())
        })
        .collect::<Result<Vec<_>, TemplateError>>()?;
    if values.iter().all(Option::is_none) {
        return Err(TemplateError::SortFieldNotFound(field));
    }
    let keys = keys(&values).map_err(|found| TemplateError::Unsortable { field, found })?;
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| keys[a].order(&keys[b]));
    Ok(order)
}

/// What an object is sorted by.
#[derive(Debug)]
enum Key {
    /// No value: first.
    Missing,
    /// `null`: after those without a value.
    Null,
    /// Every value is an integer.
    Integer(i128),
    /// Every value is a number, or every one a quantity.
    Float(f64),
    /// Every value is a string.
    Text(String),
    /// The one value of another type (with one value, nothing is compared).
    Other,
}

impl Key {
    /// The order of two keys made by one call of [`keys`]: all values of one kind.
    fn order(&self, other: &Key) -> Ordering {
        match (self, other) {
            (Key::Missing, Key::Missing) | (Key::Null, Key::Null) => Ordering::Equal,
            (Key::Missing, _) => Ordering::Less,
            (_, Key::Missing) => Ordering::Greater,
            (Key::Null, _) => Ordering::Less,
            (_, Key::Null) => Ordering::Greater,
            (Key::Integer(a), Key::Integer(b)) => a.cmp(b),
            (Key::Float(a), Key::Float(b)) => a.total_cmp(b),
            (Key::Text(a), Key::Text(b)) => a.cmp(b),
            _ => Ordering::Equal,
        }
    }
}

/// The keys of `values`, all of one kind so that they are in a total order; or, when two
/// values cannot be ordered, what was found.
fn keys(values: &[Option<&Value>]) -> Result<Vec<Key>, &'static str> {
    let present: Vec<&Value> = values
        .iter()
        .flatten()
        .copied()
        .filter(|v| !v.is_null())
        .collect();
    let strings = present.iter().all(|value| value.is_string());
    let numbers = present.iter().all(|value| value.is_number());
    if present.len() > 1 && !strings && !numbers {
        let other = present
            .iter()
            .find(|value| !value.is_string() && !value.is_number());
        return Err(other.map_or("strings and numbers mixed", |other| eval::kind(other)));
    }
    let quantities = present
        .iter()
        .all(|value| value.as_str().and_then(quantity).is_some());
    let integers = present
        .iter()
        .all(|value| value.as_number().and_then(integer).is_some());
    Ok(values
        .iter()
        .map(|value| match value {
            None => Key::Missing,
            Some(Value::Null) => Key::Null,
            Some(Value::String(text)) => match quantity(text) {
                Some(amount) if quantities => Key::Float(amount),
                _ => Key::Text(text.clone()),
            },
            Some(Value::Number(number)) => match integer(number) {
                Some(number) if integers => Key::Integer(number),
                // -0.0 + 0.0 is 0.0: zero is one key.
                _ => Key::Float(number.as_f64().unwrap_or(0.0) + 0.0),
            },
            Some(_) => Key::Other,
        })
        .collect())
}

/// `number` when it is an integer.
fn integer(number: &Number) -> Option<i128> {
    number
        .as_i64()
        .map(i128::from)
        .or_else(|| number.as_u64().map(i128::from))
}

/// The amount a Kubernetes quantity (`100m`, `1.5Gi`, `2e3`) stands for, when `text` is one
/// as apimachinery's `ParseQuantity` reads them: a sign, digits with maybe a `.`, and a
/// suffix: none, `n` `u` `m` `k` `M` `G` `T` `P` `E`, `Ki` `Mi` `Gi` `Ti` `Pi` `Ei`, or `e`
/// or `E` and a power of ten. Like it, this takes a lone sign, `.` or suffix as zero.
fn quantity(text: &str) -> Option<f64> {
    if text.is_empty() {
        return None;
    }
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let digits = |text: &str| {
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len())
    };
    let (whole, rest) = rest.split_at(digits(rest));
    let (fraction, suffix) = match rest.strip_prefix('.') {
        Some(rest) => rest.split_at(digits(rest)),
        None => ("", rest),
    };
    let letters = suffix
        .find(|c: char| !"eEinumkKMGTP".contains(c))
        .unwrap_or(suffix.len());
    let power = &suffix[letters..];
    let power = power.strip_prefix(['+', '-']).unwrap_or(power);
    if !power.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // A power of two or of ten.
    let (binary, exponent): (bool, i64) = match suffix {
        "" => (false, 0),
        "n" => (false, -9),
        "u" => (false, -6),
        "m" => (false, -3),
        "k" => (false, 3),
        "M" => (false, 6),
        "G" => (false, 9),
        "T" => (false, 12),
        "P" => (false, 15),
        "E" => (false, 18),
        "Ki" => (true, 10),
        "Mi" => (true, 20),
        "Gi" => (true, 30),
        "Ti" => (true, 40),
        "Pi" => (true, 50),
        "Ei" => (true, 60),
        _ => (false, suffix.strip_prefix(['e', 'E'])?.parse().ok()?),
    };
    let whole = if whole.is_empty() { "0" } else { whole };
    let amount: f64 = if binary {
        let mantissa: f64 = format!("{whole}.{fraction}0").parse().ok()?;
        mantissa * 2_f64.powi(i32::try_from(exponent).ok()?)
    } else {
        // Parsed whole, so that the power of ten is rounded once.
        format!("{whole}.{fraction}0e{exponent}").parse().ok()?
    };
    let amount = if negative { -amount } else { amount };
    // -0 + 0 is 0: zero is one amount.
    Some(amount + 0.0)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{quantity, sort_order};
    use crate::TemplateError;
    use crate::tests::items;

    /// `items` put in their [`sort_order`].
    fn sort_by(items: &mut [Value], path: &str) -> Result<(), TemplateError> {
        let order = sort_order(&items.iter().collect::<Vec<_>>(), path)?;
        let mut unsorted: Vec<Value> = items.iter_mut().map(std::mem::take).collect();
        for (slot, index) in items.iter_mut().zip(order) {
            *slot = std::mem::take(&mut unsorted[index]);
        }
        Ok(())
    }

    /// The names of `items`, in order.
    fn names(items: &[Value]) -> Vec<&str> {
        items
            .iter()
            .map(|item| item["metadata"]["name"].as_str().unwrap_or("?"))
            .collect()
    }

    /// Objects named `a`, `b`, … with `spec.x` set to each of `values` (left out where `None`).
    fn with_x(values: &[Option<Value>]) -> Vec<Value> {
        values
            .iter()
            .zip('a'..)
            .map(|(value, name)| {
                let mut object = json!({"metadata": {"name": name.to_string()}, "spec": {}});
                if let Some(value) = value {
                    object["spec"]["x"] = value.clone();
                }
                object
            })
            .collect()
    }

    /// The names of [`with_x`]'s objects sorted by `spec.x`.
    fn sorted_by_x(values: &[Option<Value>]) -> String {
        let mut objects = with_x(values);
        sort_by(&mut objects, ".spec.x").unwrap_or_else(|e| panic!("{values:?}: {e}"));
        names(&objects).concat()
    }

    #[test]
    fn sort_by_timestamp_name_and_number() {
        let mut jobs = items();
        sort_by(&mut jobs, ".metadata.creationTimestamp").expect("sorted");
        assert_eq!(names(&jobs), ["resnet", "mnist"]);
        for path in ["{.metadata.name}", "metadata.name", "{metadata.name}"] {
            sort_by(&mut jobs, path).expect("sorted");
            assert_eq!(names(&jobs), ["mnist", "resnet"], "{path}");
        }
        sort_by(&mut jobs, "{.spec.tfReplicaSpecs.Worker.replicas}").expect("sorted");
        assert_eq!(names(&jobs), ["mnist", "resnet"]);

        let numbers = |values: &[Value]| values.iter().cloned().map(Some).collect::<Vec<_>>();
        assert_eq!(
            sorted_by_x(&numbers(&[json!(10), json!(9), json!(2)])),
            "cba"
        );
        assert_eq!(
            sorted_by_x(&numbers(&[json!(1.5), json!(1), json!(-2)])),
            "cba"
        );
        assert_eq!(
            sorted_by_x(&numbers(&[json!(0.0), json!(-0.0), json!(-1)])),
            "cab"
        );
    }

    #[test]
    fn sort_by_puts_missing_then_null_first_and_keeps_ties_in_order() {
        assert_eq!(
            sorted_by_x(&[
                Some(json!(3)),
                None,
                Some(Value::Null),
                Some(json!(1)),
                None
            ]),
            "becda"
        );
        let same = Some(json!("same"));
        assert_eq!(sorted_by_x(&[same.clone(), same.clone(), same]), "abc");
        // Several values: the first one counts.
        let mut objects = with_x(&[
            Some(json!(["Running"])),
            Some(json!(["Created", "Running"])),
        ]);
        sort_by(&mut objects, ".spec.x[*]").expect("sorted");
        assert_eq!(names(&objects), ["b", "a"]);
    }

    #[test]
    fn sort_by_quantities_when_all_are_quantities() {
        let strings = |values: &[&str]| values.iter().map(|v| Some(json!(v))).collect::<Vec<_>>();
        assert_eq!(
            sorted_by_x(&strings(&["1Gi", "512Mi", "100M", "2"])),
            "dcba"
        );
        assert_eq!(
            sorted_by_x(&strings(&["500m", "2", "1.5", "0.1", "2e-3"])),
            "edacb"
        );
        assert_eq!(sorted_by_x(&strings(&["10", "9", "abc"])), "abc");
        assert_eq!(
            sorted_by_x(&strings(&["2025-03-02T10:00:00Z", "2025-03-01T09:30:00Z"])),
            "ba"
        );
    }

    #[test]
    fn sort_by_errors() {
        let mut jobs = items();
        let error =
            |objects: &mut [Value], path: &str| sort_by(objects, path).expect_err(path).to_string();
        assert_eq!(
            error(&mut jobs, ".spec.nope"),
            "couldn't find any field with path \"{.spec.nope}\" in the list of objects"
        );
        assert_eq!(
            error(
                &mut with_x(&[Some(json!(true)), Some(json!(false))]),
                ".spec.x"
            ),
            "field {.spec.x} is an unsortable type: boolean"
        );
        assert_eq!(
            error(&mut with_x(&[Some(json!("1")), Some(json!(1))]), ".spec.x"),
            "field {.spec.x} is an unsortable type: strings and numbers mixed"
        );
        assert_eq!(
            error(&mut jobs, "{.a}{.b}"),
            "unexpected path string \"{.a}{.b}\", expected a 'name1.name2' or '.name1.name2' or \
             '{name1.name2}' or '{.name1.name2}'"
        );
        assert_eq!(
            error(&mut [], ".a["),
            "error parsing jsonpath {.a[}, unterminated array"
        );
        assert_eq!(names(&jobs), ["mnist", "resnet"], "left as they were");
        // One value of a kind that cannot be ordered is compared with nothing.
        assert_eq!(sorted_by_x(&[None, Some(json!({"y": 1}))]), "ab");
        sort_by(&mut [], ".anything").expect("nothing to sort");
    }

    #[test]
    fn quantities_are_read_as_apimachinery_reads_them() {
        for (text, amount) in [
            ("0", Some(0.0)),
            ("100m", Some(0.1)),
            ("1.5Gi", Some(1.5 * 1024.0 * 1024.0 * 1024.0)),
            ("2e3", Some(2000.0)),
            ("2E3", Some(2000.0)),
            ("1E", Some(1e18)),
            ("-1k", Some(-1000.0)),
            ("+.5", Some(0.5)),
            ("5.", Some(5.0)),
            ("-", Some(0.0)),
            ("Ki", Some(0.0)),
            ("", None),
            ("1Gb", None),
            ("abc", None),
            ("e2e", None),
            ("1e", None),
            ("2025-03-01T09:30:00Z", None),
        ] {
            assert_eq!(quantity(text), amount, "{text}");
        }
    }
}
